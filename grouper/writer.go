package grouper

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Writer makes the grouper's API writes, none of them on the scheduling path but all of them
// out of the same client budget as the bindings: each PodGroup workmap manages is created once
// (and updated when its definition changes its spec), the status of the gangs this scheduler
// serves is written when its phase changes (coalesced, with the counts of that moment), and a
// bound pod gets its pod-group label where the API server did not copy it from the binding. It
// writes only while the process leads; a standby's queue keeps the keys and is drained on
// takeover.
type Writer struct {
	membership *Membership
	podGroups  PodGroupClient
	// cached holds the PodGroup informer's objects (*v1alpha1.PodGroup).
	cached   cache.Indexer
	pods     typedcorev1.PodsGetter
	recorder events.EventRecorder
	leader   *Leader
	metrics  *Metrics
	queue    workqueue.TypedRateLimitingInterface[write]
}

// write is one queued write: what, and the PodGroup key or pod namespace/name it is for.
type write struct {
	kind writeKind
	key  string
}

type writeKind string

const (
	writePodGroup writeKind = "podgroup"
	writeStatus   writeKind = "status"
	writeLabel    writeKind = "label"
)

// A PodGroup's status is written when its phase changes, StatusDelay after the first pod event
// that may change it (so a gang that binds and starts within it costs one write); a change of
// counts alone is not written (the counts are those of the last change of phase: every write
// takes a token a binding could have used).
// A new gang's Pending is written only once it has been pending for PendingDelay: a PodGroup
// without a status reads as Pending, and most gangs are bound before then, so they cost one
// status write in all.
const (
	StatusDelay  = 2 * time.Second
	PendingDelay = 10 * time.Second
)

// NewWriter returns a writer; nothing is written until Run and leadership.
func NewWriter(m *Membership, podGroups PodGroupClient, cached cache.Indexer, pods typedcorev1.PodsGetter, recorder events.EventRecorder, leader *Leader, metrics *Metrics) *Writer {
	return &Writer{
		membership: m, podGroups: podGroups, cached: cached, pods: pods, recorder: recorder, leader: leader, metrics: metrics,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[write](),
			workqueue.TypedRateLimitingQueueConfig[write]{Name: "workmap-writes"}),
	}
}

// EnsurePodGroup queues the creation (or update) of workmap's PodGroup of a group.
func (w *Writer) EnsurePodGroup(key string) { w.queue.Add(write{writePodGroup, key}) }

// Status queues a status write for a group, coalesced over StatusDelay.
func (w *Writer) Status(key string) { w.queue.AddAfter(write{writeStatus, key}, StatusDelay) }

// Label queues the pod-group label of a bound pod.
func (w *Writer) Label(pod *corev1.Pod) { w.queue.Add(write{writeLabel, string(pod.UID)}) }

// Run writes until ctx ends, from the moment the process leads.
func (w *Writer) Run(ctx context.Context, workers int) {
	defer w.queue.ShutDown()
	select {
	case <-ctx.Done():
		return
	case <-w.leader.Elected():
	}
	klog.FromContext(ctx).V(2).Info("leading: workmap writes PodGroups and their status")
	for range workers {
		go w.work(ctx)
	}
	<-ctx.Done()
}

func (w *Writer) work(ctx context.Context) {
	for {
		item, quit := w.queue.Get()
		if quit {
			return
		}
		err := w.do(ctx, item)
		if err != nil {
			w.metrics.Errors.WithLabelValues(string(item.kind)).Inc()
			klog.FromContext(ctx).V(2).Info("write failed, will retry", "write", item.kind, "key", item.key, "err", err)
			w.queue.AddRateLimited(item)
		} else {
			w.queue.Forget(item)
		}
		w.queue.Done(item)
	}
}

func (w *Writer) do(ctx context.Context, item write) error {
	switch item.kind {
	case writePodGroup:
		return w.ensure(ctx, item.key)
	case writeStatus:
		return w.status(ctx, item.key)
	case writeLabel:
		return w.label(ctx, item.key)
	}
	return nil
}

func (w *Writer) cachedPodGroup(key string) *v1alpha1.PodGroup {
	obj, ok, err := w.cached.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	pg, _ := obj.(*v1alpha1.PodGroup)
	return pg
}

func (w *Writer) ensure(ctx context.Context, key string) error {
	g, ok := w.membership.Group(key)
	if !ok || !g.Owned || g.Members == 0 {
		return nil // gone, or an operator's: nothing to make
	}
	desired := w.membership.desired(key)
	if desired == nil {
		return nil
	}
	current := w.cachedPodGroup(key)
	if current != nil && upToDate(current, desired) {
		return nil
	}
	written, change, err := EnsurePodGroup(ctx, w.podGroups, desired, current)
	if err != nil {
		if w.recorder != nil {
			w.recorder.Eventf(desired, nil, corev1.EventTypeWarning, "PodGroupFailed", "Ensure", "%v", err)
		}
		return err
	}
	w.metrics.Writes.WithLabelValues("podgroup").Inc()
	if change == Updated && w.recorder != nil {
		w.recorder.Eventf(written, nil, corev1.EventTypeNormal, string(change), "Update", "minMember %d", desired.Spec.MinMember)
	}
	w.Status(key)
	return nil
}

// status writes a group's status when its phase changed, or its scheduled count beyond its
// minimum (an elastic gang grew or shrank while it runs), and on workmap's own PodGroups the
// domain a topology-constrained gang was placed in.
func (w *Writer) status(ctx context.Context, key string) error {
	counts, ok := w.membership.Counts(key)
	current := w.cachedPodGroup(key)
	if !ok || current == nil {
		return nil // no gang of this scheduler's, or no PodGroup (yet): nothing to write
	}
	if err := w.domain(ctx, key, current); err != nil {
		return err
	}
	if counts.Vanished > 0 && !finalPhase(current.Status.Phase) {
		if err := w.settle(ctx, key, current); err != nil {
			return err
		}
		counts, _ = w.membership.Counts(key)
	}
	counts.MinMember = current.Spec.MinMember
	status := GroupStatus(counts, current.Status)
	if status.Scheduled > 0 && status.ScheduleStartTime.IsZero() {
		status.ScheduleStartTime = metav1.Now()
	}
	if apiequality.Semantic.DeepEqual(status, current.Status) {
		return nil
	}
	if g, ok := w.membership.Group(key); ok && current.Status.Phase == "" && status.Phase == v1alpha1.PodGroupPending {
		if wait := PendingDelay - time.Since(g.Since); wait > 0 {
			w.queue.AddAfter(write{writeStatus, key}, wait)
			return nil
		}
	}
	if status.Phase == current.Status.Phase && !beyondMinimum(status, current.Status, counts.MinMember) {
		return nil // counts alone: not worth a token of the budget
	}
	updated := current.DeepCopy()
	updated.Status = status
	_, err := w.podGroups.UpdateStatus(ctx, updated)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		w.Status(key) // the cache catches up first
		return nil
	case err != nil:
		return err
	}
	w.metrics.Writes.WithLabelValues("status").Inc()
	return nil
}

// settle reads how the group's vanished members ended: one list of the pods that carry the
// PodGroup's label (its pods carry it from creation, or from their binding by this scheduler).
func (w *Writer) settle(ctx context.Context, key string, pg *v1alpha1.PodGroup) error {
	pods, err := w.pods.Pods(pg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.PodGroupLabel + "=" + pg.Name, ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("reading how the pods of PodGroup %s ended: %w", key, err)
	}
	phases := map[types.UID]corev1.PodPhase{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			phases[p.UID] = p.Status.Phase
		}
	}
	w.membership.Settle(key, phases)
	return nil
}

// domain writes, once per placement, the domain a gang of a PodGroup workmap manages was
// placed in as its TopologyDomainAnnotation: the one write a constrained gang costs beyond an
// unconstrained one, off the scheduling path.
func (w *Writer) domain(ctx context.Context, key string, current *v1alpha1.PodGroup) error {
	g, ok := w.membership.Group(key)
	if !ok || !g.Owned || g.Domain == nil || g.Domain.Label == "" || g.Assigned < int(g.Spec.MinMember) {
		return nil
	}
	value := g.Domain.String()
	if current.Annotations[TopologyDomainAnnotation] == value {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, TopologyDomainAnnotation, value)
	_, err := w.podGroups.In(current.Namespace).Patch(ctx, current.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		w.metrics.Writes.WithLabelValues("domain").Inc()
	}
	return err
}

func (w *Writer) label(ctx context.Context, uid string) error {
	pod, group := w.membership.unlabelled(types.UID(uid))
	if pod == nil {
		return nil // gone, or labelled meanwhile
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.PodGroupLabel, group)
	_, err := w.pods.Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		w.metrics.Writes.WithLabelValues("label").Inc()
	}
	return err
}

// beyondMinimum reports whether a gang's scheduled count changed beyond minMember: pods an
// elastic gang gained or lost above its minimum, which a gang scheduled all at once never has
// (its count changes with its phase), so the write costs nothing on the common path.
func beyondMinimum(status, written v1alpha1.PodGroupStatus, minMember int32) bool {
	return status.Scheduled != written.Scheduled && max(status.Scheduled, written.Scheduled) > minMember
}
