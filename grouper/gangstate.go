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

// BackOff holds a group back after a failed attempt and wakes its pods when the wait is over;
// the domain the attempt chose is forgotten unless a member holds a node in it.
// The wait is base doubled with each failure since the group was last admitted, jittered by up
// to half, so gangs that keep blocking each other (each grabbing part of the room the other
// needs) fall out of step. Failures while a backoff runs do not extend it. after runs f after
// a duration (the plugin's clock). It returns the wait, and false when a backoff was running
// already, base is 0, or the group is unknown.
func (m *Membership) BackOff(key string, now time.Time, base time.Duration, after func(time.Duration, func())) (time.Duration, bool) {
	if base <= 0 {
		return 0, false
	}
	m.mu.Lock()
	g := m.groups[key]
	if g == nil || now.Before(g.backoffUntil) {
		m.mu.Unlock()
		return 0, false
	}
	d := wait.Jitter(base<<min(g.failures, maxBackoffDoublings), 0.5)
	g.failures++
	g.backoffUntil = now.Add(d)
	g.forgetDomainIfFree() // a failed attempt's plan goes with it, unless a member holds a node
	m.mu.Unlock()
	after(d, func() { m.WakeGroup(key) })
	return d, true
}

// Admitted records that a group's attempt succeeded: its next failure backs it off from the
// base again.
func (m *Membership) Admitted(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[key]; g != nil {
		g.failures = 0
	}
}
