package grouper

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Controller groups the pods of one scheduler: for each pod it asks the hub for a decision,
// makes sure the workload's PodGroups exist and are current, and labels the pod with its
// PodGroup. It also keeps the status of those PodGroups current (phase and pod counts). It is
// usable alone or inside the scheduler process.
type Controller struct {
	hub      *Hub
	kube     kubernetes.Interface
	groups   client.Client
	recorder record.EventRecorder
	metrics  *Metrics

	factory    informers.SharedInformerFactory
	pods       listersv1.PodLister
	podIndexer cache.Indexer
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// statusQueue holds PodGroups whose status may be stale.
	statusQueue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// podGroups caches every PodGroup as *v1alpha1.PodGroup.
	podGroups cache.SharedIndexInformer

	// decided, when set, is told each pod's grouping once it is in effect.
	decided func(pod *corev1.Pod, podGroup string)

	// written remembers the PodGroups this controller ensured, so the pods of one workload
	// do not each re-check them; a deleted PodGroup is forgotten and its pods regrouped.
	mu      sync.Mutex
	written map[types.NamespacedName]v1alpha1.PodGroupSpec
}

func (c *Controller) ensured(pg *v1alpha1.PodGroup) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	spec, ok := c.written[types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}]
	return ok && apiequality.Semantic.DeepEqual(spec, pg.Spec)
}

func (c *Controller) remember(pg *v1alpha1.PodGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written == nil {
		c.written = map[types.NamespacedName]v1alpha1.PodGroupSpec{}
	}
	c.written[types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}] = *pg.Spec.DeepCopy()
}

// NewController watches the pods whose spec.schedulerName is schedulerName.
func NewController(hub *Hub, kube kubernetes.Interface, dynamicClient dynamic.Interface, groups client.Client, recorder record.EventRecorder, metrics *Metrics, schedulerName string) *Controller {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.schedulerName", schedulerName).String()
	}))
	podInformer := factory.Core().V1().Pods()
	utilruntime.Must(podInformer.Informer().AddIndexers(cache.Indexers{PodGroupIndex: IndexByPodGroup}))
	utilruntime.Must(podInformer.Informer().SetTransform(trimPod))
	c := &Controller{
		hub: hub, kube: kube, groups: groups, recorder: recorder, metrics: metrics,
		factory:    factory,
		pods:       podInformer.Lister(),
		podIndexer: podInformer.Informer().GetIndexer(),
		synced:     podInformer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "workmap-grouper"}),
		statusQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "workmap-podgroup-status"}),
	}
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueue(obj); c.enqueueStatus(obj) },
		UpdateFunc: func(old, obj any) {
			if groupingChanged(old, obj) {
				c.enqueue(obj)
			}
			c.enqueueStatus(old)
			c.enqueueStatus(obj)
		},
		DeleteFunc: c.enqueueStatus,
	})
	c.podGroups = NewPodGroupInformer(dynamicClient)
	_, _ = c.podGroups.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueGroupStatus(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueGroupStatus(obj) },
		DeleteFunc: c.podGroupDeleted,
	})
	return c
}

// NewPodGroupInformer watches every PodGroup; its cache and handlers hold *v1alpha1.PodGroup.
func NewPodGroupInformer(dynamicClient dynamic.Interface) cache.SharedIndexInformer {
	informer := dynamicinformer.NewFilteredDynamicInformer(dynamicClient, v1alpha1.Resource, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	utilruntime.Must(informer.SetTransform(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		pg := &v1alpha1.PodGroup{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pg); err != nil {
			return nil, fmt.Errorf("PodGroup %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		return pg, nil
	}))
	return informer
}

// PodGroups is the controller's PodGroup informer (objects are *v1alpha1.PodGroup), for
// sharing within the process.
func (c *Controller) PodGroups() cache.SharedIndexInformer { return c.podGroups }

// NotifyDecisions makes the controller call fn with each pod's PodGroup ("" for none) once
// its PodGroups exist, before the pod's label is written. Call it before Run.
func (c *Controller) NotifyDecisions(fn func(pod *corev1.Pod, podGroup string)) { c.decided = fn }

func (c *Controller) podGroupDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pg, ok := obj.(metav1.Object)
	if !ok || pg.GetLabels()[ManagedByLabel] != ManagedByValue {
		return // only workmap's own PodGroups are made again
	}
	c.mu.Lock()
	delete(c.written, types.NamespacedName{Namespace: pg.GetNamespace(), Name: pg.GetName()})
	c.mu.Unlock()
	for _, ref := range pg.GetOwnerReferences() {
		c.hub.Forget(ref.UID) // the workload may be gone (garbage collection); its pods re-read it
	}
	items, err := c.podIndexer.ByIndex(PodGroupIndex, GroupKey(pg.GetNamespace(), pg.GetName()))
	if err != nil {
		return
	}
	for _, p := range items {
		c.enqueue(p)
	}
}

func (c *Controller) enqueue(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return // only pods still to be scheduled need a group
	}
	c.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
}

// lastApplied is kubectl's copy of an applied object, often the largest annotation of a pod.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// trimPod keeps of a pod what grouping and PodGroup status read: its identity, labels,
// annotations and owners, the scheduler and node it has, and its phase. The cache then holds
// a small fraction of each pod.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	annotations := pod.Annotations
	if _, ok := annotations[lastApplied]; ok {
		annotations = maps.Clone(annotations)
		delete(annotations, lastApplied)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp,
			Labels: pod.Labels, Annotations: annotations, OwnerReferences: pod.OwnerReferences,
		},
		Spec:   corev1.PodSpec{SchedulerName: pod.Spec.SchedulerName, NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}, nil
}

// groupingChanged says whether a pod update can change its grouping: its labels, annotations
// or owners. Status updates (the scheduler's conditions, for one) cannot.
func groupingChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*corev1.Pod)
	n, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		!apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
}

// ResyncPending groups every pod still to be scheduled again: after the definitions changed,
// their gangs may have (a new minMember, a gang where there was none).
func (c *Controller) ResyncPending() {
	for _, obj := range c.podIndexer.List() {
		c.enqueue(obj)
	}
}

func (c *Controller) enqueueStatus(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok && pod.Labels[v1alpha1.PodGroupLabel] != "" {
		// Coalesced: a gang's pods change together, one status write covers them.
		c.statusQueue.AddAfter(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[v1alpha1.PodGroupLabel]}, statusDelay)
	}
}

// statusDelay gathers the pod events of a group into one PodGroup status write.
const statusDelay = 500 * time.Millisecond

func (c *Controller) enqueueGroupStatus(obj any) {
	if pg, ok := obj.(metav1.Object); ok {
		c.statusQueue.Add(types.NamespacedName{Namespace: pg.GetNamespace(), Name: pg.GetName()})
	}
}

// Run starts the informers and workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.statusQueue.ShutDown()
	c.factory.Start(ctx.Done())
	go c.podGroups.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced, c.podGroups.HasSynced) {
		return fmt.Errorf("waiting for the pod cache: %w", context.Cause(ctx))
	}
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { process(ctx, c.queue, c.sync, "grouping") }, time.Second)
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) { process(ctx, c.statusQueue, c.syncStatus, "PodGroup status") }, time.Second)
	<-ctx.Done()
	return nil
}

// HasSynced reports whether the pod and PodGroup caches are filled.
func (c *Controller) HasSynced() bool { return c.synced() && c.podGroups.HasSynced() }

// process handles the keys of one queue until it shuts down.
func process(ctx context.Context, queue workqueue.TypedRateLimitingInterface[types.NamespacedName], sync func(context.Context, types.NamespacedName) error, what string) {
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		if err := sync(ctx, key); err != nil {
			klog.FromContext(ctx).V(2).Info("sync failed, will retry", "what", what, "key", key, "err", err)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// sync groups one pod.
func (c *Controller) sync(ctx context.Context, key types.NamespacedName) error {
	pod, err := c.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d, err := c.hub.Decide(ctx, pod)
	if err != nil {
		c.metrics.Errors.WithLabelValues("decide").Inc()
		c.recorder.Eventf(pod, corev1.EventTypeWarning, "GroupingFailed", "workmap could not group the pod: %v", err)
		return err
	}
	if d.Problem != nil {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, "NoGang", "%v; the pod is scheduled on its own", d.Problem)
	}
	for _, pg := range d.Desired {
		if c.ensured(pg) {
			continue
		}
		written, change, err := EnsurePodGroup(ctx, c.groups, pg)
		if err != nil {
			c.metrics.Errors.WithLabelValues("podgroup").Inc()
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "PodGroupFailed", "%v", err)
			return err
		}
		if change != Unchanged {
			c.recorder.Eventf(written, corev1.EventTypeNormal, string(change), "minMember %d for %s %s (from %s)", pg.Spec.MinMember, d.Owner.Kind, d.Owner.Name, d.Source)
		}
		c.remember(pg)
	}
	// The scheduler may go ahead now; the label below is for everyone else (and for a
	// scheduler that restarts).
	if c.decided != nil {
		c.decided(pod, d.PodGroup)
	}
	if d.PodGroup != "" && pod.Labels[v1alpha1.PodGroupLabel] != d.PodGroup {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q},"annotations":{%q:"true"}}}`, v1alpha1.PodGroupLabel, d.PodGroup, GroupedAnnotation)
		if _, err := c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			c.metrics.Errors.WithLabelValues("label").Inc()
			return err
		}
		// No event per pod: one more write per pod would halve the pods grouped per second
		// under the client's rate limit. The PodGroup's own events and the label say it.
		c.metrics.GroupingLatency.Observe(time.Since(pod.CreationTimestamp.Time).Seconds())
	}
	c.metrics.Decisions.WithLabelValues(string(d.Source)).Inc()
	return nil
}
