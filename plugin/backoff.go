package plugin

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	fwk "k8s.io/kube-scheduler/framework"
)

// rejectGroup rejects every waiting member of a group and backs the group off.
func (g *Gang) rejectGroup(key, why string) {
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if k, _ := g.groupOf(wp.GetPod()); k == key {
			wp.Reject(Name, fmt.Sprintf("PodGroup %s rejected: %s", key, why))
		}
	})
	g.backOff(key)
}

// maxBackoffDoublings caps the backoff of a group that keeps failing at 2^4 = 16 times the
// configured one.
const maxBackoffDoublings = 4

// backOff holds a group back, then lets its pods be tried again. The wait doubles with each
// failure since the group was last admitted and is jittered by up to half, so gangs that keep
// blocking each other (each grabbing part of the room the other needs) fall out of step.
func (g *Gang) backOff(key string) {
	base := g.args.Backoff()
	if base <= 0 {
		return
	}
	g.mu.Lock()
	if _, pending := g.backedOff[key]; pending {
		g.mu.Unlock()
		return // a backoff is running; failures during it do not extend it
	}
	d := wait.Jitter(base<<min(g.failures[key], maxBackoffDoublings), 0.5)
	g.failures[key]++
	g.backedOff[key] = g.clock.Now().Add(d)
	g.mu.Unlock()
	g.clock.AfterFunc(d, func() {
		g.mu.Lock()
		delete(g.backedOff, key)
		g.mu.Unlock()
		g.activateGroup(key)
	})
}

// backoffUntil says whether a group is backed off, and until when.
func (g *Gang) backoffUntil(key string) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.backedOff[key]
	return until, ok && g.clock.Now().Before(until)
}
