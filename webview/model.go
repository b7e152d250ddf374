package webview

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/internal/access"
	"github.com/workmap/workmap/live"
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
	// PodUses are the workload's pods found, each with its node and the GPUs it asks for.
	PodUses []PodUse
}

// BoundGPUs are the GPUs the workload's pods bound to a node ask for (finished pods hold
// none).
func (e *Entry) BoundGPUs() float64 { return sumGPUs(e.PodUses, PodUse.Bound) }

// WaitingGPUs are the GPUs the workload's pods not bound to a node yet ask for (pods not
// created yet are not counted).
func (e *Entry) WaitingGPUs() float64 { return sumGPUs(e.PodUses, PodUse.Waiting) }

// PodUse is one pod, where it runs and the GPUs it asks for.
type PodUse struct {
	Namespace, Name string
	// Node is the node it is bound to ("" while it waits for one); Phase its phase.
	Node, Phase string
	// Role is the workload's role it belongs to ("" for a pod no role places, or of no
	// workload).
	Role string
	// GPUs: of a pod its role places, the engine's GPUs per pod of the role (GPU resources,
	// DRA devices, fractions); of any other pod, the GPU resources its containers request.
	GPUs float64
}

// Finished says the pod ended: it holds no node's resources any more.
func (p PodUse) Finished() bool {
	return p.Phase == string(corev1.PodSucceeded) || p.Phase == string(corev1.PodFailed)
}

// Bound says the pod holds its node's resources: bound and not finished.
func (p PodUse) Bound() bool { return p.Node != "" && !p.Finished() }

// Waiting says the pod waits for a node.
func (p PodUse) Waiting() bool { return p.Node == "" && !p.Finished() }

func sumGPUs(pods []PodUse, keep func(PodUse) bool) float64 {
	t := 0.0
	for _, p := range pods {
		if keep(p) {
			t += p.GPUs
		}
	}
	return t
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
	// PodGroup is the PodGroup's name; Found says whether it exists; MadeBy who made it when
	// workmap did not (another controller's PodGroup of the gang's name, which
	// workmap-scheduler defers to).
	PodGroup string
	Found    bool
	MadeBy   string
	// Phase and Scheduled are the PodGroup's status (Pending when it has none).
	Phase     string
	Scheduled int32
	// Note says why the PodGroup's state is unknown (not permitted, not installed), or that
	// the gang is not in effect.
	Note string
	// Done is how the gang ended, once its workload did (its state: Completed, Failed) or
	// every pod of it found succeeded (Completed): its PodGroup's phase and counts then say
	// nothing of it.
	Done string
	// Required and Preferred are the topology levels the gang asks for (its PodGroup's
	// annotations, else its definition's); Domain is where workmap-scheduler placed it
	// (label=value, from the PodGroup).
	Required, Preferred, Domain string
	// Size is the pods the gang holds when complete, GPUs what they ask for.
	Size int64
	GPUs float64
	// Pending counts its pods waiting for a node; Reasons are the scheduler's words on them
	// (their PodScheduled condition, as its FailedScheduling events say it), distinct, the
	// most telling first.
	Pending int
	Reasons []string
	// Priority is the gang's priority, the lowest of its pods' (nil: none says);
	// LastPreemption its newest preemption as a victim (nil: none in the events cached).
	Priority       *int32
	LastPreemption *definitions.Preemption
}

// Waiting says the gang waits for the scheduler: some of its pods wait for a node.
func (g *Gang) Waiting() bool {
	return g.Pending > 0 && g.Done == "" && !strings.HasPrefix(g.Note, "not in effect")
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
	// Nodes are the cluster's nodes, by name; NodeAccess and NodeMessage say whether they
	// could be read (their GPUs are unknown when they could not).
	Nodes       []Node
	NodeAccess  Access
	NodeMessage string
	// OtherPods are the pods bound to a node and not finished that no workload shown holds,
	// with the GPUs they ask for (only those that ask for some).
	OtherPods []PodUse
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
			if live.PartOfAnother(root, k.def.GroupKind, r.isWorkload) {
				continue // shown under the workload that controls it, or part of its owner's
			}
			out = append(out, r.resolve(ctx, k.def, root))
		}
	}
	return out
}

// isWorkload says whether a kind is one of the workload kinds served.
func (r *resolver) isWorkload(gk schema.GroupKind) bool {
	return slices.ContainsFunc(r.kinds, func(k kindPlan) bool { return k.served && k.def.GroupKind == gk })
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
	e.PodUses = podUses(res, gpuResources(r.live.Options))
	e.Gangs = r.gangs(ctx, res)
	e.Extended = extendedResources(res.Workload.Totals)
	return e
}

func explainResolve(err error) string {
	if apierrors.IsForbidden(err) {
		return "not permitted: " + access.Explain(err).Error()
	}
	return "cannot resolve the workload: " + err.Error()
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
