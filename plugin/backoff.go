package plugin

import (
	"fmt"
	"time"
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

// backOff holds a group back for the configured backoff (doubling with its failures); its pods
// are tried again when the wait is over.
func (g *Gang) backOff(key string) {
	g.members.BackOff(key, g.clock.Now(), g.args.Backoff(), func(d time.Duration, f func()) { g.clock.AfterFunc(d, f) })
}
