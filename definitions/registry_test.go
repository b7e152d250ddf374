package definitions_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
)

func TestRegistryLayers(t *testing.T) {
	thing := schema.GroupKind{Group: "example.com", Kind: "Thing"}
	src := thingDef(`
roles:
- name: workers
  podTemplate: spec.template`)
	tests := map[string]struct {
		build    func(r *definitions.Registry)
		wantName string
	}{
		"uncompiled alone": {
			build:    func(r *definitions.Registry) { r.AddUncompiled(decodeOne(t, src)) },
			wantName: "things.example.com",
		},
		"a compiled definition overrides an uncompiled one": {
			build: func(r *definitions.Registry) {
				r.AddUncompiled(decodeOne(t, src))
				d := compile(t, src)
				d.Source = d.Source.DeepCopy()
				d.Source.Name = "override"
				r.Add(d)
			},
			wantName: "override",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := definitions.NewRegistry()
			tc.build(r)
			s, ok := r.Source(thing)
			require.True(t, ok)
			require.Equal(t, tc.wantName, s.Name)
			require.Len(t, r.Sources(), 1)
			d, ok := r.Lookup(thing)
			require.True(t, ok)
			require.Equal(t, thing, d.GroupKind)
			again, _ := r.Lookup(thing)
			require.Same(t, d, again, "compiled once")
			require.Equal(t, []*definitions.Definition{d}, r.All())
		})
	}
}

func TestRegistryUncompiledThatDoesNotCompilePanics(t *testing.T) {
	r := definitions.NewRegistry()
	bad := decodeOne(t, thingDef(`
roles:
- name: workers
  podTemplate: spec.template
  replicas: "this is not CEL ("`))
	r.AddUncompiled(bad)
	require.Len(t, r.Sources(), 1, "listing does not compile")
	require.Panics(t, func() { r.Lookup(schema.GroupKind{Group: "example.com", Kind: "Thing"}) })
}
