package grouper

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
)

// Gangs are one workload's gangs as workmap forms them, whatever describes its kind: a
// compiled definition's expansion or a native Go grouper. The scheduler's grouping and the
// `workmap groups` command both read gangs through it (see Hub), so they cannot disagree.
type Gangs interface {
	// Groups are the workload's gangs, one per PodGroup (none: its pods schedule one by one).
	Groups() []definitions.Group
	// GroupOf returns the gang of one of the workload's pods. A pod that schedules alone gets
	// nil, with an error when the reason is worth reporting.
	GroupOf(pod *corev1.Pod) (*definitions.Group, error)
}

// RoleNamer is the optional capability of Gangs that name the roles a gang holds as
// `workmap tree` names them (without it, a gang's Members are its roles).
type RoleNamer interface {
	GroupRoles(g definitions.Group) []string
}

// PartPlacer is the optional capability of Gangs whose gangs may place their parts (the pods
// of one role instance or replica) in domains of a narrower topology level: it names a pod's
// parts of its gang, one per nested level, outer first (nil for none).
type PartPlacer interface {
	PartsOf(pod *corev1.Pod, g *definitions.Group) []string
}

// KindGrouper makes the Gangs of a top-owner object of one kind. An error means the object cannot
// be grouped as it is (a bad annotation, say); it is reported and retried.
type KindGrouper interface {
	Gangs(owner Owner, object *unstructured.Unstructured) (Gangs, error)
}

// MetadataOnly is the optional capability of a KindGrouper that decides from the owner's metadata
// alone (Owner's labels and annotations): the hub reads no object for it and passes nil.
type MetadataOnly interface {
	GroupsFromMetadata()
}

// DefinitionGrouper groups the objects of a kind by its definition's gang hints.
type DefinitionGrouper struct {
	Definition *definitions.Definition
}

// Gangs implements KindGrouper: the object is expanded by its definition. An object that does not
// fit it (a field missing or of the wrong type) returns an *ExpansionError.
func (g DefinitionGrouper) Gangs(owner Owner, object *unstructured.Unstructured) (Gangs, error) {
	w, err := g.Definition.Expand(object)
	if err != nil {
		return nil, &ExpansionError{fmt.Errorf("%s %s/%s does not fit definition %s: %w", owner.Kind, owner.Namespace, owner.Name, g.Definition.Source.Name, err)}
	}
	gangs := &definitionGangs{workload: w}
	if g.Definition.PlacesByLabels() {
		gangs.placed = &placements{byMeta: map[[2]uint64]*definitions.Group{}}
	}
	return gangs, nil
}

// ExpansionError is a definition that cannot expand its object: retrying does not help until
// the object or the definition changes.
type ExpansionError struct{ error }

func (e *ExpansionError) Unwrap() error { return e.error }

// WorkloadGangs are the gangs of an expanded workload; its pods are placed by the
// definition's pod-side expressions.
func WorkloadGangs(w *definitions.Workload) Gangs {
	return &definitionGangs{workload: w}
}

// GangsOfManifest are the gangs of a workload read from a manifest and expanded offline (w), as
// the hub will form them once the object is created: a native grouper's, when its kind has one
// (a Job, a bare pod: as in Decide, it wins over the kind's definition), else those of the
// definition w was expanded by.
func GangsOfManifest(natives map[schema.GroupKind]KindGrouper, w *definitions.Workload) (Gangs, Source, error) {
	object := &unstructured.Unstructured{Object: w.Object()}
	native, ok := natives[object.GroupVersionKind().GroupKind()]
	if !ok {
		return WorkloadGangs(w), SourceDefinition, nil
	}
	owner := Owner{APIVersion: object.GetAPIVersion(), Kind: object.GetKind(), Namespace: object.GetNamespace(), Name: w.Workload.DisplayName(),
		UID: object.GetUID(), Generation: object.GetGeneration(), Labels: object.GetLabels(), Annotations: object.GetAnnotations()}
	gangs, err := native.Gangs(owner, object)
	return gangs, SourceNative, err
}

type definitionGangs struct {
	workload *definitions.Workload
	// placed remembers the gang of each set of pod labels and annotations seen, when the
	// definition places pods by those alone (nil otherwise): the pods of one Job, say, are
	// placed once.
	placed *placements
}

func (d *definitionGangs) Groups() []definitions.Group { return d.workload.Groups }

// GroupRoles implements RoleNamer: the tree's roles a gang holds.
func (d *definitionGangs) GroupRoles(g definitions.Group) []string { return d.workload.GroupRoles(g) }

// PartsOf implements PartPlacer: the pod's role instance, replica or both, at each level of
// the gang's nested topology.
func (d *definitionGangs) PartsOf(pod *corev1.Pod, g *definitions.Group) []string {
	if g.Topology == nil || g.Topology.Nested == nil {
		return nil
	}
	p, ok, err := d.workload.Place(podMetadata(pod))
	if err != nil || !ok {
		return nil
	}
	return g.PartsOf(p)
}

func (d *definitionGangs) GroupOf(pod *corev1.Pod) (*definitions.Group, error) {
	var key [2]uint64
	if d.placed != nil {
		key = metadataKey(pod)
		if g, ok := d.placed.get(key); ok {
			return g, nil
		}
	}
	p, ok, err := d.workload.Place(podMetadata(pod))
	if err != nil || !ok || p.Group == nil {
		// A pod the definition cannot place, or whose role has no gang, schedules alone; if
		// the object did not fit its definition, that is reported.
		if w := d.workload; err == nil && len(w.Warnings) > 0 {
			err = fmt.Errorf("%s %s/%s does not fit definition %s: %s", w.Workload.Kind, w.Workload.Namespace, w.Workload.Name, w.Definition, strings.Join(w.Warnings, "; "))
		}
		return nil, err
	}
	if d.placed != nil {
		d.placed.put(key, p.Group)
	}
	return p.Group, nil
}

// maxPlacements bounds the placements remembered per workload.
const maxPlacements = 1 << 14

type placements struct {
	mu     sync.Mutex
	byMeta map[[2]uint64]*definitions.Group
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

func (p *placements) get(key [2]uint64) (*definitions.Group, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.byMeta[key]
	return g, ok
}

func (p *placements) put(key [2]uint64, g *definitions.Group) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byMeta) < maxPlacements {
		p.byMeta[key] = g
	}
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
