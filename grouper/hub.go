package grouper

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/lru"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// GroupedAnnotation marks pods whose pod-group label workmap set (so it is not mistaken for
// an operator's PodGroup when the pod is grouped again).
const GroupedAnnotation = "workmap.dev/grouped"

// Source says where a grouping decision came from.
type Source string

// The sources, in the order the hub consults them.
const (
	SourceSkip     Source = "skip"     // workmap.dev/skip: the pod is left alone
	SourceExisting Source = "existing" // the pod already names its PodGroup (an operator's)
	// SourceSchedulingGroup: the pod points at a native scheduling.k8s.io PodGroup
	// (spec.schedulingGroup); workmap makes no gang of its own for it.
	SourceSchedulingGroup Source = "scheduling-group"
	SourceNative          Source = "native"     // a Go grouper for the top owner's kind
	SourceDefinition      Source = "definition" // a definition's gang hints
	SourceNone            Source = "none"       // no gang: the pod schedules on its own
)

// Decision is how one pod is grouped.
type Decision struct {
	Source Source
	Owner  Owner
	// PodGroup is the name of the pod's PodGroup in its namespace ("" for none).
	PodGroup string
	// Desired are the PodGroups the workload needs (native and definition sources).
	Desired []*v1alpha1.PodGroup
	// Problem is a non-fatal issue to report as an event (e.g. an owner not found).
	Problem error
	// Parts are the pod's parts of its gang, one per nested level, outer first, when the gang
	// places its parts in domains of their own (see PartPlacer).
	Parts []string
}

// Hub decides how pods are grouped. Its sources are plain values set by the caller: no global
// registration.
type Hub struct {
	Owners TopOwners
	// Natives are the Go groupers by top-owner kind; they take precedence over definitions.
	Natives map[schema.GroupKind]KindGrouper
	// Definitions returns the definitions in effect (they may change while running).
	Definitions func() *definitions.Registry
	// Object reads the full top-owner object; called only when a grouper needs more than
	// metadata.
	Object func(ctx context.Context, owner Owner) (*unstructured.Unstructured, error)

	// owners are the gangs of the workloads grouped last, by top-owner UID; made on first use.
	ownersOnce sync.Once
	owners     *lru.Cache
	// cacheSize bounds owners; zero means maxCachedWorkloads.
	cacheSize int
}

// ownerGangs are the gangs of one version of a top owner; the owner object itself is not kept
// (a Job read in full is ~12 KB; its gangs a few words).
type ownerGangs struct {
	version ownerVersion
	def     *definitions.Definition // the definition they come from, nil for a native grouper
	gangs   Gangs
	desired []*v1alpha1.PodGroup // their PodGroups; shared, never modified
	// names are the PodGroup names of the gangs, by the gang as Gangs gives it.
	names map[*definitions.Group]string
}

// podGroupOf names the PodGroup of one of the gangs.
func (c ownerGangs) podGroupOf(g *definitions.Group, owner string) string {
	if name, ok := c.names[g]; ok {
		return name
	}
	return g.PodGroupName(owner)
}

// ownerVersion is what a grouping decision depends on of an owner: its spec's generation and
// its annotations (a definition may read any of them: the min-member and topology overrides,
// a framework's own topology annotations), or its resource version for objects without a
// generation.
type ownerVersion struct {
	generation      int64
	annotations     uint64
	resourceVersion string
}

func versionOf(owner Owner) ownerVersion {
	if owner.Generation == 0 {
		return ownerVersion{resourceVersion: owner.ResourceVersion}
	}
	return ownerVersion{generation: owner.Generation, annotations: hashAnnotations(owner.Annotations)}
}

// hashAnnotations is a hash of annotations, the same for the same keys and values in this
// process (whatever their order): the sum of each pair's hash, without sorting (the hub asks it
// for every pod it groups).
func hashAnnotations(annotations map[string]string) uint64 {
	var sum uint64
	var h maphash.Hash
	h.SetSeed(annotationSeed)
	for k, v := range annotations {
		h.Reset()
		_, _ = h.WriteString(k)
		_ = h.WriteByte(0)
		_, _ = h.WriteString(v)
		sum += h.Sum64()
	}
	return sum
}

// annotationSeed seeds hashAnnotations for the life of the process.
var annotationSeed = maphash.MakeSeed()

// maxCachedWorkloads bounds the workloads the hub keeps grouped: past it, the workload whose
// pods were grouped least recently is forgotten first (its next pod groups it again). Owners deleted are
// also forgotten when their PodGroups go (see Controller).
const maxCachedWorkloads = 10_000

// ownerCache is the cache of workloads grouped, made on first use.
func (h *Hub) ownerCache() *lru.Cache {
	h.ownersOnce.Do(func() {
		size := h.cacheSize
		if size <= 0 {
			size = maxCachedWorkloads
		}
		h.owners = lru.New(size)
	})
	return h.owners
}

// Decide groups one pod: the first source that applies wins.
func (h *Hub) Decide(ctx context.Context, pod *corev1.Pod) (Decision, error) {
	if pod.Annotations[SkipAnnotation] == "true" {
		return Decision{Source: SourceSkip}, nil
	}
	if name := pod.Labels[v1alpha1.PodGroupLabel]; name != "" && pod.Annotations[GroupedAnnotation] != "true" {
		return Decision{Source: SourceExisting, PodGroup: name}, nil
	}
	if pod.Spec.SchedulingGroup != nil {
		return Decision{Source: SourceSchedulingGroup}, nil
	}
	owner, problem := h.Owners.TopOwner(ctx, pod, "v1", "Pod")
	if owner.Skip {
		return Decision{Source: SourceSkip, Owner: owner}, nil
	}
	// A bare pod is its own owner: grouped each time, from its own metadata.
	og, source, err := h.gangsOf(ctx, owner, owner.UID != pod.UID)
	d := Decision{Source: source, Owner: owner, Problem: problem}
	switch {
	case err != nil && isExpansionError(err):
		// The object does not fit its definition: holding its pods forever would be worse
		// than scheduling them without a gang.
		d.Source, d.Problem = SourceNone, errors.Join(problem, err)
		return d, nil
	case err != nil:
		return Decision{}, err
	case og.gangs == nil:
		return d, nil
	}
	g, err := og.gangs.GroupOf(pod)
	if g == nil {
		if source == SourceDefinition {
			d.Source = SourceNone
		}
		d.Problem = errors.Join(problem, err)
		return d, nil
	}
	d.PodGroup, d.Desired = og.podGroupOf(g, owner.Name), og.desired
	if pp, ok := og.gangs.(PartPlacer); ok {
		d.Parts = pp.PartsOf(pod, g)
	}
	return d, nil
}

func isExpansionError(err error) bool {
	var bad *ExpansionError
	return errors.As(err, &bad)
}

// OwnerGangs are a top owner's gangs as Decide forms them for its pods.
type OwnerGangs struct {
	// Source is SourceNative, SourceDefinition or SourceNone (no grouper for the kind).
	Source Source
	// Gangs is nil for SourceNone.
	Gangs Gangs
	// PodGroups are the PodGroups the gangs become.
	PodGroups []*v1alpha1.PodGroup
}

// GangsOf returns the gangs of a top owner (as TopOwner resolves it) exactly as its pods are
// grouped.
func (h *Hub) GangsOf(ctx context.Context, owner Owner) (OwnerGangs, error) {
	og, source, err := h.gangsOf(ctx, owner, true)
	if err != nil {
		return OwnerGangs{}, err
	}
	return OwnerGangs{Source: source, Gangs: og.gangs, PodGroups: og.desired}, nil
}

// grouperFor finds what groups a top-owner kind: a native grouper, else a definition with
// gang hints.
func (h *Hub) grouperFor(gk schema.GroupKind) (KindGrouper, *definitions.Definition, Source) {
	if native, ok := h.Natives[gk]; ok {
		return native, nil, SourceNative
	}
	if h.Definitions != nil {
		if def, ok := h.Definitions().Lookup(gk); ok && def.Source.Spec.Gang != nil {
			return DefinitionGrouper{Definition: def}, def, SourceDefinition
		}
	}
	return nil, nil, SourceNone
}

// readsObject says whether the grouper of a kind reads its objects in full (a definition, or
// a built-in grouper that is not metadata-only).
func (h *Hub) readsObject(gk schema.GroupKind) bool {
	grouper, _, _ := h.grouperFor(gk)
	if grouper == nil {
		return false
	}
	_, metadataOnly := grouper.(MetadataOnly)
	return !metadataOnly
}

// gangsOf groups a top owner once per version of what grouping depends on of it (its spec's
// generation and its annotations; status updates do not count), so the pods of one
// workload share one read of the owner and one expansion (unless cache is false).
func (h *Hub) gangsOf(ctx context.Context, owner Owner, cache bool) (ownerGangs, Source, error) {
	grouper, def, source := h.grouperFor(owner.GroupKind())
	if grouper == nil {
		return ownerGangs{}, source, nil
	}
	version := versionOf(owner)
	cacheable := cache && version != (ownerVersion{})
	if cacheable {
		if v, ok := h.ownerCache().Get(owner.UID); ok {
			if c := v.(ownerGangs); c.version == version && c.def == def {
				return c, source, nil
			}
		}
	}
	var object *unstructured.Unstructured
	if _, metadataOnly := grouper.(MetadataOnly); !metadataOnly {
		var err error
		if object, err = h.Object(ctx, owner); err != nil {
			return ownerGangs{}, source, err
		}
	}
	gangs, err := grouper.Gangs(owner, object)
	if err != nil {
		return ownerGangs{}, source, err
	}
	ref := metav1.OwnerReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID}
	groups := gangs.Groups()
	c := ownerGangs{version: version, def: def, gangs: gangs, desired: PodGroupsOf(owner.Namespace, owner.Name, groups, ref), names: make(map[*definitions.Group]string, len(groups))}
	for i := range groups {
		c.names[&groups[i]] = c.desired[i].Name
	}
	if cacheable {
		h.ownerCache().Add(owner.UID, c)
	}
	return c, source, nil
}

// Forget drops the cached gangs of a deleted top owner.
func (h *Hub) Forget(uid types.UID) {
	h.ownerCache().Remove(uid)
}

// ObjectReader reads full top-owner objects with a dynamic client, finding their resource
// through the mapper (which follows CRDs installed later: see Rediscovering).
func ObjectReader(client dynamic.Interface, mapper meta.RESTMapper) func(context.Context, Owner) (*unstructured.Unstructured, error) {
	mapper = Rediscovering(mapper)
	return func(ctx context.Context, o Owner) (*unstructured.Unstructured, error) {
		gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		ri := client.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			return ri.Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
		}
		return ri.Get(ctx, o.Name, metav1.GetOptions{})
	}
}
