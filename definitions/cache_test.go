package definitions_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

func TestCache(t *testing.T) {
	type step struct {
		// change returns the definition to compile, from a fresh valid one.
		change  func(d *v1alpha1.WorkloadDefinition)
		wantErr bool
		// same: the compiled value must be the one of the previous successful step.
		same    bool
		wantLen int
	}
	nothing := func(*v1alpha1.WorkloadDefinition) {}
	editSpec := func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[1].Replicas = "item.?replicas.orValue(2)" }
	tests := map[string][]step{
		"same definition twice": {
			{change: nothing, wantLen: 1},
			{change: nothing, same: true, wantLen: 1},
		},
		"status-only change (labels, annotations) keeps the compiled value": {
			{change: nothing, wantLen: 1},
			{change: func(d *v1alpha1.WorkloadDefinition) { d.Labels = map[string]string{"a": "b"} }, same: true, wantLen: 1},
		},
		"changed spec without a generation bump recompiles": {
			{change: nothing, wantLen: 1},
			{change: editSpec, wantLen: 1},
			{change: editSpec, same: true, wantLen: 1},
		},
		"generation bump recompiles": {
			{change: nothing, wantLen: 1},
			{change: func(d *v1alpha1.WorkloadDefinition) { d.Generation = 2 }, wantLen: 1},
			{change: func(d *v1alpha1.WorkloadDefinition) { d.Generation = 2 }, same: true, wantLen: 1},
		},
		"going back to an older spec recompiles": {
			{change: nothing, wantLen: 1},
			{change: editSpec, wantLen: 1},
			{change: nothing, wantLen: 1},
		},
		"another name is another entry": {
			{change: nothing, wantLen: 1},
			{change: func(d *v1alpha1.WorkloadDefinition) { d.Name = "other.example.com" }, wantLen: 2},
			{change: nothing, wantLen: 2},
		},
		"an invalid definition is not cached": {
			{change: nothing, wantLen: 1},
			{change: func(d *v1alpha1.WorkloadDefinition) { d.Spec.Roles[0].Replicas = "itme" }, wantErr: true, wantLen: 1},
			{change: nothing, same: true, wantLen: 1},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			c := definitions.NewCache()
			var prev *definitions.Definition
			for i, s := range steps {
				def := validDef()
				s.change(def)
				got, err := c.Compile(def, definitions.CompileOptions{})
				if s.wantErr {
					require.Error(t, err, "step %d", i)
					require.Nil(t, got)
				} else {
					require.NoError(t, err, "step %d", i)
					require.NotNil(t, got)
					if s.same {
						require.Same(t, prev, got, "step %d: want the cached value", i)
					} else {
						require.NotSame(t, prev, got, "step %d: want a new compilation", i)
					}
					require.Equal(t, def.Name, got.Source.Name)
					prev = got
				}
				require.Equal(t, s.wantLen, c.Len(), "step %d", i)
			}
		})
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := definitions.NewCache()
	var wg sync.WaitGroup
	results := make([]*definitions.Definition, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := c.Compile(validDef(), definitions.CompileOptions{})
			if err == nil {
				results[i] = d
			}
		}()
	}
	wg.Wait()
	for _, d := range results {
		require.NotNil(t, d)
	}
	require.Equal(t, 1, c.Len())
	again, err := c.Compile(validDef(), definitions.CompileOptions{})
	require.NoError(t, err)
	require.Contains(t, results, again)
}
