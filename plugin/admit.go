package plugin

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreFilter fails fast when the pod's group cannot be complete: too few pods, backed off after
// a failure, or more resources than the cluster has free.
func (g *Gang) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	key, _ := g.groupOf(pod)
	if key == "" {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	pg := g.podGroup(key)
	if pg == nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s does not exist", key))
	}
	if until, ok := g.backoffUntil(key); ok {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s is backed off until %s after a failed attempt", key, until.Format(time.RFC3339)))
	}
	members := g.members(key)
	if n := len(members); n < int(pg.Spec.MinMember) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods", key, n, pg.Spec.MinMember))
	}
	if g.assignedOf(key, members) > 0 {
		return nil, nil // the attempt is under way: its room was checked by its first pod
	}
	need := pg.Spec.MinResources
	if len(need) == 0 {
		need = demand(members, int(pg.Spec.MinMember))
	}
	if len(need) == 0 {
		return nil, nil
	}
	if short := shortfall(need, g.handle.SnapshotSharedLister()); short != "" {
		g.backOff(key)
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s needs more than the cluster has free: %s", key, short))
	}
	return nil, nil
}

// PreFilterExtensions is not used.
func (g *Gang) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a pod fits no node. If its gang is not yet admitted, every waiting
// member is rejected (releasing their nodes) and the group is backed off.
func (g *Gang) PostFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	key, _ := g.groupOf(pod)
	if key == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if _, backedOff := g.backoffUntil(key); backedOff {
		return nil, fwk.NewStatus(fwk.Unschedulable) // already rejected; the backoff stands
	}
	if pg := g.podGroup(key); pg != nil && g.assigned(key) >= int(pg.Spec.MinMember) {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s is admitted; this extra member waits for room", key))
	}
	g.rejectGroup(key, fmt.Sprintf("member %s fits no node", pod.Name))
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s rejected: member %s fits no node", key, pod.Name))
}

// Reserve counts the pod as holding a node for its group.
func (g *Gang) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	if key, _ := g.groupOf(pod); key != "" {
		g.mu.Lock()
		if g.reserved[key] == nil {
			g.reserved[key] = sets.New[types.UID]()
		}
		g.reserved[key].Insert(pod.UID)
		g.mu.Unlock()
	}
	return nil
}

// Unreserve runs when a reserved pod fails (rejected at Permit, timed out, or its binding
// failed): the pod's node is released, and if its gang was not complete every other waiting
// member is rejected too and the group backed off.
func (g *Gang) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	key, _ := g.groupOf(pod)
	if key == "" {
		return
	}
	g.mu.Lock()
	g.reserved[key].Delete(pod.UID)
	if g.reserved[key].Len() == 0 {
		delete(g.reserved, key)
	}
	g.mu.Unlock()
	if pg := g.podGroup(key); pg == nil || g.assigned(key) < int(pg.Spec.MinMember) {
		g.rejectGroup(key, fmt.Sprintf("member %s was rejected", pod.Name))
	}
}

// Permit lets the pod bind once minMember pods of its group hold a node, and then lets every
// waiting member bind with it; until then the pod waits, at most the group's timeout.
func (g *Gang) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	key, _ := g.groupOf(pod)
	if key == "" {
		return nil, 0
	}
	pg := g.podGroup(key)
	if pg == nil {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s does not exist", key)), 0
	}
	if have := g.assigned(key); have < int(pg.Spec.MinMember) {
		timeout := g.args.PermitTimeout()
		if s := pg.Spec.ScheduleTimeoutSeconds; s != nil && *s > 0 {
			timeout = time.Duration(*s) * time.Second
		}
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("PodGroup %s: %d of minMember %d pods hold a node", key, have, pg.Spec.MinMember)), timeout
	}
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if k, _ := g.groupOf(wp.GetPod()); k == key {
			wp.Allow(Name)
		}
	})
	g.mu.Lock()
	delete(g.failures, key)
	g.mu.Unlock()
	return nil, 0
}
