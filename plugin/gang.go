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
	"k8s.io/client-go/tools/cache"
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
	// joined are the pods the grouper put in each group (by key), members even before their
	// pod-group label is written: scheduling does not wait for that write.
	joined map[string]map[types.UID]*corev1.Pod
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
		joined:    map[string]map[types.UID]*corev1.Pod{},
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

// groupOf returns the key ("<namespace>/<name>") of the pod's PodGroup, "" for none, and
// whether the pod's grouping is settled.
func (g *Gang) groupOf(pod *corev1.Pod) (string, bool) {
	label := pod.Labels[v1alpha1.PodGroupLabel]
	if label != "" && pod.Annotations[grouper.GroupedAnnotation] != "true" {
		return grouper.GroupKey(pod.Namespace, label), true // an operator's PodGroup: workmap defers to it
	}
	g.mu.Lock()
	decided, ok := g.decisions[pod.UID]
	g.mu.Unlock()
	switch {
	case !ok:
		return "", false
	case decided == "":
		return "", true
	}
	return grouper.GroupKey(pod.Namespace, decided), true // its label may still be on its way
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

// members returns the group's pods that are not terminated or being deleted: those labelled
// with it (the scheduler's own, current copies) and those the grouper put in it whose label is
// not written yet.
func (g *Gang) members(key string) []*corev1.Pod {
	items, _ := g.pods.ByIndex(grouper.PodGroupIndex, key)
	g.mu.Lock()
	joined := g.joined[key]
	pods := make([]*corev1.Pod, 0, max(len(items), len(joined)))
	seen := make(map[types.UID]bool, len(joined))
	for _, item := range items {
		if p, ok := item.(*corev1.Pod); ok && p.DeletionTimestamp == nil {
			pods = append(pods, p)
			seen[p.UID] = true
		}
	}
	for uid, p := range joined {
		if !seen[uid] {
			pods = append(pods, p)
		}
	}
	g.mu.Unlock()
	return pods
}

// assigned counts the group's pods that hold a node: reserved by this scheduler (waiting at
// Permit or binding) or bound.
func (g *Gang) assigned(key string) int { return g.assignedOf(key, g.members(key)) }

// assignedOf is assigned for members already listed.
func (g *Gang) assignedOf(key string, members []*corev1.Pod) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	reserved := g.reserved[key]
	n := reserved.Len()
	for _, p := range members {
		if p.Spec.NodeName != "" && !reserved.Has(p.UID) {
			n++
		}
	}
	return n
}
