package grouper

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// Owner is a pod's top-level workload: the end of its chain of controller owner references.
type Owner struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
	// ResourceVersion of the top owner's metadata as cached: readers of the full object can
	// reuse what they read for the same version.
	ResourceVersion string
	// Generation of the top owner: its spec's version (status updates do not change it).
	Generation int64
	// Labels and Annotations of the top owner (from its metadata).
	Labels      map[string]string
	Annotations map[string]string
	// Depth is how many controller owners lie from the object up to the top owner.
	Depth int
	// Skip is true when the object or any owner on the chain asks workmap to leave it alone
	// (annotation workmap.dev/skip: "true").
	Skip bool
}

// SkipAnnotation "true" on a pod or any of its owners leaves the pod alone.
const SkipAnnotation = "workmap.dev/skip"

// GroupKind of the owner.
func (o Owner) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).GroupKind()
}

// OwnerResolver walks controller owner references up to the top owner through cached
// informers, one per owner kind, started the first time that kind is seen: metadata-only,
// unless a grouper reads the kind's objects in full (see Object). It never GETs owners from
// the API server per pod.
type OwnerResolver struct {
	client metadata.Interface
	// objects reads full objects (nil: Object fails).
	objects dynamic.Interface
	mapper  meta.RESTMapper
	// Retry bounds the wait for an owner that is not in the cache yet (it may have been
	// created a moment ago).
	Retry wait.Backoff
	// MaxDepth bounds the chain (cycles are caught earlier; this bounds absurd chains).
	MaxDepth int
	// ReadsObject says whether the grouper of a kind reads its objects in full: such a kind's
	// cache holds full objects from the start, rather than metadata first and full objects
	// once one is read (a second list before the first gang of a new kind is decided).
	ReadsObject func(schema.GroupKind) bool
	// WatchErrors counts the failed lists and watches of the owner caches (nil: not counted).
	// Set it before the first lookup.
	WatchErrors *WatchErrors

	mu     sync.Mutex
	caches map[schema.GroupVersionResource]*ownerCache
	// filling are the full caches started in place of a metadata-only one, until synced.
	filling  map[schema.GroupVersionResource]*ownerCache
	mappings map[ownerKind]ownerMapping
	stop     <-chan struct{}
	// specChanged is told of owners whose spec or annotations changed (nil: nobody).
	specChanged func(old, obj metav1.Object)
	// deleted is told of the UID of every cached owner deleted (nil: nobody).
	deleted func(types.UID)
}

// ownerKind is an owner reference's kind as written (no parsing per lookup).
type ownerKind struct{ apiVersion, kind string }

// ownerMapping is the resource of one owner kind; full when its objects are read in full.
type ownerMapping struct {
	resource   schema.GroupVersionResource
	namespaced bool
	full       bool
}

// ownerCache is the informer of one resource: metadata-only, or full objects.
type ownerCache struct {
	informer cache.SharedIndexInformer
	full     bool
	quit     chan struct{}
	// failed is the last error of the informer's list or watch.
	failed atomic.Pointer[error]
}

// mapping finds (once per kind) the resource of an owner kind.
func (r *OwnerResolver) mapping(apiVersion, kind string) (ownerMapping, error) {
	r.mu.Lock()
	m, ok := r.mappings[ownerKind{apiVersion, kind}]
	r.mu.Unlock()
	if ok {
		return m, nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ownerMapping{}, err
	}
	rm, err := r.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return ownerMapping{}, err
	}
	m = ownerMapping{resource: rm.Resource, namespaced: rm.Scope.Name() == meta.RESTScopeNameNamespace,
		full: r.objects != nil && r.ReadsObject != nil && r.ReadsObject(rm.GroupVersionKind.GroupKind())}
	r.mu.Lock()
	r.mappings[ownerKind{apiVersion, kind}] = m
	r.mu.Unlock()
	return m, nil
}

// store returns the synced cache of an owner kind, started on first use (with full objects
// when full is true or the kind's objects are read in full, replacing a metadata-only one once
// the full one has synced).
func (r *OwnerResolver) store(ctx context.Context, apiVersion, kind string, full bool) (ownerMapping, cache.Store, error) {
	m, err := r.mapping(apiVersion, kind)
	if err != nil {
		return ownerMapping{}, nil, err
	}
	c, err := r.cache(ctx, m.resource, full || m.full)
	if err != nil {
		return ownerMapping{}, nil, err
	}
	return m, c.informer.GetStore(), nil
}

// NewOwnerResolver returns a resolver whose informers run until stop is closed; objects reads
// the full objects of the kinds groupers need in full (nil when none are read). A kind the
// mapper does not know is looked up again in discovery (at most every few seconds), so owners
// of a CRD installed after start resolve.
func NewOwnerResolver(client metadata.Interface, objects dynamic.Interface, mapper meta.RESTMapper, stop <-chan struct{}) *OwnerResolver {
	return &OwnerResolver{
		client:   client,
		objects:  objects,
		mapper:   Rediscovering(mapper),
		Retry:    wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 5, Cap: time.Second},
		MaxDepth: 10,
		caches:   map[schema.GroupVersionResource]*ownerCache{},
		filling:  map[schema.GroupVersionResource]*ownerCache{},
		mappings: map[ownerKind]ownerMapping{},
		stop:     stop,
	}
}

// TopOwner resolves the top owner of an object (a pod). An object without a controller owner
// is its own top owner. On a missing owner (after the bounded retry) or a cycle it returns the
// last owner it could read together with the error, so the caller can fall back and report.
func (r *OwnerResolver) TopOwner(ctx context.Context, obj metav1.Object, apiVersion, kind string) (Owner, error) {
	return topOwner(ctx, r, r.MaxDepth, obj, apiVersion, kind)
}

// TopOwners resolves an object's top owner: OwnerResolver from informer caches inside the
// scheduler, OwnerReader with one read per owner for commands.
type TopOwners interface {
	TopOwner(ctx context.Context, obj metav1.Object, apiVersion, kind string) (Owner, error)
}

// get reads an owner's metadata from its kind's informer cache, retrying briefly when it is
// not there yet; a cached object with another UID is a different (recreated) object.
func (r *OwnerResolver) get(ctx context.Context, ref metav1.OwnerReference, namespace string) (metav1.Object, error) {
	mapping, store, err := r.store(ctx, ref.APIVersion, ref.Kind, false)
	if err != nil {
		return nil, fmt.Errorf("controller owner %s %s (metadata.ownerReferences, apiVersion %s): %w", ref.Kind, ref.Name, ref.APIVersion, err)
	}
	key := mapping.key(namespace, ref.Name)
	if found, err := cachedOwner(store, key, ref.UID); found != nil || err != nil {
		return found, err // the common case: the owner is cached
	}
	var found metav1.Object
	err = wait.ExponentialBackoffWithContext(ctx, r.Retry, func(context.Context) (bool, error) {
		var err error
		found, err = cachedOwner(store, key, ref.UID)
		return found != nil, err
	})
	if found == nil {
		if err == nil || wait.Interrupted(err) {
			err = fmt.Errorf("%w: %s %s (uid %s) in namespace %q, named by metadata.ownerReferences", ErrOwnerNotFound, strings.ToLower(ref.Kind), ref.Name, ref.UID, namespace)
		}
		return nil, err
	}
	return found, nil
}

// cachedOwner returns the cached object of a key if it has the expected UID (another UID is a
// different, recreated object).
func cachedOwner(store cache.Store, key string, uid types.UID) (metav1.Object, error) {
	item, exists, err := store.GetByKey(key)
	if err != nil || !exists {
		return nil, err
	}
	if o, ok := item.(metav1.Object); ok && o.GetUID() == uid {
		return o, nil
	}
	return nil, nil
}

// key is the cache key of an object of the kind.
func (m ownerMapping) key(namespace, name string) string {
	if m.namespaced {
		return namespace + "/" + name
	}
	return name
}

// cache returns the synced cache of a resource, starting it on first use. Asked for full
// objects where a metadata-only cache runs, it starts a full one and swaps it in once synced
// (the metadata one serves meanwhile, then stops): one watch per resource.
func (r *OwnerResolver) cache(ctx context.Context, gvr schema.GroupVersionResource, full bool) (*ownerCache, error) {
	if full && r.objects == nil {
		return nil, fmt.Errorf("%s: no client reads full objects", gvr.GroupResource())
	}
	r.mu.Lock()
	c, ok := r.caches[gvr]
	swap := false
	switch {
	case !ok:
		c = r.newCache(gvr, full)
		r.caches[gvr] = c
	case full && !c.full:
		if c, ok = r.filling[gvr]; !ok {
			c = r.newCache(gvr, true)
			r.filling[gvr] = c
		}
		swap = true
	}
	r.mu.Unlock()
	if err := c.waitForSync(ctx); err != nil {
		return nil, fmt.Errorf("the %s cache: %w", gvr.GroupResource(), err)
	}
	if swap {
		r.mu.Lock()
		if replaced := r.caches[gvr]; replaced != c {
			r.caches[gvr] = c
			delete(r.filling, gvr)
			close(replaced.quit)
		}
		r.mu.Unlock()
	}
	return c, nil
}

// failedListPoll is how often a wait for a cache to fill checks whether its list failed (the
// fill itself is waited for on the informer's channel).
const failedListPoll = 20 * time.Millisecond

// unreadableGrace is how long a wait for a cache goes on after its list failed: long enough for
// the informer's next list (a CRD just installed may not be served for a moment), short
// enough that an owner kind that cannot be read holds no grouper worker.
const unreadableGrace = 500 * time.Millisecond

// waitForSync waits until the cache is filled; a list that failed (forbidden, the kind no
// longer served) ends the wait with its error within unreadableGrace rather than holding the
// caller until ctx ends. The informer keeps retrying: a later wait succeeds once a list does.
func (c *ownerCache) waitForSync(ctx context.Context) error {
	if c.informer.HasSynced() { // every decision asks: no allocation when the cache is filled
		return nil
	}
	synced := c.informer.HasSyncedChecker().Done()
	start := time.Now()
	tick := time.NewTicker(failedListPoll)
	defer tick.Stop()
	for {
		select {
		case <-synced:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for it to fill: %w", context.Cause(ctx))
		case <-tick.C:
			if failed := c.failed.Load(); failed != nil && time.Since(start) >= unreadableGrace {
				return fmt.Errorf("%w: %w", ErrOwnerUnreadable, *failed)
			}
		}
	}
}

// newCache starts the informer of a resource; it runs until the resolver stops or it is
// replaced.
func (r *OwnerResolver) newCache(gvr schema.GroupVersionResource, full bool) *ownerCache {
	var inf cache.SharedIndexInformer
	if full {
		inf = dynamicinformer.NewFilteredDynamicInformer(r.objects, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	} else {
		inf = metadatainformer.NewFilteredMetadataInformer(r.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	}
	_ = inf.SetTransform(dropManagedFields) // grouping never reads them; often half an object's metadata
	if r.specChanged != nil {
		_, _ = inf.AddEventHandler(specChangeHandler(r.specChanged))
	}
	if r.deleted != nil {
		_, _ = inf.AddEventHandler(deleteHandler(r.deleted))
	}
	c := &ownerCache{informer: inf, full: full, quit: make(chan struct{})}
	_ = r.WatchErrors.Watch(inf, gvr.GroupResource(), func(err error) {
		if WatchErrorReason(err) != "" {
			c.failed.Store(&err)
		}
	})
	done := make(chan struct{})
	go func() {
		select {
		case <-r.stop:
		case <-c.quit:
		}
		close(done)
	}()
	go inf.Run(done)
	return c
}

// OnSpecChange has f told of every cached owner whose generation or annotations change (what
// grouping depends on of it; status updates do not count), in the caches running now and in
// those started later. Only one f is kept.
func (r *OwnerResolver) OnSpecChange(f func(old, obj metav1.Object)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specChanged = f
	r.handleRunningLocked(specChangeHandler(f))
}

// handleRunningLocked adds a handler to the caches running or filling now; newCache adds it to
// later ones. r.mu is held.
func (r *OwnerResolver) handleRunningLocked(h cache.ResourceEventHandler) {
	for _, c := range r.caches {
		_, _ = c.informer.AddEventHandler(h)
	}
	for _, c := range r.filling {
		_, _ = c.informer.AddEventHandler(h)
	}
}

// specChangeHandler calls f for updates that change an object's generation or annotations.
func specChangeHandler(f func(old, obj metav1.Object)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		old, okOld := oldObj.(metav1.Object)
		obj, okNew := newObj.(metav1.Object)
		if okOld && okNew && (old.GetGeneration() != obj.GetGeneration() || !maps.Equal(old.GetAnnotations(), obj.GetAnnotations())) {
			f(old, obj)
		}
	}}
}

// OnDelete has f told of the UID of every cached owner that is deleted, in the caches running
// now and in those started later. Only one f is kept.
func (r *OwnerResolver) OnDelete(f func(types.UID)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = f
	r.handleRunningLocked(deleteHandler(f))
}

// deleteHandler calls f with the UID of each deleted object (also one whose deletion the
// watch missed and the next list found).
func deleteHandler(f func(types.UID)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if o, ok := obj.(metav1.Object); ok {
			f(o.GetUID())
		}
	}}
}

// Watching reports the resources whose metadata the resolver caches.
func (r *OwnerResolver) Watching() []schema.GroupVersionResource {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]schema.GroupVersionResource, 0, len(r.caches))
	for gvr := range r.caches {
		out = append(out, gvr)
	}
	return out
}

// Mapper is the resolver's REST mapper (one that reads discovery again on a miss), for others
// in the process that map kinds to resources: one discovery per process.
func (r *OwnerResolver) Mapper() meta.RESTMapper { return r.mapper }

// rediscoverEvery bounds how often a miss makes the mapper read discovery again.
const rediscoverEvery = 2 * time.Second

// Rediscovering returns a mapper that, when a kind is not found, reads discovery again (at most
// every rediscoverEvery) and retries: kinds whose CRD was installed after the first lookup
// resolve, and a kind that does not exist costs a discovery read now and then, not per lookup.
// A mapper that cannot be reset is returned as it is.
func Rediscovering(m meta.RESTMapper) meta.RESTMapper {
	if _, ok := m.(*rediscoveringMapper); ok {
		return m
	}
	r, ok := m.(meta.ResettableRESTMapper)
	if !ok {
		return m
	}
	return &rediscoveringMapper{ResettableRESTMapper: r, every: rate.Sometimes{Interval: rediscoverEvery}}
}

type rediscoveringMapper struct {
	meta.ResettableRESTMapper
	every rate.Sometimes
}

func (m *rediscoveringMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	rm, err := m.ResettableRESTMapper.RESTMapping(gk, versions...)
	if !meta.IsNoMatchError(err) {
		return rm, err
	}
	reset := false
	m.every.Do(func() { m.Reset(); reset = true })
	if !reset {
		return rm, err
	}
	return m.ResettableRESTMapper.RESTMapping(gk, versions...)
}

// dropManagedFields removes metadata.managedFields from cached objects.
func dropManagedFields(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// Prepare starts and fills the cache of an owner kind ahead of its first pod (an admission
// decision cannot wait for a cache to fill), with full objects when full is true (the kind is
// a top owner whose grouper reads it in full). A kind the cluster does not serve is not an
// error.
func (r *OwnerResolver) Prepare(ctx context.Context, apiVersion, kind string, full bool) error {
	_, _, err := r.store(ctx, apiVersion, kind, full)
	if meta.IsNoMatchError(err) {
		return nil
	}
	return err
}
