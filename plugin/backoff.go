package plugin

import (
	"fmt"
	"time"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// rejectGroup rejects every waiting member of a group and backs the group off for cause.
func (g *Gang) rejectGroup(key string, cause grouper.Cause) {
	for _, uid := range g.members.Reserved(key) {
		if wp := g.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, cause.Message)
		}
	}
	g.backOff(key, cause)
}

// backOff holds a group back for the configured backoff (doubling with its failures); its pods
// are tried again when room may have appeared for it, or when the wait is over. cause stays the
// group's reason while it waits.
func (g *Gang) backOff(key string, cause grouper.Cause) {
	g.members.BackOff(key, cause, g.clock.Now(), g.args.Backoff(), func(d time.Duration, f func()) { g.clock.AfterFunc(d, f) })
}

// fail backs a group off for the reason s gives (one that can never fit when s is
// UnschedulableAndUnresolvable) and returns s.
func (g *Gang) fail(key string, s *fwk.Status) *fwk.Status {
	g.backOff(key, grouper.Cause{Message: s.Message(), Never: s.Code() == fwk.UnschedulableAndUnresolvable})
	return s
}

// waitStatus is the status of a pod whose group is backed off: the cause of the failure that
// backed it off, unchanged until an attempt fails for another reason.
func waitStatus(group grouper.GroupView) *fwk.Status {
	cause := group.Cause
	if cause.Message == "" {
		cause.Message = fmt.Sprintf("PodGroup %s did not fit at its last attempt", group.Key)
	}
	return causeStatus(cause)
}

// causeStatus is the status that reports cause: unresolvable (preemption cannot help) when the
// group can never fit.
func causeStatus(cause grouper.Cause) *fwk.Status {
	if cause.Never {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, cause.Message)
	}
	return fwk.NewStatus(fwk.Unschedulable, cause.Message)
}
