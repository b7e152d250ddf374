package grouper

import (
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// GroupKey is the key of the PodGroup name in namespace, as the caches use it.
func GroupKey(namespace, name string) string { return namespace + "/" + name }

// GroupStatus computes a PodGroup's status from its pod counts, the way scheduler-plugins
// reports it: scheduled (bound), running, succeeded and failed pods, and a phase. The fields
// it does not compute are kept from previous.
func GroupStatus(c Counts, previous v1alpha1.PodGroupStatus) v1alpha1.PodGroupStatus {
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
