package grouper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Controller groups the pods of one scheduler. It watches them through the pod informer it is
// given (in workmap-scheduler, the scheduler's own: one pod cache), decides each pod's gang in
// memory with the hub and records it in the Membership; the Writer then makes the PodGroups and
// keeps their status. Nothing it does per pod waits for an API write.
type Controller struct {
	hub           *Hub
	membership    *Membership
	writer        *Writer
	recorder      events.EventRecorder
	metrics       *Metrics
	schedulerName string
	// staleDefinition says why a kind's definition in effect is not the cluster's latest
	// (nil: never).
	staleDefinition func(schema.GroupKind) (string, bool)

	pods      cache.SharedIndexInformer
	podGroups cache.SharedIndexInformer
	// queue holds pods to decide. Deciding reads caches (and, once per workload version, the
	// top owner object); it writes nothing.
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]

	clock func() time.Time
}

// NewController groups the pods of pods (an informer of *corev1.Pod) whose spec.schedulerName
// is schedulerName, with PodGroups read through podGroups (objects *v1alpha1.PodGroup) and
// written by writer.
func NewController(hub *Hub, m *Membership, writer *Writer, pods, podGroups cache.SharedIndexInformer, recorder events.EventRecorder, metrics *Metrics, schedulerName string) (*Controller, error) {
	c := &Controller{
		hub: hub, membership: m, writer: writer, recorder: recorder, metrics: metrics, schedulerName: schedulerName,
		pods: pods, podGroups: podGroups, clock: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "workmap-grouper"}),
	}
	if _, err := pods.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: c.ours,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.podAdded(obj.(*corev1.Pod)) },
			UpdateFunc: func(old, obj any) { c.podUpdated(old.(*corev1.Pod), obj.(*corev1.Pod)) },
			DeleteFunc: c.podDeleted,
		},
	}); err != nil {
		return nil, err
	}
	if err := podGroups.AddIndexers(cache.Indexers{workloadIndex: workloadOf}); err != nil {
		return nil, err
	}
	if _, err := podGroups.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podGroupChanged,
		UpdateFunc: func(_, obj any) { c.podGroupChanged(obj) },
		DeleteFunc: c.podGroupDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// NewPodGroupInformer watches every PodGroup; its cache and handlers hold *v1alpha1.PodGroup.
func NewPodGroupInformer(client PodGroupClient) cache.SharedIndexInformer {
	all := client.In(metav1.NamespaceAll)
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return all.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return all.Watch(ctx, opts)
		},
	}, all), &v1alpha1.PodGroup{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	utilruntime.Must(informer.SetTransform(func(obj any) (any, error) {
		if pg, ok := obj.(*v1alpha1.PodGroup); ok {
			pg.ManagedFields = nil // never read; often half of a PodGroup
			setTypeMeta(pg)        // for events about it
		}
		return obj, nil
	}))
	return informer
}

// Membership is the controller's view of the gangs.
func (c *Controller) Membership() *Membership { return c.membership }

// PodGroups is the controller's PodGroup informer (objects are *v1alpha1.PodGroup).
func (c *Controller) PodGroups() cache.SharedIndexInformer { return c.podGroups }

func (c *Controller) ours(obj any) bool {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	return ok && pod.Spec.SchedulerName == c.schedulerName
}

func podKey(pod *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

func (c *Controller) podAdded(pod *corev1.Pod) {
	if pod.Spec.NodeName != "" {
		c.joinBound(pod)
		return
	}
	c.queue.Add(podKey(pod))
}

// joinBound records a pod that is bound already (seen at start, or bound by another replica
// before this one took over): its label names its group.
func (c *Controller) joinBound(pod *corev1.Pod) {
	name := pod.Labels[v1alpha1.PodGroupLabel]
	var p Placement
	if name != "" {
		p = Placement{Key: GroupKey(pod.Namespace, name), Namespace: pod.Namespace, Name: name}
	}
	c.membership.Join(pod, p, c.clock())
	if p.Key != "" {
		c.writer.Status(p.Key)
	}
}

func (c *Controller) podUpdated(old, pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		if groupingChanged(old, pod) || !c.known(pod) {
			c.queue.Add(podKey(pod))
		} else {
			c.membership.Update(pod)
		}
		return
	}
	if !c.membership.Update(pod) {
		c.joinBound(pod)
		return
	}
	if old.Spec.NodeName != pod.Spec.NodeName || old.Status.Phase != pod.Status.Phase {
		if g, ok := c.membership.GroupOf(pod.UID); ok {
			c.writer.Status(g.Key)
			if old.Spec.NodeName == "" && g.Owned && pod.Labels[v1alpha1.PodGroupLabel] != g.Name {
				// The API server did not copy the binding's labels (an older version, or the
				// PodTopologyLabelsAdmission gate off): the label is written on its own.
				c.writer.Label(pod)
			}
		}
	}
}

func (c *Controller) known(pod *corev1.Pod) bool {
	_, decided := c.membership.Decided(pod.UID)
	return decided
}

func (c *Controller) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key := c.membership.Remove(pod); key != "" {
		c.writer.Status(key)
	}
}

// groupingChanged says whether a pod update can change its grouping: its labels, annotations
// or owners. Status updates (the scheduler's conditions, for one) cannot.
func groupingChanged(o, n *corev1.Pod) bool {
	return !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		!apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
}

func (c *Controller) podGroupChanged(obj any) {
	pg, ok := obj.(*v1alpha1.PodGroup)
	if !ok {
		return
	}
	key := GroupKey(pg.Namespace, pg.Name)
	c.membership.SetPodGroup(key, pg)
	if g, ok := c.membership.Group(key); ok && g.Members > 0 {
		c.writer.Status(key)
		c.membership.WakeGroup(key)
	}
}

// podGroupDeleted forgets a deleted PodGroup; one of workmap's whose pods still wait is made
// again.
func (c *Controller) podGroupDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pg, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	key := GroupKey(pg.GetNamespace(), pg.GetName())
	c.membership.SetPodGroup(key, nil)
	if pg.GetLabels()[ManagedByLabel] != ManagedByValue {
		return
	}
	for _, ref := range pg.GetOwnerReferences() {
		c.hub.Forget(ref.UID) // the workload may be gone (garbage collection); its pods re-read it
	}
	if g, ok := c.membership.Group(key); ok && g.Members > 0 {
		for _, p := range c.membership.Pods(key, true) {
			c.queue.Add(podKey(p))
		}
	}
}

// ResyncPending decides every pod still to be scheduled again: after the definitions changed,
// their gangs may have (a new minMember, a gang where there was none).
func (c *Controller) ResyncPending() {
	for _, obj := range c.pods.GetStore().List() {
		if pod, ok := obj.(*corev1.Pod); ok && c.ours(pod) && pod.Spec.NodeName == "" {
			c.queue.Add(podKey(pod))
		}
	}
}

// Run waits for the caches, then decides pods with workers goroutines and writes (from the
// moment the process leads) until ctx ends. The pod informer is started by its owner; the
// PodGroup informer here.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	go c.podGroups.RunWithContext(ctx)
	// Waited for on the informers' channels, not polled: a poll (every 100 ms in client-go's
	// WaitForCacheSync) would hold every gang back that long after a start or a takeover.
	if !cache.WaitFor(ctx, "", c.pods.HasSyncedChecker(), c.podGroups.HasSyncedChecker()) {
		return fmt.Errorf("waiting for the pod and PodGroup caches: %w", context.Cause(ctx))
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.work, time.Second)
	}
	c.writer.Run(ctx, 2)
	return nil
}

// HasSynced reports whether the pod and PodGroup caches are filled.
func (c *Controller) HasSynced() bool { return c.pods.HasSynced() && c.podGroups.HasSynced() }

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.decide(ctx, key); err != nil {
			klog.FromContext(ctx).V(2).Info("grouping failed, will retry", "pod", key, "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// maxKindRetries bounds the retries of a pod whose owner's kind the API server does not serve
// yet (a CRD just installed): then it is scheduled without a gang, and says why.
const maxKindRetries = 10

// decide groups one pod in memory and records it; the writes it implies are queued. Pods are
// queued while they wait for a node, and bound ones when their workload changed (see
// workloadChanged).
func (c *Controller) decide(ctx context.Context, key types.NamespacedName) error {
	obj, exists, err := c.pods.GetIndexer().GetByKey(key.String())
	if err != nil || !exists {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.DeletionTimestamp != nil || !c.ours(pod) {
		return nil
	}
	d, err := c.hub.Decide(ctx, pod)
	if pod.Spec.NodeName != "" {
		if err == nil {
			c.refreshBound(pod, placement(pod, d))
		}
		return nil
	}
	if err != nil {
		c.metrics.Errors.WithLabelValues("decide").Inc()
		c.metrics.GroupingErrors.WithLabelValues(ProblemReason(err)).Inc()
		c.event(pod, corev1.EventTypeWarning, "GroupingFailed", "workmap could not group the pod: %v", err)
		return err
	}
	if d.Problem != nil {
		if retryable(d.Problem) && c.queue.NumRequeues(key) < maxKindRetries {
			return d.Problem // the kind's CRD may have been installed, or its access granted, a moment ago
		}
		c.metrics.GroupingErrors.WithLabelValues(ProblemReason(d.Problem)).Inc()
		if d.PodGroup != "" {
			c.event(pod, corev1.EventTypeWarning, "NoGang", "%v; the pod is grouped as part of %s %s, the last owner found (PodGroup %s)",
				d.Problem, d.Owner.Kind, objectName(d.Owner.Namespace, d.Owner.Name), d.PodGroup)
		} else {
			c.event(pod, corev1.EventTypeWarning, "NoGang", "%v; the pod is scheduled on its own", d.Problem)
		}
	}
	p := placement(pod, d)
	group, changed := c.membership.Join(pod, p, c.clock())
	if p.Desired != nil && (!group.Exists || changed) {
		c.writer.EnsurePodGroup(p.Key)
	}
	if p.Key != "" {
		c.writer.Status(p.Key)
	}
	if changed && d.Source == SourceDefinition && c.staleDefinition != nil {
		if gv, err := schema.ParseGroupVersion(d.Owner.APIVersion); err == nil {
			if why, stale := c.staleDefinition(gv.WithKind(d.Owner.Kind).GroupKind()); stale {
				c.metrics.GroupingErrors.WithLabelValues(ProblemDefinitionInvalid).Inc()
				c.event(pod, corev1.EventTypeWarning, "DefinitionInvalid", "%s", why)
			}
		}
	}
	if changed {
		c.metrics.Decisions.WithLabelValues(string(d.Source)).Inc()
		c.metrics.GroupingLatency.Observe(time.Since(pod.CreationTimestamp.Time).Seconds())
	}
	c.membership.Wake(pod, group, changed)
	return nil
}

// retryable says whether a problem may go away by itself soon: an owner kind not served yet
// (its CRD just installed) or whose cache could not be filled (its access just granted).
func retryable(problem error) bool {
	return meta.IsNoMatchError(problem) || errors.Is(problem, ErrOwnerUnreadable)
}

// placement is where a decision puts the pod.
func placement(pod *corev1.Pod, d Decision) Placement {
	if d.PodGroup == "" {
		return Placement{}
	}
	p := Placement{Key: GroupKey(pod.Namespace, d.PodGroup), Namespace: pod.Namespace, Name: d.PodGroup, Parts: d.Parts}
	for _, pg := range d.Desired {
		if pg.Name == d.PodGroup {
			p.Desired = pg
		}
	}
	return p
}

func (c *Controller) event(pod *corev1.Pod, eventType, reason, format string, args ...any) {
	if c.recorder != nil {
		c.recorder.Eventf(pod, nil, eventType, reason, "Grouping", format, args...)
		c.metrics.Writes.WithLabelValues("event").Inc()
	}
}
