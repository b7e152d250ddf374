package grouper

import (
	"k8s.io/apimachinery/pkg/types"

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
	// TopologyDomainAnnotation on a PodGroup workmap manages says where its gang was last
	// placed: the node label of its required level and the domain's value, as label=value.
	TopologyDomainAnnotation = "workmap.dev/topology-domain"
)

// Topology is what a gang asks of the cluster's topology ("" for no constraint).
type Topology struct {
	Required, Preferred string
}

// Constrained says whether the gang asks for any placement by topology.
func (t Topology) Constrained() bool { return t.Required != "" || t.Preferred != "" }

// TopologyOf reads a PodGroup's topology annotations.
func TopologyOf(pg *v1alpha1.PodGroup) Topology {
	if pg == nil {
		return Topology{}
	}
	return Topology{Required: pg.Annotations[TopologyRequiredAnnotation], Preferred: pg.Annotations[TopologyPreferredAnnotation]}
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
	// Nodes are the nodes of the domain when it was chosen, by name.
	Nodes map[string]struct{}
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

// DomainOf returns a pod's group's domain and the node planned for the pod ("" for none).
func (m *Membership) DomainOf(uid types.UID) (*Domain, string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.pods[uid]
	if !ok || mem.group == nil || mem.group.domain == nil {
		return nil, ""
	}
	return mem.group.domain, mem.group.domain.Planned[uid]
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
