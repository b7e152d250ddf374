package plugin

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Decided records the grouper's decision for a pod (its PodGroup's name, "" for none) and,
// when it is new or changed, lets the pod be tried again — with the rest of its group if the
// pod completes it.
func (g *Gang) Decided(pod *corev1.Pod, podGroup string) {
	key := ""
	if podGroup != "" {
		key = grouper.GroupKey(pod.Namespace, podGroup)
	}
	g.mu.Lock()
	previous, known := g.decisions[pod.UID]
	g.decisions[pod.UID] = podGroup
	if known && previous != podGroup && previous != "" {
		delete(g.joined[grouper.GroupKey(pod.Namespace, previous)], pod.UID)
	}
	if key != "" {
		if g.joined[key] == nil {
			g.joined[key] = map[types.UID]*corev1.Pod{}
		}
		g.joined[key][pod.UID] = pod
	}
	g.mu.Unlock()
	if known && previous == podGroup {
		return // unchanged: waking the pod again would retry it hot
	}
	if pg := g.podGroup(key); pg != nil && len(g.members(key)) == int(pg.Spec.MinMember) {
		g.activateGroup(key) // the pod completes its group: its held members go too
		return
	}
	g.handle.Activate(klog.Background(), map[string]*corev1.Pod{string(pod.UID): pod})
}

// PreEnqueue holds a pod until workmap has grouped it and its group has at least minMember
// pods.
func (g *Gang) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	key, decided := g.groupOf(pod)
	if !decided {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for workmap to group the pod")
	}
	if key == "" {
		return nil
	}
	pg := g.podGroup(key)
	if pg == nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s does not exist yet", key))
	}
	if n := len(g.members(key)); n < int(pg.Spec.MinMember) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods", key, n, pg.Spec.MinMember))
	}
	return nil
}

// Less orders by priority, then keeps each gang's pods together, ordered by when their group
// was created (ungrouped pods by when they were queued).
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
	if label := pod.Labels[v1alpha1.PodGroupLabel]; label != "" {
		key := grouper.GroupKey(pod.Namespace, label)
		if pg := g.podGroup(key); pg != nil {
			return key, pg.CreationTimestamp.Time
		}
	}
	return pod.Namespace + "/" + pod.Name, queued
}

// activateGroup moves the group's unscheduled pods back to the active queue.
func (g *Gang) activateGroup(key string) {
	pods := map[string]*corev1.Pod{}
	for _, p := range g.members(key) {
		if p.Spec.NodeName == "" {
			pods[string(p.UID)] = p
		}
	}
	if len(pods) > 0 {
		g.handle.Activate(klog.Background(), pods)
	}
}

// podChanged wakes a group's held pods when a pod joins it and completes it.
func (g *Gang) podChanged(oldObj, newObj any) {
	pod, ok := newObj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != "" {
		return
	}
	key := grouper.PodGroupKey(pod)
	if key == "" {
		return
	}
	if old, ok := oldObj.(*corev1.Pod); ok && grouper.PodGroupKey(old) == key {
		return // not newly in the group
	}
	pg := g.podGroup(key)
	if pg == nil {
		return
	}
	switch n := len(g.members(key)); {
	case n == int(pg.Spec.MinMember):
		g.activateGroup(key)
	case n > int(pg.Spec.MinMember):
		g.handle.Activate(klog.Background(), map[string]*corev1.Pod{string(pod.UID): pod})
	}
}

// podDeleted forgets a pod that is gone (deleted, or terminated).
func (g *Gang) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	g.mu.Lock()
	if decided := g.decisions[pod.UID]; decided != "" {
		key := grouper.GroupKey(pod.Namespace, decided)
		delete(g.joined[key], pod.UID)
		if len(g.joined[key]) == 0 {
			delete(g.joined, key)
		}
	}
	delete(g.decisions, pod.UID)
	if key := grouper.PodGroupKey(pod); key != "" && g.reserved[key] != nil {
		g.reserved[key].Delete(pod.UID)
		if g.reserved[key].Len() == 0 {
			delete(g.reserved, key)
		}
	}
	g.mu.Unlock()
}

// podGroupChanged wakes the group's pods when its PodGroup appears or changes.
func (g *Gang) podGroupChanged(obj any) {
	if pg, ok := obj.(*v1alpha1.PodGroup); ok {
		g.activateGroup(grouper.GroupKey(pg.Namespace, pg.Name))
	}
}
