package definitions

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Registry finds the definition for a workload kind. It is a plain value: build one, add
// definitions in order of increasing precedence (embedded catalog, then the cluster, then
// files given explicitly), and look kinds up. It is not safe for concurrent Add.
type Registry struct {
	byKind map[schema.GroupKind]*Definition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byKind: map[schema.GroupKind]*Definition{}}
}

// Add registers definitions; a definition replaces any earlier one for the same group/kind.
func (r *Registry) Add(defs ...*Definition) {
	for _, d := range defs {
		r.byKind[d.GroupKind] = d
	}
}

// Lookup returns the definition for a group/kind.
func (r *Registry) Lookup(gk schema.GroupKind) (*Definition, bool) {
	d, ok := r.byKind[gk]
	return d, ok
}

// All returns every definition, sorted by group and kind.
func (r *Registry) All() []*Definition {
	out := make([]*Definition, 0, len(r.byKind))
	for _, d := range r.byKind {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GroupKind.Group != out[j].GroupKind.Group {
			return out[i].GroupKind.Group < out[j].GroupKind.Group
		}
		return out[i].GroupKind.Kind < out[j].GroupKind.Kind
	})
	return out
}
