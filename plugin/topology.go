package plugin

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	fwk "k8s.io/kube-scheduler/framework"
)

// topologyLevels resolves what a gang asks for — a level's name or a node label — to the node
// label whose values are the level's domains.
type topologyLevels struct {
	byName  map[string]TopologyLevel
	byLabel map[string]TopologyLevel
	names   []string
	// problem says why there are no levels when there should be (their Topology object is
	// missing or malformed).
	problem string
}

func newTopologyLevels(levels []TopologyLevel) topologyLevels {
	t := topologyLevels{byName: map[string]TopologyLevel{}, byLabel: map[string]TopologyLevel{}}
	for _, l := range levels {
		t.byName[l.Name], t.byLabel[l.NodeLabel] = l, l
		t.names = append(t.names, l.Name)
	}
	return t
}

// level is one resolved level: the node label of its domains and the name to call it by.
type level struct {
	Label, Name string
}

// resolve returns the level a gang asks for. A listed level is found by its name or node
// label; a node label that is not listed (it has a prefix or a dot, as kubernetes.io/hostname)
// is a level of its own, named by its label. Anything else is an error that says which levels
// there are.
func (t topologyLevels) resolve(asked string) (level, error) {
	if l, ok := t.byName[asked]; ok {
		return level{Label: l.NodeLabel, Name: l.Name}, nil
	}
	if l, ok := t.byLabel[asked]; ok {
		return level{Label: l.NodeLabel, Name: l.Name}, nil
	}
	if strings.ContainsAny(asked, "./") && len(validation.IsQualifiedName(asked)) == 0 {
		return level{Label: asked, Name: asked}, nil
	}
	known := "none are configured"
	if len(t.names) > 0 {
		known = "they are " + strings.Join(t.names, ", ")
	}
	if t.problem != "" {
		known = "none: " + t.problem
	}
	return level{}, fmt.Errorf("topology level %q is not one of workmap-scheduler's topology levels (%s) nor a node label", asked, known)
}

// domains groups nodes by their value of a node label, in a stable order; nodes without the
// label are in no domain.
func domains(nodes []fwk.NodeInfo, label string) map[string][]fwk.NodeInfo {
	out := map[string][]fwk.NodeInfo{}
	for _, n := range nodes {
		if v, ok := n.Node().Labels[label]; ok {
			out[v] = append(out[v], n)
		}
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
