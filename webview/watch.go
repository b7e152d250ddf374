package webview

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/internal/access"
)

// Access says whether a watched resource can be read.
type Access string

// The states of a watched resource.
const (
	AccessWatching     Access = "watching"
	AccessSyncing      Access = "syncing"
	AccessNotPermitted Access = "not permitted"
	AccessNotInstalled Access = "not installed"
)

var (
	podsResource      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGroupsResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
)

// source is one watched resource: its informer, or why there is none.
type source struct {
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer // nil when not permitted or not installed

	mu      sync.Mutex
	access  Access
	message string
}

func (s *source) state() (Access, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.access == AccessSyncing && s.informer != nil && s.informer.HasSynced() {
		s.access = AccessWatching
	}
	return s.access, s.message
}

// recovered marks a resource that was not permitted as watched again (an event arrived).
func (s *source) recovered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.access != AccessNotPermitted {
		return false
	}
	s.access, s.message = AccessWatching, ""
	return true
}

func (s *source) set(a Access, message string) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed = s.access != a || s.message != message
	s.access, s.message = a, message
	return changed
}

// watcher holds one informer per resource shown. It is also the live.Lister the resolver
// reads through, so resolving a workload makes no API call.
type watcher struct {
	clients   Clients
	namespace string
	factory   dynamicinformer.DynamicSharedInformerFactory
	// cluster informs on cluster-scoped resources (nodes), whatever namespace is shown.
	cluster dynamicinformer.DynamicSharedInformerFactory
	log     *slog.Logger
	// changed is called with the namespace of every object added, changed or deleted, and
	// with "" when a resource's access changed (everything is recomputed).
	changed func(namespace string)
	// unreachable is called with the error of a failed list or watch that is not an API
	// error (the cluster could not be reached).
	unreachable func(err error)
	// failed is called for every failed list or watch, with its resource and error (nil:
	// not counted).
	failed func(gvr schema.GroupVersionResource, err error)

	mu      sync.RWMutex
	sources map[schema.GroupVersionResource]*source
}

func newWatcher(clients Clients, namespace string, log *slog.Logger, changed func(string), unreachable func(error)) *watcher {
	return &watcher{
		clients:     clients,
		namespace:   namespace,
		factory:     dynamicinformer.NewFilteredDynamicSharedInformerFactory(clients.Dynamic, 0, namespace, nil),
		cluster:     dynamicinformer.NewDynamicSharedInformerFactory(clients.Dynamic, 0),
		log:         log,
		changed:     changed,
		unreachable: unreachable,
		sources:     map[schema.GroupVersionResource]*source{},
	}
}

// watch sets up the informers of resources (served says which the cluster serves), after
// asking the API server whether the user may list and watch each; a resource not served, or
// not permitted, before and served now is asked again. Start them with start.
func (w *watcher) watch(ctx context.Context, resources []schema.GroupVersionResource, served map[schema.GroupVersionResource]bool) {
	for _, gvr := range resources {
		w.mu.RLock()
		known, ok := w.sources[gvr]
		w.mu.RUnlock()
		if ok && (known.informer != nil || !served[gvr]) {
			continue // watched already, or still not served
		}
		src := w.newSource(ctx, gvr, served[gvr], w.namespace, w.factory)
		if src.informer != nil {
			w.instrument(src)
		}
		w.mu.Lock()
		w.sources[gvr] = src
		w.mu.Unlock()
	}
}

// watchNodes sets up the informer of nodes (served says whether the cluster serves them),
// cluster-wide whatever namespace is shown, after asking whether the user may list and watch
// them. Nodes are cached stripped to what the view shows (stripNode); changed is called when
// one is added or deleted, or changes in that. Start it with start.
func (w *watcher) watchNodes(ctx context.Context, served bool, changed func()) {
	if w.source(nodesResource) != nil {
		return
	}
	src := w.newSource(ctx, nodesResource, served, "", w.cluster)
	if src.informer != nil {
		_ = src.informer.SetTransform(stripNode)
		w.onWatchError(src, changed)
		notify := func(any) {
			src.recovered()
			changed()
		}
		_, _ = src.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: notify,
			UpdateFunc: func(old, obj any) {
				o, ok1 := old.(*unstructured.Unstructured)
				n, ok2 := obj.(*unstructured.Unstructured)
				if ok1 && ok2 && sameNode(o, n) {
					return // a status update the view does not show (a heartbeat, an image pulled)
				}
				notify(obj)
			},
			DeleteFunc: notify,
		})
	}
	w.mu.Lock()
	w.sources[nodesResource] = src
	w.mu.Unlock()
}

// newSource is the source of a resource the informers of factory watch in namespace ("": all),
// once the user may list and watch it there (served says whether the cluster serves it); its
// informer is nil when it is not served or not permitted, and src says which.
func (w *watcher) newSource(ctx context.Context, gvr schema.GroupVersionResource, served bool, namespace string, factory dynamicinformer.DynamicSharedInformerFactory) *source {
	src := &source{gvr: gvr}
	if !served {
		src.access = AccessNotInstalled
		return src
	}
	if ok, why := w.permitted(ctx, gvr, namespace); !ok {
		src.access, src.message = AccessNotPermitted, why
		return src
	}
	src.access = AccessSyncing
	src.informer = factory.ForResource(gvr).Informer()
	return src
}

// start runs the informers set up so far (those already running are left alone).
func (w *watcher) start(ctx context.Context) {
	w.factory.Start(ctx.Done())
	w.cluster.Start(ctx.Done())
}

// waitForSync waits until every informer has synced, or the timeout passes.
func (w *watcher) waitForSync(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var synced []cache.InformerSynced
	for _, s := range w.all() {
		if s.informer != nil {
			synced = append(synced, s.informer.HasSynced)
		}
	}
	cache.WaitForCacheSync(ctx.Done(), synced...)
}

// onWatchError marks a resource whose list or watch is refused as not permitted (calling
// changed), and reports a cluster that cannot be reached.
func (w *watcher) onWatchError(src *source, changed func()) {
	_ = src.informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		switch {
		case apierrors.IsForbidden(err):
			if src.set(AccessNotPermitted, access.Explain(err).Error()) {
				changed()
			}
		case errors.As(err, new(apierrors.APIStatus)):
			w.log.Warn("watch failed", "resource", src.gvr.String(), "error", err)
		default:
			w.unreachable(err)
		}
		if w.failed != nil {
			w.failed(src.gvr, err)
		}
	})
}

func (w *watcher) instrument(src *source) {
	_ = src.informer.SetTransform(stripObject)
	w.onWatchError(src, func() { w.changed("") })
	notify := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if src.recovered() {
			w.changed("") // permitted again after a forbidden list
		}
		if m, err := meta.Accessor(obj); err == nil {
			w.changed(m.GetNamespace())
		}
	}
	_, _ = src.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, obj any) {
			if o, n := old.(metav1.Object), obj.(metav1.Object); o != nil && n != nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a relist of an unchanged object
			}
			notify(obj)
		},
		DeleteFunc: notify,
	})
}

// stripObject drops what the view never reads from cached objects: managed fields, the last
// applied configuration (a copy of the whole spec) and the values of pods' environment
// variables (so none can reach a page).
func stripObject(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Pod" && u.GetAPIVersion() == "v1" {
		for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", field)
			for _, c := range containers {
				if c, ok := c.(map[string]any); ok {
					envs, _ := c["env"].([]any)
					for _, e := range envs {
						if e, ok := e.(map[string]any); ok {
							delete(e, "value")
							delete(e, "valueFrom")
						}
					}
				}
			}
			if containers != nil {
				_ = unstructured.SetNestedSlice(u.Object, containers, "spec", field)
			}
		}
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			if _, ok := a["kubectl.kubernetes.io/last-applied-configuration"]; ok {
				delete(a, "kubectl.kubernetes.io/last-applied-configuration")
				m.SetAnnotations(a)
			}
		}
	}
	return obj, nil
}

// permitted asks the API server (SelfSubjectAccessReview) whether the user may list and watch
// a resource in a namespace (all of them, or cluster-wide, when ""). When the review itself
// fails, it answers yes and lets the informer's list tell.
func (w *watcher) permitted(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, string) {
	if w.clients.Access == nil {
		return true, ""
	}
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		}}
		res, err := w.clients.Access.Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			w.log.Warn("access review failed; trying to list instead", "resource", gvr.String(), "error", err)
			return true, ""
		}
		if !res.Status.Allowed {
			return false, access.New(verb, gvr.GroupResource(), namespace, nil).Message()
		}
	}
	return true, ""
}

func (w *watcher) source(gvr schema.GroupVersionResource) *source {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.sources[gvr]
}

func (w *watcher) all() []*source {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]*source, 0, len(w.sources))
	for _, s := range w.sources {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out
}

// List serves the resolver from the informer caches (live.Lister). A resource the cluster
// does not serve answers NotFound, one the user may not list Forbidden, as the API would.
func (w *watcher) List(_ context.Context, gvr schema.GroupVersionResource, namespace string, selector map[string]string) ([]*unstructured.Unstructured, error) {
	src := w.source(gvr)
	if src == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	if access, why := src.state(); access == AccessNotPermitted {
		return nil, apierrors.NewForbidden(gvr.GroupResource(), "", errors.New(why))
	}
	if src.informer == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	items, err := src.informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	sel := labels.SelectorFromSet(selector)
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		u, ok := it.(*unstructured.Unstructured)
		if ok && (selector == nil || sel.Matches(labels.Set(u.GetLabels()))) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// get returns one cached object by namespace and name.
func (w *watcher) get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, bool) {
	src := w.source(gvr)
	if src == nil || src.informer == nil {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := src.informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// objects returns every cached object of a resource.
func (w *watcher) objects(gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	src := w.source(gvr)
	if src == nil || src.informer == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, it := range src.informer.GetIndexer().List() {
		if u, ok := it.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out
}
