package webview

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
)

// Key names one workload.
type Key struct {
	Group, Kind, Namespace, Name string
}

// Path is the workload's page.
func (k Key) Path() string {
	group := k.Group
	if group == "" {
		group = "core"
	}
	return "/workloads/" + url.PathEscape(group) + "/" + url.PathEscape(k.Kind) + "/" + url.PathEscape(k.Namespace) + "/" + url.PathEscape(k.Name)
}

// Entry is one workload as resolved from the caches.
type Entry struct {
	Key Key
	// Workload is the engine's model; nil when Err says why it could not be resolved.
	Workload *definitions.Workload
	Err      string
	Created  time.Time
	// Gangs are the workload's gangs with the state of their PodGroups.
	Gangs []Gang
	// Unmatched are the workload's pods that its definition places in no role.
	Unmatched []definitions.FoundPod
	// Extended are the extended resources requested that are not GPUs.
	Extended []Resource
}

// State is the workload's state ("Unknown" when it could not be resolved).
func (e *Entry) State() string {
	if e.Workload == nil {
		return "Unknown"
	}
	return string(e.Workload.Status.State)
}

// Reason is why the workload is in its state.
func (e *Entry) Reason() string {
	if e.Workload == nil {
		return e.Err
	}
	return e.Workload.Status.Reason
}

// GPUs are the workload's GPUs (0 when it could not be resolved).
func (e *Entry) GPUs() float64 {
	if e.Workload == nil {
		return 0
	}
	return e.Workload.Totals.GPUs
}

// Pods returns the pods ready and expected.
func (e *Entry) Pods() (ready int, expected int64) {
	if e.Workload == nil {
		return 0, 0
	}
	if e.Workload.Live != nil {
		ready = e.Workload.Live.Ready
	}
	return ready, e.Workload.Totals.Pods
}

// Resource is a quantity of a named resource.
type Resource struct {
	Name  string
	Value float64
}

// Gang is one gang of a workload and the PodGroup it became.
type Gang struct {
	definitions.Group
	// PodGroup is the PodGroup's name; Found says whether it exists.
	PodGroup string
	Found    bool
	// Phase and Scheduled are the PodGroup's status (Pending when it has none).
	Phase     string
	Scheduled int32
	// Note says why the PodGroup's state is unknown (not permitted, not installed), or that
	// the gang is not in effect.
	Note string
}

// KindStatus is one workload kind a definition knows, and whether it is watched.
type KindStatus struct {
	Group, Kind string
	// Resource is the root resource watched (empty when the cluster serves none).
	Resource  schema.GroupVersionResource
	Access    Access
	Message   string
	Workloads int
}

// ResourceStatus is one watched resource (root, child kind, pods, PodGroups).
type ResourceStatus struct {
	Resource schema.GroupVersionResource
	Access   Access
	Message  string
}

// Snapshot is everything a page shows, as of one version. It is immutable.
type Snapshot struct {
	Version uint64
	// Namespace is the namespace watched ("" for all).
	Namespace string
	Host      string
	// Problem is a cluster-wide problem (unreachable); Syncing is true until the caches
	// first synced.
	Problem   string
	Syncing   bool
	Kinds     []KindStatus
	Resources []ResourceStatus
	// Entries are sorted by namespace, kind and name.
	Entries []*Entry
	byKey   map[Key]*Entry
}

// Lookup finds a workload.
func (s *Snapshot) Lookup(k Key) (*Entry, bool) {
	e, ok := s.byKey[k]
	return e, ok
}

// kindPlan is a definition and the root resource the cluster serves for it.
type kindPlan struct {
	def    *definitions.Definition
	root   schema.GroupVersionResource
	served bool
}

// resolver turns cached roots into entries.
type resolver struct {
	watcher *watcher
	live    *live.Resolver
	kinds   []kindPlan
}

// namespaces returns every namespace holding a root object of a watched kind.
func (r *resolver) namespaces() map[string]bool {
	out := map[string]bool{}
	for _, k := range r.kinds {
		if !k.served {
			continue
		}
		for _, o := range r.watcher.objects(k.root) {
			out[o.GetNamespace()] = true
		}
	}
	return out
}

// resolveNamespace resolves every workload of a namespace.
func (r *resolver) resolveNamespace(ctx context.Context, ns string) []*Entry {
	var out []*Entry
	for _, k := range r.kinds {
		if !k.served {
			continue
		}
		roots, err := r.watcher.List(ctx, k.root, ns, nil)
		if err != nil {
			continue // not permitted: shown on the kind
		}
		for _, root := range roots {
			out = append(out, r.resolve(ctx, k.def, root))
		}
	}
	return out
}

func (r *resolver) resolve(ctx context.Context, def *definitions.Definition, root *unstructured.Unstructured) *Entry {
	e := &Entry{
		Key:     Key{Group: def.GroupKind.Group, Kind: def.GroupKind.Kind, Namespace: root.GetNamespace(), Name: root.GetName()},
		Created: root.GetCreationTimestamp().Time,
	}
	res, err := r.live.Resolve(ctx, def, root)
	if err != nil {
		e.Err = explainResolve(err)
		return e
	}
	e.Workload = res.Workload
	e.Unmatched = unmatchedPods(res)
	e.Gangs = r.gangs(ctx, res.Workload)
	e.Extended = extendedResources(res.Workload.Totals)
	return e
}

func explainResolve(err error) string {
	if apierrors.IsForbidden(err) {
		return "not permitted: " + err.Error()
	}
	return "cannot resolve the workload: " + err.Error()
}

// gangs are the workload's gangs with the state of their PodGroups, read as tree and get read
// them (live.GangStates, here from the watcher's caches): a gang whose pods ask for a
// scheduler that does not gang them is not in effect.
func (r *resolver) gangs(ctx context.Context, w *definitions.Workload) []Gang {
	note := ""
	if err := r.live.GangStates(ctx, w, live.GangOptions{}); err != nil {
		note = "cannot read PodGroups: " + err.Error()
	}
	out := make([]Gang, 0, len(w.Groups))
	for _, g := range w.Groups {
		gang := Gang{Group: g, PodGroup: g.PodGroupName(w.Workload.Name), Note: note}
		if s := g.State; s != nil {
			gang.Found, gang.Phase, gang.Scheduled = s.Found, s.Phase, s.Scheduled
			switch {
			case s.NotInEffect != "":
				gang.Note = "not in effect: " + s.NotInEffect
			case s.Note != "":
				gang.Note = s.Note
			}
		}
		out = append(out, gang)
	}
	return out
}

// unmatchedPods are the pods found for the workload that no role holds.
func unmatchedPods(res *live.Result) []definitions.FoundPod {
	placed := map[string]bool{}
	for _, role := range res.Workload.Roles {
		for _, p := range role.FoundPods {
			placed[p.Name] = true
		}
		for _, in := range role.Instances {
			for _, p := range in.FoundPods {
				placed[p.Name] = true
			}
		}
	}
	var out []definitions.FoundPod
	for _, p := range res.Pods {
		if placed[p.GetName()] {
			continue
		}
		phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
		out = append(out, definitions.FoundPod{Name: p.GetName(), Phase: phase, Node: node})
	}
	return out
}

// extendedResources are the totals' extended resources that are not counted as GPUs.
func extendedResources(t definitions.Totals) []Resource {
	var out []Resource
	for name, q := range t.Resources {
		if _, gpu := t.GPUSources[string(name)]; gpu || !isExtended(name) {
			continue
		}
		out = append(out, Resource{Name: string(name), Value: q.AsApproximateFloat64()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// isExtended is Kubernetes' rule: a domain-prefixed name outside kubernetes.io, not a
// requests.* quota name.
func isExtended(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, "requests.")
}

// servedRoot returns the root resource of the first of a definition's versions the cluster
// serves.
func servedRoot(d *definitions.Definition, served map[schema.GroupVersionResource]bool) (schema.GroupVersionResource, bool) {
	for _, v := range d.Source.Spec.Workload.Versions {
		gvr, _ := meta.UnsafeGuessKindToResource(d.GroupKind.WithVersion(v))
		if served[gvr] {
			return gvr, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// plan decides the root resource of every definition and the resources to watch: the served
// roots, their child kinds, pods, and PodGroups.
func plan(reg *definitions.Registry, served map[schema.GroupVersionResource]bool) ([]kindPlan, []schema.GroupVersionResource) {
	var kinds []kindPlan
	seen := map[schema.GroupVersionResource]bool{}
	var resources []schema.GroupVersionResource
	add := func(gvr schema.GroupVersionResource) {
		if !seen[gvr] {
			seen[gvr] = true
			resources = append(resources, gvr)
		}
	}
	for _, d := range reg.All() {
		root, ok := servedRoot(d, served)
		kinds = append(kinds, kindPlan{def: d, root: root, served: ok})
		if !ok {
			continue
		}
		add(root)
		for _, c := range d.Children() {
			add(c.Resource)
		}
	}
	add(podsResource)
	add(podGroupsResource)
	return kinds, resources
}

// explain turns a client error into one clear line (as the CLI does): API errors keep the
// server's message; anything else means the cluster could not be reached.
func explain(host string, err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err.Error()
	}
	inner := err
	for errors.Unwrap(inner) != nil {
		inner = errors.Unwrap(inner)
	}
	return fmt.Sprintf("cannot reach the cluster at %s: %v", host, inner)
}
