package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/internal/access"
	"github.com/workmap/workmap/internal/nativeapi"
	"github.com/workmap/workmap/live"
)

// workloadArg names a workload as the arguments of a command do, KIND/NAME or KIND NAME, the
// kind as kubectl names it (`jobset`, `lws`, `jobsets.jobset.x-k8s.io`), in the reader's
// namespace.
type workloadArg struct{ kind, name string }

func workloadArgOf(args []string) (workloadArg, error) {
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ := strings.Cut(args[0], "/")
		if kind != "" && name != "" {
			return workloadArg{kind, name}, nil
		}
	case len(args) == 2:
		return workloadArg{args[0], args[1]}, nil
	}
	return workloadArg{}, fmt.Errorf("name a workload as KIND/NAME (e.g. jobset/train), or read a manifest with -f FILE")
}

// resolvedWorkload is a workload read whole from the cluster: its kind as the cluster serves
// it, its object, and the workload its definition makes of it with its children, pods and
// gangs' states. Nothing changes it once Read returns it.
type resolvedWorkload struct {
	kind     servedKind
	object   *unstructured.Unstructured
	workload *definitions.Workload
}

// Read reads one workload: it resolves the kind as kubectl does, fetches the object, lists
// its children and pods and reads its gangs' states. A user who may read the workload but not
// its children or pods still gets the workload its spec gives, with a warning naming each
// list that was refused; a failure to read its gangs' states is a warning too.
func (r *workloadReader) Read(ctx context.Context, ref workloadArg) (*resolvedWorkload, error) {
	k, root, err := r.readObject(ctx, ref)
	if err != nil {
		return nil, err
	}
	r.warnPartOfAnother(k, root)
	resolver := r.resolver(nil)
	res, err := resolver.Resolve(ctx, k.def, root)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", k.def.GroupKind.Kind, root.GetNamespace(), root.GetName(), r.explain(err))
	}
	r.gangStates(ctx, resolver, res.Workload, r.gangs)
	return &resolvedWorkload{kind: k, object: root, workload: res.Workload}, nil
}

// readObject resolves the kind a reference names and fetches its object, with the definition
// in effect for it.
func (r *workloadReader) readObject(ctx context.Context, ref workloadArg) (servedKind, *unstructured.Unstructured, error) {
	k, err := r.kindNamed(ctx, ref.kind)
	if err != nil {
		return servedKind{}, nil, err
	}
	obj, err := r.dynamic.Resource(k.resource).Namespace(r.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	switch {
	case err == nil:
		return k, obj, nil
	case isObjectNotFound(err, ref.name):
		return servedKind{}, nil, fmt.Errorf("%s %q not found in namespace %q", k.def.GroupKind.Kind, ref.name, r.namespace)
	case apierrors.IsNotFound(err): // the resource went away since discovery
		return servedKind{}, nil, notInstalled(k.def)
	case apierrors.IsForbidden(err):
		return servedKind{}, nil, access.New("get", k.resource.GroupResource(), r.namespace, err)
	}
	return servedKind{}, nil, r.explain(err)
}

// resolver lists a workload's children and pods, a list refused leaving the workload its
// spec gives; with a cache, each child kind and the pods are listed once per namespace.
func (r *workloadReader) resolver(cache *live.ListCache) *live.Resolver {
	return &live.Resolver{Client: r.dynamic, Pods: r.pods, Cache: cache, Options: r.expand, SpecWhenForbidden: true}
}

// isObjectNotFound tells a missing object from a resource the server does not serve.
func isObjectNotFound(err error, name string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name == name
}

// warnPartOfAnother says when the object is a Job or a pod something controls (a JobSet's Job,
// a Job's pod): workmap-scheduler gangs its pods with the top of their owner chain, which
// `groups` shows, not as the object's own tree does.
func (r *workloadReader) warnPartOfAnother(k servedKind, root *unstructured.Unstructured) {
	if _, native := grouper.DefaultNatives()[k.def.GroupKind]; !native {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(root); ref != nil {
		r.warnf("%s %s belongs to %s %s: workmap-scheduler gangs its pods with the %s's (see `workmap groups %s/%s`)",
			strings.ToLower(k.def.GroupKind.Kind), objectName(root.GetNamespace(), root.GetName()), ref.Kind, ref.Name, ref.Kind, strings.ToLower(k.def.GroupKind.Kind), root.GetName())
	}
}

// gangStates reads the live state of the workload's gangs into it; a failure to read them is
// a warning (the workload stands without them). The native PodGroups are those the cluster
// serves unless o names them.
//
// Discovery is read from the disk cache, which may be another cluster's that had the same
// address, or this one's before an upgrade. When the cluster contradicts it (a pod names a
// native PodGroup the cache says is not served, or the cached version answers "not found"),
// discovery is read again from the cluster, once.
func (r *workloadReader) gangStates(ctx context.Context, resolver *live.Resolver, w *definitions.Workload, o live.GangOptions) {
	discovered := o.NativePodGroups == nil
	if discovered {
		o.NativePodGroups = r.nativePodGroups()
		if o.NativePodGroups == nil && w.Live != nil && w.Live.InNativeGroups > 0 {
			o.NativePodGroups, _ = r.rediscoverNativePodGroups(nil)
		}
	}
	err := resolver.GangStates(ctx, w, o)
	if errors.Is(err, live.ErrNativePodGroupsNotServed) && discovered {
		if gvr, again := r.rediscoverNativePodGroups(o.NativePodGroups); again {
			o.NativePodGroups = gvr
			err = resolver.GangStates(ctx, w, o)
		}
	}
	if err != nil {
		r.warnf("%s %s/%s: reading its gangs' PodGroups: %v", w.Workload.Kind, w.Workload.Namespace, w.Workload.Name, r.explain(err))
	}
}

// servedPodGroups is the native PodGroup resource discovery says the cluster serves (nil:
// none), looked up once per process and again only when discovery was read again.
type servedPodGroups struct {
	mu   sync.Mutex
	read bool
	// fresh says discovery had been read from the cluster, not the disk cache, when gvr was
	// looked up.
	fresh bool
	gvr   *schema.GroupVersionResource
}

// nativePodGroups is the native PodGroup resource the cluster serves (nil: none).
func (r *workloadReader) nativePodGroups() *schema.GroupVersionResource {
	r.native.mu.Lock()
	defer r.native.mu.Unlock()
	return r.lookUpNativePodGroups()
}

// rediscoverNativePodGroups reads discovery again from the cluster, unless it was already
// read from there, and looks the native PodGroups up in it; again says the caller, which
// used had, may have another answer.
func (r *workloadReader) rediscoverNativePodGroups(had *schema.GroupVersionResource) (gvr *schema.GroupVersionResource, again bool) {
	r.native.mu.Lock()
	defer r.native.mu.Unlock()
	reread := !r.discovery.Fresh()
	if reread {
		r.discovery.Invalidate()
		r.native.read = false
	}
	gvr = r.lookUpNativePodGroups()
	return gvr, reread || !sameResource(gvr, had)
}

// lookUpNativePodGroups looks the native PodGroups up when not yet looked up in discovery as
// it is now; r.native.mu is held.
func (r *workloadReader) lookUpNativePodGroups() *schema.GroupVersionResource {
	if !r.native.read || (!r.native.fresh && r.discovery.Fresh()) {
		r.native.gvr = servedNativePodGroups(r.discovery)
		r.native.read, r.native.fresh = true, r.discovery.Fresh()
	}
	return r.native.gvr
}

func sameResource(a, b *schema.GroupVersionResource) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// servedNativePodGroups is the native PodGroup resource discovery lists (nil: none), read from
// what discovery already holds (a mapper lookup of a kind the cluster does not serve would
// read discovery again).
func servedNativePodGroups(disc discovery.DiscoveryInterface) *schema.GroupVersionResource {
	// A group whose discovery failed (an aggregated API that is down, a CRD being
	// installed) fails the call but not the others: native PodGroups are looked up whenever
	// scheduling.k8s.io was listed.
	groups, err := disc.ServerGroups()
	if groups == nil || (err != nil && !discovery.IsGroupDiscoveryFailedError(err)) {
		return nil
	}
	for _, g := range groups.Groups {
		if g.Name != nativeapi.Group {
			continue
		}
		for _, version := range nativeapi.Versions {
			if !slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == version.Name }) {
				continue
			}
			resources, err := disc.ServerResourcesForGroupVersion(nativeapi.Group + "/" + version.Name)
			if err != nil {
				continue
			}
			for _, res := range resources.APIResources {
				if res.Name == "podgroups" {
					gvr := version.PodGroups()
					return &gvr
				}
			}
		}
	}
	return nil
}

// objectName names an object as kubectl does in messages: namespace/name, or name alone.
func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
