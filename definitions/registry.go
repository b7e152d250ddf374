package definitions

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// Registry finds the definition for a workload kind. It is a plain value: build one, add
// definitions in order of increasing precedence (embedded catalog, then the cluster, then
// files given explicitly), and look kinds up. Lookups may run concurrently; Add may not.
type Registry struct {
	byKind map[schema.GroupKind]*entry
}

// entry is one kind's definition, compiled when added or on first use.
type entry struct {
	source *v1alpha1.WorkloadDefinition
	once   sync.Once
	def    *Definition
}

func (e *entry) definition() *Definition {
	e.once.Do(func() {
		if e.def != nil {
			return
		}
		d, err := Compile(e.source, CompileOptions{})
		if err != nil {
			// Only definitions known to compile are added uncompiled (see AddUncompiled).
			panic(fmt.Sprintf("definition %s added uncompiled does not compile: %v", e.source.Name, err))
		}
		e.def = d
	})
	return e.def
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byKind: map[schema.GroupKind]*entry{}}
}

// Add registers definitions; a definition replaces any earlier one for the same group/kind.
func (r *Registry) Add(defs ...*Definition) {
	for _, d := range defs {
		r.byKind[d.GroupKind] = &entry{source: d.Source, def: d}
	}
}

// AddUncompiled registers definitions that are compiled on first lookup, so a command that
// needs one kind compiles one definition. It is for definitions known to compile, such as the
// embedded catalog (whose tests compile every one of them): like regexp.MustCompile, a
// definition that does not compile after all panics when first looked up.
func (r *Registry) AddUncompiled(sources ...*v1alpha1.WorkloadDefinition) {
	for _, s := range sources {
		gk := schema.GroupKind{Group: s.Spec.Workload.Group, Kind: s.Spec.Workload.Kind}
		r.byKind[gk] = &entry{source: s}
	}
}

// Lookup returns the definition for a group/kind.
func (r *Registry) Lookup(gk schema.GroupKind) (*Definition, bool) {
	e, ok := r.byKind[gk]
	if !ok {
		return nil, false
	}
	return e.definition(), true
}

// Source returns the WorkloadDefinition in effect for a group/kind without compiling it.
func (r *Registry) Source(gk schema.GroupKind) (*v1alpha1.WorkloadDefinition, bool) {
	e, ok := r.byKind[gk]
	if !ok {
		return nil, false
	}
	return e.source, true
}

// All returns every definition, sorted by group and kind (compiling those not compiled yet).
func (r *Registry) All() []*Definition {
	sources := r.Sources()
	out := make([]*Definition, 0, len(sources))
	for _, s := range sources {
		d, _ := r.Lookup(schema.GroupKind{Group: s.Spec.Workload.Group, Kind: s.Spec.Workload.Kind})
		out = append(out, d)
	}
	return out
}

// Sources returns the WorkloadDefinitions in effect, sorted by group and kind, compiling none:
// enough to name, list and plan kinds.
func (r *Registry) Sources() []*v1alpha1.WorkloadDefinition {
	keys := make([]schema.GroupKind, 0, len(r.byKind))
	for gk := range r.byKind {
		keys = append(keys, gk)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Group != keys[j].Group {
			return keys[i].Group < keys[j].Group
		}
		return keys[i].Kind < keys[j].Kind
	})
	out := make([]*v1alpha1.WorkloadDefinition, len(keys))
	for i, gk := range keys {
		out[i] = r.byKind[gk].source
	}
	return out
}
