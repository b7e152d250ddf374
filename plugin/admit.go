package plugin

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreFilter fails fast when the pod's group cannot be complete: too few pods, backed off after
// a failure, or more resources than the cluster has free.
func (g *Gang) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !group.Known {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s does not exist", group.Key))
	}
	if until := group.BackoffUntil; g.clock.Now().Before(until) {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s is backed off until %s after a failed attempt", group.Key, until.Format(time.RFC3339)))
	}
	if group.Members < int(group.Spec.MinMember) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods", group.Key, group.Members, group.Spec.MinMember))
	}
	if group.Assigned > 0 {
		return nil, nil // the attempt is under way: its room was checked by its first pod
	}
	need := group.Spec.MinResources
	if len(need) == 0 {
		need = g.members.Demand(group.Key)
	}
	if len(need) == 0 {
		return nil, nil
	}
	if short := shortfall(need, g.handle.SnapshotSharedLister()); short != "" {
		g.backOff(group.Key)
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s needs more than the cluster has free: %s", group.Key, short))
	}
	return nil, nil
}

// PreFilterExtensions is not used.
func (g *Gang) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a pod fits no node. If its gang is not yet admitted, every waiting
// member is rejected (releasing their nodes) and the group is backed off.
func (g *Gang) PostFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if g.clock.Now().Before(group.BackoffUntil) {
		return nil, fwk.NewStatus(fwk.Unschedulable) // already rejected; the backoff stands
	}
	if group.Known && group.Assigned >= int(group.Spec.MinMember) {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s is admitted; this extra member waits for room", group.Key))
	}
	g.rejectGroup(group.Key, fmt.Sprintf("member %s fits no node", pod.Name))
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s rejected: member %s fits no node", group.Key, pod.Name))
}

// Reserve counts the pod as holding a node for its group.
func (g *Gang) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	g.members.Reserve(pod.UID)
	return nil
}

// Unreserve runs when a reserved pod fails (rejected at Permit, timed out, or its binding
// failed): the pod's node is released, and if its gang was not complete every other waiting
// member is rejected too and the group backed off.
func (g *Gang) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	g.members.Unreserve(pod.UID)
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return
	}
	if !group.Known || group.Assigned < int(group.Spec.MinMember) {
		g.rejectGroup(group.Key, fmt.Sprintf("member %s was rejected", pod.Name))
	}
}

// Permit lets the pod bind once minMember pods of its group hold a node, and then lets every
// waiting member bind with it; until then the pod waits, at most the group's timeout.
func (g *Gang) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	group, ok := g.members.GroupOf(pod.UID)
	if !ok {
		return nil, 0
	}
	if !group.Known {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s does not exist", group.Key)), 0
	}
	if group.Assigned < int(group.Spec.MinMember) {
		timeout := g.args.PermitTimeout()
		if s := group.Spec.ScheduleTimeoutSeconds; s != nil && *s > 0 {
			timeout = time.Duration(*s) * time.Second
		}
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("PodGroup %s: %d of minMember %d pods hold a node", group.Key, group.Assigned, group.Spec.MinMember)), timeout
	}
	for _, uid := range g.members.Reserved(group.Key) {
		if wp := g.handle.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	g.members.Admitted(group.Key)
	return nil, 0
}
