package plugin

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreEnqueue holds a pod until workmap has grouped it and its group has at least minMember
// pods. A pod held for long says why in an event (see heldPods).
func (g *Gang) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	if g.pods != nil && g.pods.running(pod.UID) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for the preemption for this pod to be finished")
	}
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
