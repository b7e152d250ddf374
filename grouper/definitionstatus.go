package grouper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// maxConditionMessage is the longest message the CRD's condition schema accepts.
const maxConditionMessage = 32768

// definitionResult is the Accepted condition one cluster definition should carry, for the
// generation that was compiled.
type definitionResult struct {
	generation int64
	status     metav1.ConditionStatus
	reason     string
	message    string
	// lastValid is the earlier generation in effect while this one is invalid.
	lastValid *v1alpha1.LastValidDefinition
}

// judge says what became of each cluster definition: invalid, in effect for its kind, or
// overridden by another cluster definition of the same kind.
func judge(compiled []compiledDefinition, reg *definitions.Registry, builtin []*definitions.Definition) map[string]definitionResult {
	embedded := map[schema.GroupKind]bool{}
	for _, d := range builtin {
		embedded[d.GroupKind] = true
	}
	winners := map[*definitions.Definition]string{}
	for _, c := range compiled {
		if d := c.inEffect(); d != nil {
			winners[d] = c.name
		}
	}
	out := make(map[string]definitionResult, len(compiled))
	for _, c := range compiled {
		r := definitionResult{generation: c.generation, status: metav1.ConditionTrue, reason: v1alpha1.ReasonCompiled}
		switch winner, _ := reg.Lookup(c.groupKind); {
		case c.def == nil && c.lastGood != nil:
			r.status, r.reason = metav1.ConditionFalse, v1alpha1.ReasonInvalid
			kept := fmt.Sprintf("generation %d, the last valid one, stays in effect; ", c.lastGood.generation)
			r.message = invalidMessage(c.err)
			if len(kept)+len(r.message) <= maxConditionMessage {
				r.message = kept + r.message
			}
			r.lastValid = &v1alpha1.LastValidDefinition{Generation: c.lastGood.generation, Spec: c.lastGood.def.Source.Spec}
		case c.def == nil:
			r.status, r.reason, r.message = metav1.ConditionFalse, v1alpha1.ReasonInvalid, invalidMessage(c.err)
		case winner == c.def:
			r.message = "in effect for " + c.groupKind.String()
			if embedded[c.groupKind] {
				r.message += ", overriding the embedded catalog's definition"
			}
		default:
			r.message = fmt.Sprintf("overridden by WorkloadDefinition %s (of the same kind, %s)", winners[winner], c.groupKind)
		}
		out[c.name] = r
	}
	return out
}

// invalidMessage lists a definition's problems on one line, each with its field path.
func invalidMessage(err error) string {
	msg := err.Error()
	var de *definitions.DefinitionError
	if errors.As(err, &de) && len(de.Errors) > 0 {
		problems := make([]string, len(de.Errors))
		for i, e := range de.Errors {
			problems[i] = e.Error()
		}
		msg = strings.Join(problems, "; ")
	}
	if len(msg) > maxConditionMessage {
		msg = msg[:maxConditionMessage-len("…")] + "…"
	}
	return msg
}

// DefinitionStatus writes the Accepted condition on each WorkloadDefinition in the cluster,
// while the process leads: True (Compiled) with whether it is in effect, or False (Invalid)
// with its problems; the condition's observedGeneration is the compiled generation. A
// definition whose condition is already as it should be is not written.
type DefinitionStatus struct {
	client dynamic.NamespaceableResourceInterface
	source *DefinitionSource
	leader *Leader
	queue  workqueue.TypedRateLimitingInterface[string]
}

// NewDefinitionStatus returns the writer of source's definitions' status; it queues every
// definition each time the source's results change, and writes once Run is called and the
// process leads.
func NewDefinitionStatus(client dynamic.Interface, source *DefinitionSource, leader *Leader) *DefinitionStatus {
	w := &DefinitionStatus{
		client: client.Resource(v1alpha1.SchemeGroupVersion.WithResource("workloaddefinitions")),
		source: source, leader: leader,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "workmap-definition-status"}),
	}
	fn := w.queueAll
	source.judged.Store(&fn)
	w.queueAll()
	return w
}

func (w *DefinitionStatus) queueAll() {
	if results := w.source.results.Load(); results != nil {
		for name := range *results {
			w.queue.Add(name)
		}
	}
}

// Run writes until ctx ends, from the moment the process leads.
func (w *DefinitionStatus) Run(ctx context.Context) {
	defer w.queue.ShutDown()
	select {
	case <-ctx.Done():
		return
	case <-w.leader.Elected():
	}
	go w.work(ctx)
	<-ctx.Done()
}

func (w *DefinitionStatus) work(ctx context.Context) {
	for {
		name, quit := w.queue.Get()
		if quit {
			return
		}
		if err := w.write(ctx, name); err != nil {
			klog.FromContext(ctx).V(2).Info("writing a WorkloadDefinition's status failed, will retry", "name", name, "err", err)
			w.queue.AddRateLimited(name)
		} else {
			w.queue.Forget(name)
		}
		w.queue.Done(name)
	}
}

// write brings one definition's Accepted condition up to date: from the watch's copy first,
// then, on a conflict, from a fresh read.
func (w *DefinitionStatus) write(ctx context.Context, name string) error {
	fresh := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		results := w.source.results.Load()
		if results == nil {
			return nil
		}
		want, ok := (*results)[name]
		if !ok {
			return nil // deleted
		}
		obj, err := w.current(ctx, name, fresh)
		fresh = true
		if obj == nil || err != nil {
			return err
		}
		if obj.GetGeneration() != want.generation {
			return nil // a newer generation is being compiled: its results queue it again
		}
		updated, changed, err := withAccepted(obj, want)
		if err != nil || !changed {
			return err
		}
		_, err = w.client.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile, or a CRD installed before WorkloadDefinitions had a status.
		klog.FromContext(ctx).V(2).Info("WorkloadDefinition status not written", "name", name, "err", err)
		return nil
	}
	return err
}

// current is the definition as the watch has it, or as the API server does when fresh.
func (w *DefinitionStatus) current(ctx context.Context, name string, fresh bool) (*unstructured.Unstructured, error) {
	if fresh {
		obj, err := w.client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return obj, err
	}
	item, ok, err := w.source.informer.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, err
	}
	obj, _ := item.(*unstructured.Unstructured)
	return obj, nil
}

// withAccepted returns a copy of obj with its Accepted condition and last valid generation set
// as want says, and whether that changed anything.
func withAccepted(obj *unstructured.Unstructured, want definitionResult) (*unstructured.Unstructured, bool, error) {
	var status v1alpha1.WorkloadDefinitionStatus
	if m, ok, _ := unstructured.NestedMap(obj.Object, "status"); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &status); err != nil {
			return nil, false, fmt.Errorf("WorkloadDefinition %s: reading its status: %w", obj.GetName(), err)
		}
	}
	cond := metav1.Condition{
		Type: v1alpha1.ConditionAccepted, Status: want.status, Reason: want.reason, Message: want.message,
		ObservedGeneration: want.generation,
	}
	if c := meta.FindStatusCondition(status.Conditions, cond.Type); c != nil && c.Status == cond.Status &&
		c.Reason == cond.Reason && c.Message == cond.Message && c.ObservedGeneration == cond.ObservedGeneration &&
		apiequality.Semantic.DeepEqual(status.LastValid, want.lastValid) {
		return nil, false, nil
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	status.LastValid = want.lastValid
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return nil, false, err
	}
	updated := obj.DeepCopy()
	updated.Object["status"] = m
	return updated, true, nil
}
