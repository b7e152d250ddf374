package plugin

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// Decided is told each pod's grouping once the grouper recorded it (group: zero for none;
// changed: a new or changed decision). The pod is tried again — with the rest of its group if
// the pod completes it.
func (g *Gang) Decided(pod *corev1.Pod, group grouper.GroupView, changed bool) {
	if !changed {
		return // unchanged: waking the pod again would retry it hot
	}
	if group.Key != "" && group.Known && group.Members == int(group.Spec.MinMember) {
		g.activateGroup(group.Key) // the pod completes its group: its held members go too
		return
	}
	g.handle.Activate(klog.Background(), map[string]*corev1.Pod{string(pod.UID): pod})
}

// PreEnqueue holds a pod until workmap has grouped it and its group has at least minMember
// pods. A pod held for long says why in an event (see heldPods).
func (g *Gang) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	if reason, message, held := g.held.why(pod); held {
		return g.held.hold(pod, reason, message)
	}
	return g.held.release(pod)
}

// Less orders by priority, then keeps each gang's pods together, ordered by when their group
// was first seen (pods without a gang by when they were queued).
func (g *Gang) Less(a, b fwk.QueuedPodInfo) bool {
	pa, pb := a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod()
	if prioA, prioB := corev1helpers.PodPriority(pa), corev1helpers.PodPriority(pb); prioA != prioB {
		return prioA > prioB
	}
	ka, ta := g.sortKey(pa, a.GetTimestamp())
	kb, tb := g.sortKey(pb, b.GetTimestamp())
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ka != kb {
		return ka < kb
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}

func (g *Gang) sortKey(pod *corev1.Pod, queued time.Time) (string, time.Time) {
	if key, since, ok := g.members.SortKey(pod.UID); ok {
		return key, since
	}
	return pod.Namespace + "/" + pod.Name, queued
}

// activateGroup moves the group's unscheduled pods back to the active queue.
func (g *Gang) activateGroup(key string) {
	pods := map[string]*corev1.Pod{}
	for _, p := range g.members.Pods(key, true) {
		pods[string(p.UID)] = p
	}
	if len(pods) > 0 {
		g.handle.Activate(klog.Background(), pods)
	}
}
