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
	// instanceReplica=...; a second, narrower level for the smaller parts inside each part
	// follows after a comma: instance=block,instanceReplica=rack.
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

// Topology is what a gang asks of the cluster's topology ("" for no constraint). Nested are
// the levels each part of the gang, and each smaller part inside it, share one domain of,
// outer first (the parts are the pods' Placement.Parts).
type Topology struct {
	Required, Preferred string
	Nested              []string
}

// Constrained says whether the gang asks for any placement by topology.
func (t Topology) Constrained() bool {
	return t.Required != "" || t.Preferred != "" || len(t.Nested) > 0
}

// TopologyOf reads a PodGroup's topology annotations.
func TopologyOf(pg *v1alpha1.PodGroup) Topology {
	if pg == nil {
		return Topology{}
	}
	t := Topology{Required: pg.Annotations[TopologyRequiredAnnotation], Preferred: pg.Annotations[TopologyPreferredAnnotation]}
	if nested := pg.Annotations[TopologyNestedAnnotation]; nested != "" {
		for _, level := range strings.Split(nested, ",") {
			_, name, _ := strings.Cut(level, "=")
			t.Nested = append(t.Nested, name)
		}
	}
	return t
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
	var nested []string
	for n := t.Nested; n != nil; n = n.Nested {
		nested = append(nested, string(n.Scope)+"="+n.Required)
	}
	if len(nested) > 0 {
		out[TopologyNestedAnnotation] = strings.Join(nested, ",")
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
	// Nested are the gang's nested levels, outer first, each with the domain each of its parts
	// was placed in (nil without nested topology).
	Nested []NestedDomains
}

// NestedDomains are the domains of one nested level that a gang's parts were placed in.
type NestedDomains struct {
	// Label is the level's node label; Parts the value of it each part was placed in, by the
	// part's name.
	Label string
	Parts map[string]string
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

// PartsOf returns a pod's parts of its gang, outer first (nil for none).
func (m *Membership) PartsOf(uid types.UID) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mem, ok := m.pods[uid]; ok {
		return mem.parts
	}
	return nil
}

// MemberParts returns the parts of each of a group's members that has some (see
// Placement.Parts).
func (m *Membership) MemberParts(key string) map[types.UID][]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[key]
	if g == nil {
		return nil
	}
	out := map[types.UID][]string{}
	for uid, mem := range g.members {
		if len(mem.parts) > 0 {
			out[uid] = mem.parts
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
