package catalog

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/crdschema"
	"github.com/workmap/workmap/definitions/manifest"

	"github.com/workmap/workmap/internal/needs"
)

// upstreamDir returns ../shared/upstream beside the checkout (real CRDs and samples of every
// framework), or skips: users' clones do not have it.
func upstreamDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "upstream")
	if _, err := os.Stat(filepath.Join(dir, "crds")); err != nil {
		needs.Skip(t, "upstream CRDs and samples not available at %s (%v): skipping tests against real upstream data", dir, err)
	}
	return dir
}

// compiledCatalog compiles the catalog, and the definitions of Kubernetes' own kinds the
// scheduler gangs (their fixtures are tested as the frameworks' are), once for all tests of
// the package.
var compiledCatalog = sync.OnceValues(func() ([]*definitions.Definition, error) {
	defs, err := Definitions()
	if err != nil {
		return nil, err
	}
	kinds, err := KubernetesKinds()
	if err != nil {
		return nil, err
	}
	compiled, err := definitions.CompileAll(kinds, nil)
	return append(defs, compiled...), err
})

func catalogRegistry(t *testing.T) *definitions.Registry {
	t.Helper()
	defs, err := compiledCatalog()
	require.NoError(t, err)
	reg := definitions.NewRegistry()
	reg.Add(defs...)
	return reg
}

// lintAgainstCRD compiles the catalog definition of gk against the real CRD in crdFile
// (relative to the upstream dir): in every version the definition lists that the CRD serves,
// every path must exist and every expression type-check.
func lintAgainstCRD(t *testing.T, gk schema.GroupKind, crdFile string) {
	t.Helper()
	up := upstreamDir(t)
	data, err := os.ReadFile(filepath.Join(up, crdFile))
	require.NoError(t, err)
	crds, err := crdschema.Parse(data)
	require.NoError(t, err)
	var crd *crdschema.CRD
	for _, c := range crds {
		if c.Group == gk.Group && c.Kind == gk.Kind {
			crd = c
		}
	}
	require.NotNil(t, crd, "%s has no CRD for %s", crdFile, gk)
	def, ok := catalogRegistry(t).Lookup(gk)
	require.True(t, ok, "no catalog definition for %s", gk)
	checked, err := definitions.CheckAgainstCRD(def.Source, crd)
	require.NoError(t, err, "catalog definition %s against %s", def.Source.Name, crdFile)
	require.NotEmpty(t, checked.Checked)
}

// sample is what a hand computation of an upstream sample gives.
type sample struct {
	// Name of the workload object in the file (files may hold several objects).
	Name       string
	Pods       int64
	GPUs       float64
	MinMembers []int32 // one per PodGroup, in order; empty: no gang
}

// checkSamples expands every object of a catalog kind in every file of samples/<dir> offline
// (none may fail or warn), and compares the hand-computed ones.
func checkSamples(t *testing.T, dir string, want map[string]sample) {
	t.Helper()
	up := upstreamDir(t)
	reg := catalogRegistry(t)
	files, err := filepath.Glob(filepath.Join(up, "samples", dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	checked := map[string]bool{}
	for _, f := range files {
		docs, err := manifest.ReadFile(f)
		require.NoError(t, err)
		for _, d := range docs {
			def, ok := reg.Lookup(d.Object.GroupVersionKind().GroupKind())
			if !ok {
				continue
			}
			w, err := def.Expand(d.Object)
			require.NoError(t, err, d.Where())
			require.Empty(t, w.Warnings, "%s: %s", d.Where(), d.Object.GetName())
			key := filepath.Base(f) + "/" + d.Object.GetName()
			exp, ok := want[key]
			if !ok {
				continue
			}
			checked[key] = true
			require.Equal(t, exp.Pods, w.Totals.Pods, "%s: pods", key)
			require.Equal(t, exp.GPUs, w.Totals.GPUs, "%s: GPUs", key)
			var mins []int32
			for _, g := range w.Groups {
				mins = append(mins, g.MinMember)
			}
			require.Equal(t, exp.MinMembers, mins, "%s: minMember per group", key)
		}
	}
	for key := range want {
		require.True(t, checked[key], "sample %s not found in samples/%s", key, dir)
	}
}

func TestUpstreamJobSet(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}, "crds/jobset/jobset.x-k8s.io_jobsets.yaml")
	checkSamples(t, "jobset", map[string]sample{
		// rj-1 and rj-2: 1 Job each × parallelism 2 = 4 pods in one gang.
		"simple-group.yaml/group-example": {Pods: 4, GPUs: 0, MinMembers: []int32{4}},
		// one replicatedJob, replicas default 1 × parallelism 4.
		"pytorch-cnn-mnist.yaml/pytorch": {Pods: 4, GPUs: 0, MinMembers: []int32{4}},
		// 2 slices × 4 TPU hosts; TPUs are not GPUs.
		// Exclusive placement with Jobs of 4 pods: JobSet creates a Job's other pods only once its
		// first has a node, so no gang is formed.
		"tpu-multislice-v6e-jax-workload.yaml/v6e-multislice": {Pods: 8, GPUs: 0},
		// initializer 1 → launcher 1 (after the initializer completes) → worker 4 (after the
		// launcher is ready): one gang per stage, and stages of one pod need none.
		"depends-on.yaml/depends-on": {Pods: 6, GPUs: 0, MinMembers: []int32{4}},
	})
}
