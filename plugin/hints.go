package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister says which cluster events may make a pod this plugin rejected schedulable.
// Pods held because of their gang are moved back directly (Activate) when the grouper records
// a decision, their group completes or its PodGroup appears, and when a group's backoff ends;
// so the plugin registers no PodGroup events, and the scheduler keeps no PodGroup cache of its
// own beside the grouper's.
func (g *Gang) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: g.sameGroupPod},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: assignedPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}},
	}, nil
}

// sameGroupPod: a pod added to the pod's group.
func (g *Gang) sameGroupPod(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	other, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if other.UID == pod.UID {
		return fwk.Queue, nil
	}
	if key, _ := g.members.Decided(pod.UID); key != "" {
		if otherKey, _ := g.members.Decided(other.UID); otherKey == key {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

// assignedPodDeleted: a bound pod went away, so its node has room.
func assignedPodDeleted(_ klog.Logger, _ *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if gone, ok := oldObj.(*corev1.Pod); ok && gone.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
