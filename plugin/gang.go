package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "WorkmapGang"

// Gang is the WorkmapGang plugin.
type Gang struct {
	handle fwk.Handle
	args   *GangArgs
	clock  clock.WithDelayedExecution
	// pods is the scheduler's pod cache (pods not yet terminated), indexed by PodGroup.
	pods cache.Indexer
	// podGroups holds *v1alpha1.PodGroup.
	podGroups cache.Indexer

	mu sync.Mutex
	// decisions are the grouper's decisions by pod: the PodGroup name, "" for none.
	decisions map[types.UID]string
	// reserved are the pods of each group that hold a node (reserved, waiting or binding).
	reserved map[string]sets.Set[types.UID]
	// backedOff says until when each failed group is held back.
	backedOff map[string]time.Time
	// failures counts each group's failed attempts since it was last admitted; the backoff
	// doubles with each, so a gang that keeps failing leaves room for the others.
	failures map[string]int
}

var (
	_ fwk.PreEnqueuePlugin  = &Gang{}
	_ fwk.QueueSortPlugin   = &Gang{}
	_ fwk.PreFilterPlugin   = &Gang{}
	_ fwk.PostFilterPlugin  = &Gang{}
	_ fwk.ReservePlugin     = &Gang{}
	_ fwk.PermitPlugin      = &Gang{}
	_ fwk.EnqueueExtensions = &Gang{}
)

// Factory returns the plugin's factory. The in-process grouper's metrics are registered with
// metrics (nil: not registered), labelled with the scheduler profile.
func Factory(metrics prometheus.Registerer) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := DecodeArgs(obj)
		if err != nil {
			return nil, err
		}
		builtin, err := catalog.Definitions()
		if err != nil {
			return nil, fmt.Errorf("%s: the embedded catalog: %w", Name, err)
		}
		if metrics != nil {
			metrics = prometheus.WrapRegistererWith(prometheus.Labels{"profile": h.ProfileName()}, metrics)
		}
		g, err := grouper.New(ctx, h.KubeConfig(), grouper.Options{
			SchedulerName: h.ProfileName(), Builtin: builtin, Metrics: metrics, Workers: int(*args.GrouperWorkers),
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		pl, err := New(h, args, g.Controller.PodGroups(), clock.RealClock{})
		if err != nil {
			return nil, err
		}
		g.Controller.NotifyDecisions(pl.Decided)
		go func() {
			if err := g.Run(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "workmap grouper stopped")
			}
		}()
		return pl, nil
	}
}

// New builds the plugin on a handle and a PodGroup informer (objects *v1alpha1.PodGroup).
// Grouping decisions arrive through Decided.
func New(h fwk.Handle, args *GangArgs, podGroups cache.SharedIndexInformer, clk clock.WithDelayedExecution) (*Gang, error) {
	podInformer := h.SharedInformerFactory().Core().V1().Pods().Informer()
	if _, ok := podInformer.GetIndexer().GetIndexers()[grouper.PodGroupIndex]; !ok {
		if err := podInformer.AddIndexers(cache.Indexers{grouper.PodGroupIndex: grouper.IndexByPodGroup}); err != nil {
			return nil, fmt.Errorf("%s: indexing pods by PodGroup: %w", Name, err)
		}
	}
	pl := &Gang{
		handle: h, args: args, clock: clk,
		pods:      podInformer.GetIndexer(),
		podGroups: podGroups.GetIndexer(),
		decisions: map[types.UID]string{},
		reserved:  map[string]sets.Set[types.UID]{},
		backedOff: map[string]time.Time{},
		failures:  map[string]int{},
	}
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pl.podChanged(nil, obj) },
		UpdateFunc: pl.podChanged,
		DeleteFunc: pl.podDeleted,
	}); err != nil {
		return nil, err
	}
	if _, err := podGroups.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    pl.podGroupChanged,
		UpdateFunc: func(_, obj any) { pl.podGroupChanged(obj) },
	}); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name returns the plugin's name.
func (g *Gang) Name() string { return Name }

// Decided records the grouper's decision for a pod and, when it is new or changed, lets the
// pod be tried again.
func (g *Gang) Decided(pod *corev1.Pod, podGroup string) {
	g.mu.Lock()
	previous, known := g.decisions[pod.UID]
	g.decisions[pod.UID] = podGroup
	g.mu.Unlock()
	if known && previous == podGroup {
		return // unchanged: waking the pod again would retry it hot
	}
	g.handle.Activate(klog.Background(), map[string]*corev1.Pod{string(pod.UID): pod})
}

// groupOf returns the key ("<namespace>/<name>") of the pod's PodGroup, "" for none, and
// whether the pod's grouping is settled.
func (g *Gang) groupOf(pod *corev1.Pod) (string, bool) {
	label := pod.Labels[v1alpha1.PodGroupLabel]
	if label != "" && pod.Annotations[grouper.GroupedAnnotation] != "true" {
		return pod.Namespace + "/" + label, true // an operator's PodGroup: workmap defers to it
	}
	g.mu.Lock()
	decided, ok := g.decisions[pod.UID]
	g.mu.Unlock()
	switch {
	case !ok:
		return "", false
	case decided == "":
		return "", true
	case decided != label:
		return "", false // the label is on its way; its update brings the pod back
	}
	return pod.Namespace + "/" + decided, true
}

// podGroup returns the PodGroup of a key, nil when it does not exist.
func (g *Gang) podGroup(key string) *v1alpha1.PodGroup {
	obj, ok, err := g.podGroups.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	pg, _ := obj.(*v1alpha1.PodGroup)
	return pg
}

// members returns the group's pods that are not terminated or being deleted.
func (g *Gang) members(key string) []*corev1.Pod {
	items, err := g.pods.ByIndex(grouper.PodGroupIndex, key)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(items))
	for _, item := range items {
		if p, ok := item.(*corev1.Pod); ok && p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods
}

// assigned counts the group's pods that hold a node: reserved by this scheduler (waiting at
// Permit or binding) or bound.
func (g *Gang) assigned(key string) int {
	g.mu.Lock()
	reserved := g.reserved[key]
	n := reserved.Len()
	for _, p := range g.members(key) {
		if p.Spec.NodeName != "" && !reserved.Has(p.UID) {
			n++
		}
	}
	g.mu.Unlock()
	return n
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
		key := pod.Namespace + "/" + label
		if pg := g.podGroup(key); pg != nil {
			return key, pg.CreationTimestamp.Time
		}
	}
	return pod.Namespace + "/" + pod.Name, queued
}

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
	if n := len(g.members(key)); n < int(pg.Spec.MinMember) {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("PodGroup %s has %d of its minMember %d pods", key, n, pg.Spec.MinMember))
	}
	if g.assigned(key) == 0 {
		need := pg.Spec.MinResources
		if len(need) == 0 {
			need = demand(g.members(key), int(pg.Spec.MinMember))
		}
		if short := shortfall(need, g.handle.SnapshotSharedLister()); len(need) > 0 && short != "" {
			g.backOff(key)
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("PodGroup %s needs more than the cluster has free: %s", key, short))
		}
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

// rejectGroup rejects every waiting member of a group and backs the group off.
func (g *Gang) rejectGroup(key, why string) {
	g.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if k, _ := g.groupOf(wp.GetPod()); k == key {
			wp.Reject(Name, fmt.Sprintf("PodGroup %s rejected: %s", key, why))
		}
	})
	g.backOff(key)
}

// maxBackoffDoublings caps the backoff of a group that keeps failing at 2^4 = 16 times the
// configured one.
const maxBackoffDoublings = 4

// backOff holds a group back, then lets its pods be tried again. The wait doubles with each
// failure since the group was last admitted and is jittered by up to half, so gangs that keep
// blocking each other (each grabbing part of the room the other needs) fall out of step.
func (g *Gang) backOff(key string) {
	base := g.args.Backoff()
	if base <= 0 {
		return
	}
	g.mu.Lock()
	if _, pending := g.backedOff[key]; pending {
		g.mu.Unlock()
		return // a backoff is running; failures during it do not extend it
	}
	d := wait.Jitter(base<<min(g.failures[key], maxBackoffDoublings), 0.5)
	g.failures[key]++
	g.backedOff[key] = g.clock.Now().Add(d)
	g.mu.Unlock()
	g.clock.AfterFunc(d, func() {
		g.mu.Lock()
		delete(g.backedOff, key)
		g.mu.Unlock()
		g.activateGroup(key)
	})
}

// backoffUntil says whether a group is backed off, and until when.
func (g *Gang) backoffUntil(key string) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.backedOff[key]
	return until, ok && g.clock.Now().Before(until)
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
		g.activateGroup(pg.Namespace + "/" + pg.Name)
	}
}
