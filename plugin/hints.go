package plugin

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister says which cluster events may make a pod this plugin rejected schedulable.
// Pods held because of their gang are moved back directly (Activate) when the grouper records
// a decision, their group completes or its PodGroup appears, and when a group's backoff ends;
// so the plugin registers no PodGroup events, and the scheduler keeps no PodGroup cache of its
// own beside the grouper's.
//
// Room is what a gang that did not fit waits for: a pod that held a node goes (deleted, or
// terminated: the scheduler's pod informer drops pods that finished), a node is added, or a
// node gets more allocatable, other labels (a topology domain) or loses a taint. Such an event
// retries a backed-off gang at once, as a whole, past its backoff (see roomAppeared); other
// events, and other pods' deletions, leave it waiting.
func (g *Gang) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: g.sameGroupPod},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: g.assignedPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: g.nodeChanged},
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

// assignedPodDeleted: a pod went away (deleted, or finished); if it held a node, or was
// nominated to one, its room is free.
func (g *Gang) assignedPodDeleted(logger klog.Logger, pod *corev1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	gone, ok := oldObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if gone.Spec.NodeName == "" && gone.Status.NominatedNodeName == "" {
		return fwk.QueueSkip, nil
	}
	return g.roomAppeared(logger, pod, "a pod freed its node", gone, true), nil
}

// nodeChanged: a node was added, or its allocatable, labels or taints changed. An added node
// counts if one pod like this one fits its allocatable; a changed one if it has more of what
// the pod requests, other labels, a taint fewer or became schedulable.
func (g *Gang) nodeChanged(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, nil
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	old, _ := oldObj.(*corev1.Node)
	if old == nil {
		if !fitsAllocatable(requests, node.Status.Allocatable) {
			return fwk.QueueSkip, nil
		}
		return g.roomAppeared(logger, pod, "a node was added", node, false), nil
	}
	if moreAllocatable(requests, old.Status.Allocatable, node.Status.Allocatable) ||
		!maps.Equal(old.Labels, node.Labels) || lostTaint(old.Spec.Taints, node.Spec.Taints) ||
		old.Spec.Unschedulable && !node.Spec.Unschedulable {
		return g.roomAppeared(logger, pod, "a node changed", node, false), nil
	}
	return fwk.QueueSkip, nil
}

// roomAppeared is the hint for an event that may have made room for the pod. A pod whose gang
// is backed off after a failed attempt stays where it is (QueueSkip) and the retrier retries
// the whole gang right after: it ends the backoff and moves every pod of the gang to the
// active queue, past the scheduler's per-pod backoff too. A pod whose gang waits for its
// PodGroup or more pods is not helped by room (the grouper wakes it), nor is one whose gang can
// never fit the nodes there are by room freed on them (freed). Any other pod is queued.
func (g *Gang) roomAppeared(logger klog.Logger, pod *corev1.Pod, why string, what klog.KMetadata, freed bool) fwk.QueueingHint {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return fwk.Queue
	}
	if !group.Known || (group.Members < int(group.Spec.MinMember) && !leaderFirstBatch(group)) {
		return fwk.QueueSkip
	}
	if g.clock.Now().Before(group.BackoffUntil) {
		if freed && group.Cause.Never {
			return fwk.QueueSkip
		}
		logger.V(5).Info("Room may have appeared for a backed-off gang: retrying it", "pod", klog.KObj(pod), "podGroup", group.Key, "why", why, "object", klog.KObj(what))
		g.retrier.request(group.Key)
		return fwk.QueueSkip
	}
	return fwk.Queue
}

// fitsAllocatable says whether requests fit an empty node of allocatable.
func fitsAllocatable(requests, allocatable corev1.ResourceList) bool {
	for name, q := range requests {
		if have, ok := allocatable[name]; (!ok || have.Cmp(q) < 0) && !q.IsZero() {
			return false
		}
	}
	return true
}

// moreAllocatable says whether a node has more now of something the pod requests.
func moreAllocatable(requests, before, after corev1.ResourceList) bool {
	for name := range requests {
		if a, ok := after[name]; ok && a.Cmp(before[name]) > 0 {
			return true
		}
	}
	return false
}

// lostTaint says whether a taint of before is gone from after.
func lostTaint(before, after []corev1.Taint) bool {
	for _, t := range before {
		if !slices.ContainsFunc(after, func(o corev1.Taint) bool { return o.MatchTaint(&t) && o.Value == t.Value }) {
			return true
		}
	}
	return false
}
