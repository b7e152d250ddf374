package grouper

import (
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// GroupKey is the key of the PodGroup name in namespace, as the caches use it.
func GroupKey(namespace, name string) string { return namespace + "/" + name }

// GroupStatus computes a PodGroup's status from its pod counts, the way scheduler-plugins
// reports it: scheduled (bound), running, succeeded and failed pods, and a phase. The fields
// it does not compute are kept from previous. A final phase (Finished, Failed) is kept, counts
// and all, while the group has no pod that has not terminated: its workload's controller may
// delete the pods of a finished workload, which does not make the gang pending again. New pods
// (the workload restarted) start the count afresh.
func GroupStatus(c Counts, previous v1alpha1.PodGroupStatus) v1alpha1.PodGroupStatus {
	if active := c.Waiting + c.Scheduled - c.Succeeded - c.Failed; active == 0 && finalPhase(previous.Phase) {
		return previous
	}
	s := v1alpha1.PodGroupStatus{
		OccupiedBy: previous.OccupiedBy, ScheduleStartTime: previous.ScheduleStartTime,
		Scheduled: c.Scheduled, Running: c.Running, Succeeded: c.Succeeded, Failed: c.Failed,
	}
	switch minMember := c.MinMember; {
	case minMember > 0 && s.Succeeded >= minMember:
		s.Phase = v1alpha1.PodGroupFinished
	case s.Failed > 0 && s.Running+s.Succeeded < minMember && c.Waiting == 0:
		s.Phase = v1alpha1.PodGroupFailed
	case s.Running+s.Succeeded >= minMember && s.Running > 0:
		s.Phase = v1alpha1.PodGroupRunning
	case s.Scheduled >= minMember && s.Scheduled > 0:
		s.Phase = v1alpha1.PodGroupScheduled
	case s.Scheduled > 0:
		s.Phase = v1alpha1.PodGroupScheduling
	default:
		s.Phase = v1alpha1.PodGroupPending
	}
	return s
}

// finalPhase says whether a PodGroup's phase is one its gang ends in.
func finalPhase(p v1alpha1.PodGroupPhase) bool {
	return p == v1alpha1.PodGroupFinished || p == v1alpha1.PodGroupFailed
}
