package grouper

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// Queue is the scheduling queue a gang's pods are woken in: kube-scheduler's framework handle
// in workmap-scheduler.
type Queue interface {
	Activate(logger klog.Logger, pods map[string]*corev1.Pod)
}

// Wake tries a pod again once its grouping is recorded (group: zero for none; changed: a new
// or changed decision), with the rest of its group if the pod completes it. An unchanged
// decision wakes nothing: waking the pod again would retry it hot.
func (m *Membership) Wake(pod *corev1.Pod, group GroupView, changed bool) {
	if !changed || m.queue == nil {
		return
	}
	if group.Key != "" && group.Known && group.Members == int(group.Spec.MinMember) {
		m.WakeGroup(group.Key) // the pod completes its group: its held members go too
		return
	}
	m.queue.Activate(klog.Background(), map[string]*corev1.Pod{string(pod.UID): pod})
}

// WakeGroup moves the group's unbound pods back to the active queue.
func (m *Membership) WakeGroup(key string) {
	if m.queue == nil {
		return
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range m.Pods(key, true) {
		pods[string(p.UID)] = p
	}
	if len(pods) > 0 {
		m.queue.Activate(klog.Background(), pods)
	}
}

// maxBackoffDoublings caps the backoff of a group that keeps failing at 2^4 = 16 times the
// base.
const maxBackoffDoublings = 4

// Cause is why a gang's attempt failed, as its pods, events and `workmap tree` say it. It
// stays the gang's reason while the gang is backed off and until an attempt fails for another
// reason: backing off is a state of the gang, not a reason of its own.
type Cause struct {
	// Message says what is short, or what never fits.
	Message string
	// Never: the gang can never fit the cluster as it is (it needs more than all nodes
	// together have, or a resource no node has); it is tried again only when nodes change.
	Never bool
}

// BackOff holds a group back after a failed attempt and wakes its pods when the wait is over,
// unless Retry ended it earlier (room appeared); the domain the attempt chose is forgotten
// unless a member holds a node in it.
// The wait is base doubled with each failure since the group was last admitted, jittered by up
// to half, so gangs that keep blocking each other (each grabbing part of the room the other
// needs) fall out of step. Failures while a backoff runs do not extend it. after runs f after
// a duration (the plugin's clock). cause becomes the group's reason (see Cause). It returns
// the wait, and false when a backoff was running already, base is 0, or the group is unknown.
func (m *Membership) BackOff(key string, cause Cause, now time.Time, base time.Duration, after func(time.Duration, func())) (time.Duration, bool) {
	m.mu.Lock()
	g := m.groups[key]
	if g == nil || now.Before(g.backoffUntil) {
		m.mu.Unlock()
		return 0, false // the cause of the failure that started the backoff stands
	}
	g.cause = cause
	if base <= 0 {
		m.mu.Unlock()
		return 0, false
	}
	d := wait.Jitter(base<<min(g.failures, maxBackoffDoublings), 0.5)
	g.failures++
	g.backoffUntil = now.Add(d)
	g.forgetDomainIfFree() // a failed attempt's plan goes with it, unless a member holds a node
	until := g.backoffUntil
	m.mu.Unlock()
	after(d, func() { m.wakeAfterBackoff(g, until) })
	return d, true
}

// Explain makes cause the group's reason without holding the group back, for a gang that
// waits for something the scheduler does not decide (a device claim that cannot be made). A
// backoff that runs keeps the cause that started it.
func (m *Membership) Explain(key string, cause Cause, now time.Time) {
	m.BackOff(key, cause, now, 0, nil)
}

// wakeAfterBackoff wakes a group's pods when its backoff is over, unless that backoff was
// ended early (Retry woke them then) or another one runs now: a stale wake-up would only try
// pods that are held back again.
func (m *Membership) wakeAfterBackoff(g *Group, until time.Time) {
	m.mu.RLock()
	current := m.groups[g.Key] == g && g.backoffUntil.Equal(until)
	m.mu.RUnlock()
	if current {
		m.WakeGroup(g.Key)
	}
}

// Retry tries a group again at once because something changed that may let it fit (room was
// freed, a node was added or changed): a backoff that runs ends now, and the group's pods
// leave the scheduler's unschedulable and backoff queues for the active one. Its failures are
// kept, so a group that still does not fit is held back longer the next time: the backoff
// spaces out retries only while nothing changes. It reports whether a backoff was ended.
func (m *Membership) Retry(key string, now time.Time) bool {
	m.mu.Lock()
	g := m.groups[key]
	ended := g != nil && now.Before(g.backoffUntil)
	if ended {
		g.backoffUntil = time.Time{}
	}
	m.mu.Unlock()
	if g != nil {
		m.WakeGroup(key)
	}
	return ended
}

// Admitted records that a group's attempt succeeded: its next failure backs it off from the
// base again.
func (m *Membership) Admitted(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[key]; g != nil {
		g.failures, g.cause, g.preemptionTried = 0, Cause{}, false
	}
}

// TryPreemption reports whether the group has not looked for lower-priority victims since its
// failures reached failures, and records that it does now: a gang looks once per backoff. It
// is false for an unknown group.
func (m *Membership) TryPreemption(key string, failures int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[key]
	if g == nil || (g.preemptionTried && g.preemptionTriedAt == failures) {
		return false
	}
	g.preemptionTried, g.preemptionTriedAt = true, failures
	return true
}
