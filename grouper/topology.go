package grouper

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// The annotations that carry a gang's topology on its PodGroup: the level (a name of the
// scheduler's topology levels, or a node label key) whose one domain all its pods must share,
// and the level whose domains it is packed into as few of as possible. workmap writes them on
// the PodGroups it makes, from the workload's definition or annotations; on a PodGroup another
// controller made they are read the same way.
const (
	TopologyRequiredAnnotation  = definitions.AnnotationTopologyRequired
	TopologyPreferredAnnotation = definitions.AnnotationTopologyPreferred
	// TopologyNestedAnnotation places each part of the gang in one domain of a narrower level,
	// as scope=level: instance=rack (each role instance's pods in one rack), replica=...,
	// instanceReplica=....
	TopologyNestedAnnotation = "workmap.dev/topology-nested"
	// LeaderFirstAnnotation "true" on a PodGroup says its workload's controller creates the
	// rest of its pods only once its first pods hold a node: those may bind before the others
	// exist, once the whole gang fits.
	LeaderFirstAnnotation = "workmap.dev/leader-first"
	// TopologyDomainAnnotation on a PodGroup workmap manages says where its gang was last
	// placed: the node label of its required level and the domain's value, as label=value.
	TopologyDomainAnnotation = "workmap.dev/topology-domain"
)

// TopologyLevel is one level of the cluster's topology: a short name and the node label whose
// values are its domains.
type TopologyLevel struct {
	// Name is the level's short name, e.g. rack.
	Name string `json:"name"`
	// NodeLabel is the node label whose values are the level's domains, e.g.
	// cloud.provider.com/rack. Nodes without it are in no domain of the level.
	NodeLabel string `json:"nodeLabel"`
}

// ParseTopologyLevels reads topology levels as the commands' --topology-levels take them:
// name=node-label pairs, comma-separated, broad to narrow.
func ParseTopologyLevels(s string) ([]TopologyLevel, error) {
	var out []TopologyLevel
	seen := map[string]bool{}
	for _, pair := range strings.Split(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, label, ok := strings.Cut(pair, "=")
		if !ok || len(validation.IsDNS1123Label(name)) > 0 || len(validation.IsQualifiedName(label)) > 0 {
			return nil, fmt.Errorf("topology level %q: want name=node-label, e.g. rack=example.com/rack", pair)
		}
		if seen[name] || seen["label:"+label] {
			return nil, fmt.Errorf("topology level %q: its name or node label is given twice", pair)
		}
		seen[name], seen["label:"+label] = true, true
		out = append(out, TopologyLevel{Name: name, NodeLabel: label})
	}
	return out, nil
}

// Topology is what a gang asks of the cluster's topology ("" for no constraint). Nested is
// the level each part of the gang shares one domain of (the parts are the pods' Placement.Part).
type Topology struct {
	Required, Preferred, Nested string
}

// Constrained says whether the gang asks for any placement by topology.
func (t Topology) Constrained() bool { return t.Required != "" || t.Preferred != "" || t.Nested != "" }

// TopologyOf reads a PodGroup's topology annotations.
func TopologyOf(pg *v1alpha1.PodGroup) Topology {
	if pg == nil {
		return Topology{}
	}
	_, nested, _ := strings.Cut(pg.Annotations[TopologyNestedAnnotation], "=")
	return Topology{Required: pg.Annotations[TopologyRequiredAnnotation], Preferred: pg.Annotations[TopologyPreferredAnnotation], Nested: nested}
}

// topologyAnnotations are the annotations a PodGroup carries for a gang's topology (nil: none).
func topologyAnnotations(t *definitions.GroupTopology) map[string]string {
	if t == nil {
		return nil
	}
	out := map[string]string{}
	if t.Required != "" {
		out[TopologyRequiredAnnotation] = t.Required
	}
	if t.Preferred != "" {
		out[TopologyPreferredAnnotation] = t.Preferred
	}
	if n := t.Nested; n != nil {
		out[TopologyNestedAnnotation] = string(n.Scope) + "=" + n.Required
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Domain is where a topology-constrained gang was placed: one value of the node label of its
// required level (Label "" when it has only a preferred level), and the node planned for each
// pod of the attempt that chose it. It is not changed once recorded; a new choice replaces it.
type Domain struct {
	Label, Value string
	// Planned is the node each pod of the choosing attempt was found to fit on, with the others.
	Planned map[types.UID]string
	// NestedLabel is the node label of the gang's nested level, and Parts the value of it each
	// part of the gang was placed in ("" and nil without nested topology).
	NestedLabel string
	Parts       map[string]string
}

// String is the domain as label=value.
func (d *Domain) String() string { return d.Label + "=" + d.Value }

// SetDomain records where a gang is placed. The domain is kept while some member holds a node
// (reserved or bound); once none does, it is forgotten and the next attempt chooses anew.
func (m *Membership) SetDomain(key string, d *Domain) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[key]; g != nil {
		g.domain = d
	}
}

// PartOf returns a pod's part of its gang ("" for none).
func (m *Membership) PartOf(uid types.UID) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mem, ok := m.pods[uid]; ok {
		return mem.part
	}
	return ""
}

// PartsOf returns the part of each of a group's members that has one (see Placement.Part).
func (m *Membership) PartsOf(key string) map[types.UID]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[key]
	if g == nil {
		return nil
	}
	out := map[types.UID]string{}
	for uid, mem := range g.members {
		if mem.part != "" {
			out[uid] = mem.part
		}
	}
	return out
}

// BoundNodes returns the nodes of a group's members bound so far, by pod.
func (m *Membership) BoundNodes(key string) map[types.UID]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[key]
	if g == nil {
		return nil
	}
	out := map[types.UID]string{}
	for uid, mem := range g.members {
		if mem.pod.Spec.NodeName != "" {
			out[uid] = mem.pod.Spec.NodeName
		}
	}
	return out
}

// forgetDomainIfFree drops the domain of a group none of whose members holds a node.
func (g *Group) forgetDomainIfFree() {
	if g.assigned == 0 {
		g.domain = nil
	}
}
