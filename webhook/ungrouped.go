package webhook

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// The Warning event on a pod created without the gang the webhook would have given it.
const (
	// ReasonCreatedWithoutGang is the event's reason.
	ReasonCreatedWithoutGang = "CreatedWithoutGang"
	// ReportingController is the component the webhook's events come from.
	ReportingController = "workmap-webhook"
	// createdWithoutGangAction is the event's action: what did not happen to the pod.
	createdWithoutGangAction = "Admission"
	// createdWithoutGangNote is the event's message; %s is the PodGroup.
	createdWithoutGangNote = "created without its gang (native PodGroup %s): workmap-webhook did not group it when it was created " +
		"(the webhook was down or unreachable, or its decision failed or timed out; with failurePolicy Ignore the API server " +
		"admits pods unchanged), so it is scheduled without a gang. Recreate the workload's pods to gang them"
	// unservedNote is the event's message when the cluster serves no native PodGroups; %s is
	// the gang.
	unservedNote = "created without its gang (%s): the cluster serves no native PodGroups (scheduling.k8s.io v1beta1 or v1alpha2; " +
		"kube-apiserver serves them with the GenericWorkload feature gate and that version in --runtime-config), so " +
		"workmap-webhook could not group it and it is scheduled without a gang. Ask for workmap-scheduler (schedulerName) to " +
		"gang it, or leave this scheduler out of workmap-webhook's --native-schedulers"
)

// reportTimeout bounds the decision of one pod's gang (its owner may have to be read).
const reportTimeout = 10 * time.Second

// maxReportRetries is how many times a pod whose gang could not be decided is tried again.
const maxReportRetries = 5

// UngroupedReporter tells users which pods were created without their gang: when the webhook
// was down, unreachable or failed, the API server admitted its pods unchanged (failurePolicy
// Ignore) and they schedule one by one. For each pod of a native scheduler that exists without
// spec.schedulingGroup although the webhook would have given it one at creation (the same
// decision as Mutate's), it records one Warning event on the pod, once per process: on start
// (the pods created while no webhook ran) and for each new pod from then on.
type UngroupedReporter struct {
	mutator  *Mutator
	recorder events.EventRecorder
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	// skip are namespaces the webhook is not called for.
	skip []string

	mu sync.Mutex
	// decided are the pods whose gang was decided (reported or not), until they are deleted.
	decided map[types.UID]struct{}
}

// NewUngroupedReporter watches the cluster's non-terminal pods once Run is called, keeping
// only what the decision needs of them. Pods in the skip namespaces (those the webhook's
// configuration leaves out) are never reported. When the cluster serves no native PodGroups
// (m.Native is nil), every native scheduler's pod whose workload has a gang is reported, with
// why.
func NewUngroupedReporter(kube kubernetes.Interface, m *Mutator, recorder events.EventRecorder, skip []string) (*UngroupedReporter, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
		}),
		informers.WithTransform(podForReport))
	r := &UngroupedReporter{
		mutator:  m,
		recorder: recorder,
		informer: factory.Core().V1().Pods().Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ungrouped-pods"}),
		skip:    skip,
		decided: map[types.UID]struct{}{},
	}
	_, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueue,
		UpdateFunc: func(_, obj any) { r.enqueue(obj) },
		DeleteFunc: r.forget,
	})
	if err != nil {
		return nil, fmt.Errorf("watching pods for those created without their gang: %w", err)
	}
	if err := m.WatchErrors.Watch(r.informer, corev1.SchemeGroupVersion.WithResource("pods").GroupResource(), nil); err != nil {
		return nil, err
	}
	return r, nil
}

// Run watches pods and reports them until ctx ends.
func (r *UngroupedReporter) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer r.queue.ShutDown()
	go r.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
		return
	}
	klog.FromContext(ctx).V(2).Info("reporting pods created without their gang", "pods", len(r.informer.GetStore().ListKeys()))
	go wait.UntilWithContext(ctx, r.work, time.Second)
	<-ctx.Done()
}

// HasSynced reports whether the pods were listed.
func (r *UngroupedReporter) HasSynced() bool { return r.informer.HasSynced() }

// podForReport is the informer's transform: of a pod, only its metadata (without managed
// fields), scheduler, scheduling group and phase are kept, so that a cache of every pod in
// the cluster stays small.
func podForReport(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a deleted pod's last known state: already transformed
	}
	meta := *pod.ObjectMeta.DeepCopy()
	meta.ManagedFields = nil
	return &corev1.Pod{
		ObjectMeta: meta,
		Spec:       corev1.PodSpec{SchedulerName: pod.Spec.SchedulerName, SchedulingGroup: pod.Spec.SchedulingGroup.DeepCopy()},
		Status:     corev1.PodStatus{Phase: pod.Status.Phase},
	}, nil
}

// candidate reports whether a pod may have been created without the gang the webhook gives:
// not decided yet, alive, of a native scheduler, without a scheduling group, in a namespace
// the webhook is called for.
func (r *UngroupedReporter) candidate(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Spec.SchedulingGroup != nil || slices.Contains(r.skip, pod.Namespace) {
		return false
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false
	}
	if !slices.Contains(r.mutator.NativeSchedulers, schedulerOf(pod)) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, done := r.decided[pod.UID]
	return !done
}

func (r *UngroupedReporter) enqueue(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.candidate(pod) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	r.queue.Add(key)
}

// forget drops a deleted pod from the decided ones.
func (r *UngroupedReporter) forget(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.decided, pod.UID)
}

func (r *UngroupedReporter) work(ctx context.Context) {
	for r.next(ctx) {
	}
}

// next reports the next pod of the queue; false once the queue is shut down.
func (r *UngroupedReporter) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	err := r.report(ctx, key)
	switch {
	case err == nil:
		r.queue.Forget(key)
	case r.queue.NumRequeues(key) < maxReportRetries:
		r.queue.AddRateLimited(key)
	default:
		r.queue.Forget(key)
		klog.FromContext(ctx).Error(err, "could not decide whether a pod was created without its gang", "pod", key)
	}
	return true
}

// report decides one pod's gang and, if the webhook would have given it one at creation,
// records the event on it.
func (r *UngroupedReporter) report(ctx context.Context, key string) error {
	obj, exists, err := r.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.candidate(pod) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	g, err := r.mutator.gangAtCreation(ctx, pod)
	if err != nil {
		return fmt.Errorf("deciding the gang of pod %s: %w", key, err)
	}
	r.mu.Lock()
	r.decided[pod.UID] = struct{}{}
	r.mu.Unlock()
	note := createdWithoutGangNote
	switch g.outcome {
	case OutcomeNative:
	case OutcomeUnserved:
		note = unservedNote
	default:
		return nil
	}
	klog.FromContext(ctx).V(2).Info("pod created without its gang", "pod", klog.KObj(pod), "podGroup", g.decision.PodGroup, "outcome", g.outcome)
	r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonCreatedWithoutGang, createdWithoutGangAction, note, g.decision.PodGroup)
	return nil
}
