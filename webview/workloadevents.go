package webview

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var eventsResource = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// maxEvents is how many of a workload's events its page lists, newest first.
const maxEvents = 20

// event is one event a workload's page lists.
type event struct {
	Last         time.Time
	Type, Reason string
	Object       string // Kind/name
	Message      string
	Count        int32
}

// watchEvents sets up the informer of events in the namespace shown (served says whether the
// cluster serves them), after asking whether the user may list and watch them. Events change
// no workload: they recompute nothing, and are read when a workload's page is rendered.
func (w *watcher) watchEvents(ctx context.Context, served bool) {
	if w.source(eventsResource) != nil {
		return
	}
	src := w.newSource(ctx, eventsResource, served, w.namespace, w.factory)
	if src.informer != nil {
		_ = src.informer.SetTransform(func(obj any) (any, error) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				u.SetManagedFields(nil)
			}
			return obj, nil
		})
		w.onWatchError(src, func() {})
	}
	w.mu.Lock()
	w.sources[eventsResource] = src
	w.mu.Unlock()
}

// workloadEvents are the newest events of a workload's own object and of its pods, from the
// events cache; note says why none are shown when events are not watched.
func (w *watcher) workloadEvents(e *Entry) (events []event, note string) {
	src := w.source(eventsResource)
	if src == nil || src.informer == nil {
		if src != nil && src.message != "" {
			return nil, "events are not shown: " + src.message
		}
		return nil, "events are not shown: the cluster's events are not watched"
	}
	mine := map[string]bool{e.Key.Kind + "/" + e.Key.Name: true}
	for _, p := range e.PodUses {
		mine["Pod/"+p.Name] = true
	}
	for _, u := range w.objects(eventsResource) {
		if u.GetNamespace() != e.Key.Namespace {
			continue
		}
		var ev corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ev) != nil {
			continue
		}
		object := ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name
		if !mine[object] {
			continue
		}
		last := ev.LastTimestamp.Time
		if last.IsZero() {
			last = ev.EventTime.Time
		}
		if last.IsZero() {
			last = ev.CreationTimestamp.Time
		}
		events = append(events, event{Last: last, Type: ev.Type, Reason: ev.Reason, Object: object, Message: ev.Message, Count: max(ev.Count, 1)})
	}
	slices.SortStableFunc(events, func(a, b event) int { return b.Last.Compare(a.Last) })
	return events[:min(len(events), maxEvents)], ""
}
