// Package live resolves a workload on a running cluster: it lists the workload's child
// objects (only the kinds its definition names) and its pods with one targeted list call each,
// and expands the workload with them, so status rules that read `children` and `pods` run and
// every pod is placed in its role.
package live

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/internal/access"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// Resolver resolves workloads through a dynamic client.
type Resolver struct {
	Client dynamic.Interface
	// Pods, when set, lists pods instead of Client: a typed client, which can speak protobuf.
	Pods corev1client.PodsGetter
	// Options say what counts as a GPU; claim templates the pods name are read from the
	// cluster (resource.k8s.io/v1) when the options find none.
	Options definitions.ExpandOptions
	// Cache, when set, lists each resource once per namespace and serves every later list
	// from memory (selectors are applied locally): for resolving many workloads at once.
	Cache *ListCache
	// Lister, when set, serves every list instead of Client and Cache (for example from
	// informer caches, for a server that resolves workloads as they change).
	Lister Lister
	// SpecWhenForbidden, when set, does not fail a resolution the user may not list the
	// children or pods for: the workload is expanded from its spec alone, and the result
	// names every list that was refused.
	SpecWhenForbidden bool
}

// Lister lists the objects of a resource in a namespace whose labels have every pair of
// selector (nil: all of them). An error for a resource the cluster does not serve must satisfy
// apierrors.IsNotFound, as the API server's does. The objects are only read.
type Lister interface {
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, selector map[string]string) ([]*unstructured.Unstructured, error)
}

// Result is a resolved workload with the objects found for it.
type Result struct {
	Workload *definitions.Workload
	// Children are the child objects found, keyed like the `children` CEL variable.
	Children map[string][]*unstructured.Unstructured
	Pods     []*unstructured.Unstructured
	// Warnings are problems that did not stop the resolution (a child kind not installed).
	Warnings []string
	// Forbidden are the lists the user was refused (with SpecWhenForbidden), one line each
	// naming the list and the role to ask for, e.g. `cannot list jobs.batch in namespace ml:
	// forbidden; ask for the built-in view role in namespace ml`; Warnings say them too.
	Forbidden []string
}

// Resolve lists the children and pods of root and expands it. It makes one list call per
// child kind and one for pods, all at once: kinds with a label selector in the definition are
// listed by label; others are listed in the root's namespace and kept when the workload owns
// them, directly or through another child.
func (r *Resolver) Resolve(ctx context.Context, def *definitions.Definition, root *unstructured.Unstructured) (*Result, error) {
	ns := root.GetNamespace()
	res := &Result{Children: map[string][]*unstructured.Unstructured{}}
	type candidates struct {
		name     string // the child kind's name; "" for pods
		gvr      schema.GroupVersionResource
		kind     string
		selector map[string]string
		items    []*unstructured.Unstructured
		err      error
	}
	var lists []*candidates
	for _, c := range def.Children() {
		sel, err := c.LabelSelector(root)
		if err != nil {
			return nil, fmt.Errorf("selector of child kind %s: %w", c.GroupVersionKind.Kind, err)
		}
		lists = append(lists, &candidates{name: c.Name, gvr: c.Resource, kind: c.GroupVersionKind.Kind, selector: sel})
	}
	podSel, err := def.PodLabelSelector(root)
	if err != nil {
		return nil, fmt.Errorf("pod selector: %w", err)
	}
	lists = append(lists, &candidates{gvr: podsResource, kind: "Pod", selector: podSel})
	var wg sync.WaitGroup
	for _, l := range lists {
		wg.Go(func() { l.items, l.err = r.list(ctx, l.gvr, ns, l.selector) })
	}
	wg.Wait()
	found := lists[:0]
	var refused []*access.Refused
	for _, l := range lists {
		switch {
		case l.name != "" && apierrors.IsNotFound(l.err):
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s is not served by the cluster: no %s children", l.gvr.GroupResource(), l.kind))
		case r.SpecWhenForbidden && apierrors.IsForbidden(l.err):
			r := access.New("list", l.gvr.GroupResource(), ns, l.err)
			refused = append(refused, r)
			res.Forbidden = append(res.Forbidden, r.Message())
		case l.err != nil:
			return nil, l.err
		default:
			found = append(found, l)
		}
	}
	if len(refused) > 0 {
		return r.fromSpec(ctx, def, root, res, refused)
	}
	lists = found

	// Keep what the labels select, and what the workload owns, transitively; a workload that
	// is a pod (a bare pod) is its own pod.
	owners := map[types.UID]bool{root.GetUID(): true}
	kept := make([][]bool, len(lists))
	for i, l := range lists {
		kept[i] = make([]bool, len(l.items))
		for j, o := range l.items {
			if l.selector != nil || (l.name == "" && root.GetUID() != "" && o.GetUID() == root.GetUID()) {
				kept[i][j] = true
				owners[o.GetUID()] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i, l := range lists {
			for j, o := range l.items {
				if !kept[i][j] && ownedBy(o, owners) {
					kept[i][j], changed = true, true
					owners[o.GetUID()] = true
				}
			}
		}
	}
	liveData := &definitions.LiveData{Children: map[string][]map[string]any{}}
	for i, l := range lists {
		for j, o := range l.items {
			if !kept[i][j] {
				continue
			}
			if l.name == "" {
				res.Pods = append(res.Pods, o)
				liveData.Pods = append(liveData.Pods, o.Object)
			} else {
				res.Children[l.name] = append(res.Children[l.name], o)
				liveData.Children[l.name] = append(liveData.Children[l.name], o.Object)
			}
		}
	}
	opts := r.Options
	if opts.Claims == nil {
		opts.Claims = r.claims(ctx, root.GetNamespace())
	}
	w, err := def.ExpandWith(root, liveData, opts)
	if err != nil {
		return nil, err
	}
	w.Warnings = append(w.Warnings, res.Warnings...)
	res.Workload = w
	return res, nil
}

// fromSpec expands the workload from its spec alone, for a user who may not list all of its
// children or pods: a tree from some of them would look complete and be wrong.
func (r *Resolver) fromSpec(ctx context.Context, def *definitions.Definition, root *unstructured.Unstructured, res *Result, refused []*access.Refused) (*Result, error) {
	opts := r.Options
	if opts.Claims == nil {
		opts.Claims = r.claims(ctx, root.GetNamespace())
	}
	w, err := def.ExpandWith(root, nil, opts)
	if err != nil {
		return nil, err
	}
	res.Children = map[string][]*unstructured.Unstructured{}
	for _, f := range refused {
		res.Warnings = append(res.Warnings, f.Short()+": showing what the spec gives, without live children and pods; "+f.Role())
	}
	w.Warnings = append(w.Warnings, res.Warnings...)
	res.Workload = w
	return res, nil
}

// claims reads the claim templates pods name from the cluster: one GET per name, only for a
// workload whose pods name one.
func (r *Resolver) claims(ctx context.Context, namespace string) definitions.ClaimTemplates {
	return func(kind, ns, name string) (*unstructured.Unstructured, bool) {
		if ns == "" {
			ns = namespace
		}
		resource := "resourceclaimtemplates"
		if kind == "ResourceClaim" {
			resource = "resourceclaims"
		}
		obj, err := r.Client.Resource(schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: resource}).
			Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return obj, err == nil
	}
}

func (r *Resolver) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, sel map[string]string) ([]*unstructured.Unstructured, error) {
	if r.Lister != nil {
		return r.Lister.List(ctx, gvr, ns, sel)
	}
	if r.Cache != nil {
		return r.Cache.list(ctx, r.listOnce, gvr, ns, sel)
	}
	opts := metav1.ListOptions{}
	if sel != nil {
		opts.LabelSelector = labels.SelectorFromSet(sel).String()
	}
	return r.listOnce(ctx, gvr, ns, opts)
}

// listOnce makes one list call: pods through Pods when it is set, everything else through
// Client.
func (r *Resolver) listOnce(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, error) {
	if gvr == podsResource && r.Pods != nil {
		return listPods(ctx, r.Pods, ns, opts)
	}
	return listObjects(ctx, r.Client, gvr, ns, opts)
}

// listObjects makes one list call; an error names the resource and namespace.
func listObjects(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, error) {
	list, err := client.Resource(gvr).Namespace(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing %s in namespace %q: %w", gvr.GroupResource(), ns, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func ownedBy(o *unstructured.Unstructured, owners map[types.UID]bool) bool {
	for _, ref := range o.GetOwnerReferences() {
		if owners[ref.UID] {
			return true
		}
	}
	return false
}
