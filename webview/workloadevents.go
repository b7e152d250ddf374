package webview

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/live"
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

// byInvolvedObject indexes events by the object they are about: namespace/Kind/name.
const byInvolvedObject = "involvedObject"

func involvedObjectKey(namespace, kind, name string) string {
	return namespace + "/" + kind + "/" + name
}

// watchEvents sets up the informer of events in the namespace shown (served says whether the
// cluster serves them), after asking whether the user may list and watch them. Events change
// no workload: they recompute nothing, and are read, by the object they are about, when a
// workload's page is rendered.
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
		_ = src.informer.AddIndexers(cache.Indexers{byInvolvedObject: func(obj any) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			kind, _, _ := unstructured.NestedString(u.Object, "involvedObject", "kind")
			name, _, _ := unstructured.NestedString(u.Object, "involvedObject", "name")
			return []string{involvedObjectKey(u.GetNamespace(), kind, name)}, nil
		}})
		w.onWatchError(src, func() {})
	}
	w.mu.Lock()
	w.sources[eventsResource] = src
	w.mu.Unlock()
}

// workloadEvents are the newest events of a workload's own object, its pods and its gangs'
// PodGroups, from the events cache; note says why none are shown when events are not watched.
func (w *watcher) workloadEvents(e *Entry) (events []event, note string) {
	src := w.source(eventsResource)
	if src == nil || src.informer == nil {
		if src != nil && src.message != "" {
			return nil, "events are not shown: " + src.message
		}
		return nil, "events are not shown: the cluster's events are not watched"
	}
	keys := []string{involvedObjectKey(e.Key.Namespace, e.Key.Kind, e.Key.Name)}
	for _, p := range e.PodUses {
		keys = append(keys, involvedObjectKey(e.Key.Namespace, "Pod", p.Name))
	}
	for _, g := range e.Gangs {
		keys = append(keys, involvedObjectKey(e.Key.Namespace, "PodGroup", g.PodGroup))
	}
	for _, key := range keys {
		items, err := src.informer.GetIndexer().ByIndex(byInvolvedObject, key)
		if err != nil {
			continue
		}
		for _, item := range items {
			if ev, ok := listedEvent(item); ok {
				events = append(events, ev)
			}
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return b.Last.Compare(a.Last) })
	return events[:min(len(events), maxEvents)], ""
}

// listedEvent is one cached event as a workload's page lists it.
func listedEvent(item any) (event, bool) {
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return event{}, false
	}
	var ev corev1.Event
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ev) != nil {
		return event{}, false
	}
	last := live.EventTime(&ev).Time
	object := ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name
	return event{Last: last, Type: ev.Type, Reason: ev.Reason, Object: object, Message: ev.Message, Count: max(ev.Count, 1)}, true
}

// lastPreemption is the newest preemption of a gang's PodGroup as a victim, from the events
// cache (nil: none cached, or events not watched).
func (w *watcher) lastPreemption(namespace, podGroup string) *definitions.Preemption {
	src := w.source(eventsResource)
	if src == nil || src.informer == nil {
		return nil
	}
	items, err := src.informer.GetIndexer().ByIndex(byInvolvedObject, involvedObjectKey(namespace, "PodGroup", podGroup))
	if err != nil {
		return nil
	}
	events := make([]*corev1.Event, 0, len(items))
	for _, item := range items {
		var ev corev1.Event
		if u, ok := item.(*unstructured.Unstructured); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ev) == nil {
			events = append(events, &ev)
		}
	}
	return live.LastPreemption(events)
}
