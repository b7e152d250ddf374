package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// PodGroupEventResource is the scheduler's name for PodGroup events (resource.version.group);
// the scheduler watches it with a dynamic informer.
const PodGroupEventResource fwk.EventResource = "podgroups.v1alpha1.scheduling.x-k8s.io"

// EventsToRegister says which cluster events may make a pod this plugin rejected schedulable.
// Held pods are also moved back directly (Activate) when their grouping is decided, their
// group completes, or a group's backoff ends.
func (g *Gang) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.UpdatePodLabel}, QueueingHintFn: g.sameGroupPod},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: assignedPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}},
		{Event: fwk.ClusterEvent{Resource: PodGroupEventResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: g.samePodGroup},
	}, nil
}

// sameGroupPod: a pod added to (or labelled into) the pod's group, or the pod itself labelled.
func (g *Gang) sameGroupPod(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	other, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if other.UID == pod.UID {
		return fwk.Queue, nil
	}
	if key := grouper.PodGroupKey(pod); key != "" && key == grouper.PodGroupKey(other) {
		return fwk.Queue, nil
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

// samePodGroup: the pod's own PodGroup appeared or changed.
func (g *Gang) samePodGroup(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	key := grouper.PodGroupKey(pod)
	if key == "" {
		return fwk.QueueSkip, nil
	}
	switch pg := newObj.(type) {
	case *unstructured.Unstructured:
		if grouper.GroupKey(pg.GetNamespace(), pg.GetName()) == key {
			return fwk.Queue, nil
		}
	default:
		return fwk.Queue, nil // unknown shape: do not strand the pod
	}
	return fwk.QueueSkip, nil
}
