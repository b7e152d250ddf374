package plugin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/workmap/workmap/grouper"
)

// rejectGroup rejects every waiting member of a group and backs the group off.
func (g *Gang) rejectGroup(key, why string) {
	for _, uid := range g.members.Reserved(key) {
		if wp := g.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, fmt.Sprintf("PodGroup %s rejected: %s", key, why))
		}
	}
	g.backOff(key)
}

// maxBackoffDoublings caps the backoff of a group that keeps failing at 2^4 = 16 times the
// configured one.
const maxBackoffDoublings = 4

// backOff holds a group back, then lets its pods be tried again. The wait doubles with each
// failure since the group was last admitted and is jittered by up to half, so gangs that keep
// blocking each other (each grabbing part of the room the other needs) fall out of step. The
// state lives with the group in the membership view and goes with it.
func (g *Gang) backOff(key string) {
	base := g.args.Backoff()
	if base <= 0 {
		return
	}
	now := g.clock.Now()
	started := false
	var d = base
	g.members.UpdateGroup(key, func(group *grouper.Group) {
		if now.Before(group.BackoffUntil) {
			return // a backoff is running; failures during it do not extend it
		}
		d = wait.Jitter(base<<min(group.Failures, maxBackoffDoublings), 0.5)
		group.Failures++
		group.BackoffUntil = now.Add(d)
		started = true
	})
	if started {
		g.clock.AfterFunc(d, func() { g.activateGroup(key) })
	}
}

// admitted resets a group's failures: its next failure backs it off from the base again.
func (g *Gang) admitted(key string) {
	g.members.UpdateGroup(key, func(group *grouper.Group) { group.Failures = 0 })
}
