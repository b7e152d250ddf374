package grouper

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

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
}

// NativeGrouper groups the pods of one top-owner kind in Go.
type NativeGrouper interface {
	Group(ctx context.Context, pod *corev1.Pod, owner Owner, object *unstructured.Unstructured) (Decision, error)
}

// Hub decides how pods are grouped. Its sources are plain values set by the caller: no global
// registration.
type Hub struct {
	Owners *OwnerResolver
	// Natives are the Go groupers by top-owner kind.
	Natives map[schema.GroupKind]NativeGrouper
	// Definitions returns the definitions in effect (they may change while running).
	Definitions func() *definitions.Registry
	// Object reads the full top-owner object; called only when a grouper needs more than
	// metadata.
	Object func(ctx context.Context, owner Owner) (*unstructured.Unstructured, error)

	mu        sync.Mutex
	objects   map[types.UID]*unstructured.Unstructured // full top owners, by the version read
	workloads map[types.UID]cachedWorkload
	natives   map[types.UID]cachedNative
}

// cachedNative is a native grouper's decision for one version of an owner: the owner object
// itself is not kept (a Job read in full is ~12 KB; its decision a few words).
type cachedNative struct {
	version  ownerVersion
	decision Decision // PodGroup and Desired only; shared, never modified
}

// ownerVersion is what a grouping decision depends on of an owner: its spec's generation and
// the min-member annotation, or its resource version for objects without a generation.
type ownerVersion struct {
	generation      int64
	minMember       string
	resourceVersion string
}

func versionOf(owner Owner) ownerVersion {
	return groupingVersion(owner.Generation, owner.ResourceVersion, owner.Annotations)
}

func groupingVersion(generation int64, resourceVersion string, annotations map[string]string) ownerVersion {
	if generation == 0 {
		return ownerVersion{resourceVersion: resourceVersion}
	}
	return ownerVersion{generation: generation, minMember: annotations[definitions.AnnotationMinMember]}
}

// maxCachedWorkloads bounds the workloads (and owner objects) the hub keeps expanded; owners
// deleted are also forgotten when their PodGroups go (see Controller).
const maxCachedWorkloads = 10_000

type cachedWorkload struct {
	object   *unstructured.Unstructured // the owner object it was expanded from
	def      *definitions.Definition
	workload *definitions.Workload
	desired  []*v1alpha1.PodGroup // its PodGroups; shared, never modified
	// placed remembers the PodGroup of each set of pod labels and annotations seen, when the
	// definition places pods by those alone (nil otherwise): the pods of one Job, say, are
	// placed once.
	placed *placements
}

// maxPlacements bounds the placements remembered per workload.
const maxPlacements = 1 << 14

type placements struct {
	mu     sync.Mutex
	byMeta map[[2]uint64]string
}

// placementSeed hashes pod labels and annotations.
var placementSeed = maphash.MakeSeed()

// metadataKey hashes a pod's labels and annotations into 128 bits, independently of map
// order: each entry's key and value hashes are summed in two different mixes, labels and
// annotations apart.
func metadataKey(pod *corev1.Pod) [2]uint64 {
	var key [2]uint64
	add := func(m map[string]string, salt uint64) {
		for k, v := range m {
			hk, hv := maphash.String(placementSeed, k), maphash.String(placementSeed, v)
			key[0] += (hk ^ (hv * 0x9e3779b97f4a7c15)) + salt
			key[1] += bits.RotateLeft64(hk*0xbf58476d1ce4e5b9, 31) ^ hv ^ salt
		}
	}
	add(pod.Labels, 1)
	add(pod.Annotations, 0x94d049bb133111eb)
	return key
}

func (p *placements) get(key [2]uint64) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name, ok := p.byMeta[key]
	return name, ok
}

func (p *placements) put(key [2]uint64, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byMeta) < maxPlacements {
		p.byMeta[key] = name
	}
}

// sameGroupingVersion reports whether a cached owner object still holds what grouping reads
// (the owner's version as its cached metadata gives it; unknown versions never match).
func sameGroupingVersion(obj *unstructured.Unstructured, owner Owner) bool {
	v := versionOf(owner)
	return v != (ownerVersion{}) && groupingVersion(obj.GetGeneration(), obj.GetResourceVersion(), obj.GetAnnotations()) == v
}

// ownerObject reads the full top owner once per version of what grouping depends on (its
// spec's generation and the min-member annotation; status updates do not count), so pods of
// one workload share one read.
func (h *Hub) ownerObject(ctx context.Context, owner Owner) (*unstructured.Unstructured, error) {
	h.mu.Lock()
	obj, ok := h.objects[owner.UID]
	h.mu.Unlock()
	if ok && sameGroupingVersion(obj, owner) {
		return obj, nil
	}
	obj, err := h.Object(ctx, owner)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.objects == nil || len(h.objects) >= maxCachedWorkloads {
		h.objects = map[types.UID]*unstructured.Unstructured{}
	}
	h.objects[owner.UID] = obj
	h.mu.Unlock()
	return obj, nil
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
	gk := owner.GroupKind()
	if native, ok := h.Natives[gk]; ok {
		d, err := h.nativeDecision(ctx, native, pod, owner)
		d.Source, d.Owner, d.Problem = SourceNative, owner, problem
		return d, err
	}
	if h.Definitions != nil {
		if def, ok := h.Definitions().Lookup(gk); ok && def.Source.Spec.Gang != nil {
			d, err := h.byDefinition(ctx, pod, owner, def)
			d.Problem = errors.Join(problem, d.Problem)
			return d, err
		}
	}
	return Decision{Source: SourceNone, Owner: owner, Problem: problem}, nil
}

// byDefinition expands the top owner with its definition (once per owner version) and places
// the pod in its gang.
func (h *Hub) byDefinition(ctx context.Context, pod *corev1.Pod, owner Owner, def *definitions.Definition) (Decision, error) {
	cw, err := h.workload(ctx, owner, def)
	var bad *expansionError
	if errors.As(err, &bad) {
		// The object does not fit its definition (a field missing or of the wrong type):
		// holding its pods forever would be worse than scheduling them without a gang.
		return Decision{Source: SourceNone, Owner: owner, Problem: err}, nil
	}
	if err != nil {
		return Decision{}, err
	}
	w := cw.workload
	d := Decision{Source: SourceDefinition, Owner: owner, Desired: cw.desired}
	var key [2]uint64
	if cw.placed != nil {
		key = metadataKey(pod)
		if name, ok := cw.placed.get(key); ok {
			d.PodGroup = name
			return d, nil
		}
	}
	p, ok, err := w.Place(podMetadata(pod))
	if err != nil || !ok || p.Group == nil {
		// A pod the definition cannot place, or whose role has no gang, schedules alone; if
		// the object did not fit its definition, that is reported.
		if err == nil && len(w.Warnings) > 0 {
			err = fmt.Errorf("%s %s/%s does not fit definition %s: %s", owner.Kind, owner.Namespace, owner.Name, def.Source.Name, strings.Join(w.Warnings, "; "))
		}
		d.Source, d.Desired, d.Problem = SourceNone, nil, err
		return d, nil
	}
	d.PodGroup = p.Group.PodGroupName(w.Workload.Name)
	if cw.placed != nil {
		cw.placed.put(key, d.PodGroup)
	}
	return d, nil
}

// nativeDecision runs a native grouper, once per version of a workload owner: the pods of a
// Job share its decision (a bare pod is its own owner and is grouped each time). The owner
// object is read for the decision and not kept.
func (h *Hub) nativeDecision(ctx context.Context, native NativeGrouper, pod *corev1.Pod, owner Owner) (Decision, error) {
	if owner.UID == pod.UID {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
		if err != nil {
			return Decision{}, err
		}
		return native.Group(ctx, pod, owner, &unstructured.Unstructured{Object: obj})
	}
	version := versionOf(owner)
	h.mu.Lock()
	c, ok := h.natives[owner.UID]
	h.mu.Unlock()
	if ok && version != (ownerVersion{}) && c.version == version {
		return c.decision, nil
	}
	obj, err := h.Object(ctx, owner)
	if err != nil {
		return Decision{}, err
	}
	d, err := native.Group(ctx, pod, owner, obj)
	if err != nil {
		return d, err
	}
	h.mu.Lock()
	if h.natives == nil || len(h.natives) >= maxCachedWorkloads {
		h.natives = map[types.UID]cachedNative{}
	}
	h.natives[owner.UID] = cachedNative{version: version, decision: Decision{PodGroup: d.PodGroup, Desired: d.Desired}}
	h.mu.Unlock()
	return d, nil
}

// podMetadata is what pod-side expressions (podInstance, podReplica, podGroup) see of a pod:
// its metadata, the label and annotation maps shared as they are (CEL reads map[string]string
// directly). Far cheaper than converting the whole pod.
func podMetadata(pod *corev1.Pod) map[string]any {
	md := map[string]any{"name": pod.Name, "namespace": pod.Namespace, "uid": string(pod.UID)}
	if pod.Labels != nil {
		md["labels"] = pod.Labels
	}
	if pod.Annotations != nil {
		md["annotations"] = pod.Annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md}
}

func (h *Hub) workload(ctx context.Context, owner Owner, def *definitions.Definition) (cachedWorkload, error) {
	obj, err := h.ownerObject(ctx, owner)
	if err != nil {
		return cachedWorkload{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.workloads[owner.UID]; ok && c.object == obj && c.def == def {
		return c, nil
	}
	w, err := def.Expand(obj)
	if err != nil {
		return cachedWorkload{}, &expansionError{fmt.Errorf("%s %s/%s does not fit definition %s: %w", owner.Kind, owner.Namespace, owner.Name, def.Source.Name, err)}
	}
	if h.workloads == nil {
		h.workloads = map[types.UID]cachedWorkload{}
	}
	if len(h.workloads) >= maxCachedWorkloads {
		h.workloads = map[types.UID]cachedWorkload{} // bounded: start over rather than grow
	}
	c := cachedWorkload{object: obj, def: def, workload: w, desired: DesiredPodGroups(w, OwnerReference(w))}
	if def.PlacesByLabels() {
		c.placed = &placements{byMeta: map[[2]uint64]string{}}
	}
	h.workloads[owner.UID] = c
	return c, nil
}

// expansionError is a definition that cannot expand its object: retrying does not help until
// the object or the definition changes.
type expansionError struct{ error }

func (e *expansionError) Unwrap() error { return e.error }

// Forget drops the cached workload of a deleted top owner.
func (h *Hub) Forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.workloads, uid)
	delete(h.natives, uid)
	delete(h.objects, uid)
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

// JobGrouper gangs the pods of a batch/v1 Job: minMember from the Job's workmap.dev/min-member
// annotation, else its parallelism; a Job of one pod needs no gang.
type JobGrouper struct{}

// Group implements NativeGrouper.
func (JobGrouper) Group(_ context.Context, _ *corev1.Pod, owner Owner, job *unstructured.Unstructured) (Decision, error) {
	min, err := minMember(job.GetAnnotations(), func() int64 {
		p, found, _ := unstructured.NestedInt64(job.Object, "spec", "parallelism")
		if !found {
			return 1
		}
		return p
	})
	if err != nil {
		return Decision{}, fmt.Errorf("job %s/%s: %w", owner.Namespace, owner.Name, err)
	}
	return gangOf(owner, "job", min), nil
}

// PodGrouper gangs a bare pod only when it asks to with workmap.dev/min-member (a pod alone
// is never a gang otherwise).
type PodGrouper struct{}

// Group implements NativeGrouper.
func (PodGrouper) Group(_ context.Context, pod *corev1.Pod, owner Owner, _ *unstructured.Unstructured) (Decision, error) {
	min, err := minMember(pod.Annotations, func() int64 { return 1 })
	if err != nil {
		return Decision{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return gangOf(owner, "pod", min), nil
}

// DefaultNatives are the Go groupers shipped with workmap.
func DefaultNatives() map[schema.GroupKind]NativeGrouper {
	return map[schema.GroupKind]NativeGrouper{
		{Group: "batch", Kind: "Job"}: JobGrouper{},
		{Group: "", Kind: "Pod"}:      PodGrouper{},
	}
}

func minMember(annotations map[string]string, def func() int64) (int64, error) {
	v, ok := annotations[definitions.AnnotationMinMember]
	if !ok {
		return def(), nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("annotation %s=%q: want a positive integer", definitions.AnnotationMinMember, v)
	}
	return n, nil
}

// gangOf is the decision for a one-group native workload.
func gangOf(owner Owner, group string, min int64) Decision {
	if min <= 1 {
		return Decision{}
	}
	name := definitions.Group{Name: group}.PodGroupName(owner.Name)
	ref := metav1.OwnerReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID}
	pg := newPodGroup(name, owner.Namespace, group, ref, v1alpha1.PodGroupSpec{MinMember: int32(min)})
	return Decision{PodGroup: name, Desired: []*v1alpha1.PodGroup{pg}}
}
