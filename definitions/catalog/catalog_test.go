package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
	"github.com/workmap/workmap/definitions/manifest"

	"github.com/workmap/workmap/internal/needs"
)

func exampleJobSet(tb testing.TB) *unstructured.Unstructured {
	tb.Helper()
	docs, err := manifest.ReadFile("../../examples/jobset-leader-workers.yaml")
	require.NoError(tb, err)
	require.Len(tb, docs, 1)
	return docs[0].Object
}

func jobSetDefinition(tb testing.TB) *definitions.Definition {
	tb.Helper()
	reg, err := Registry()
	require.NoError(tb, err)
	def, ok := reg.Lookup(exampleJobSet(tb).GroupVersionKind().GroupKind())
	require.True(tb, ok, "the catalog has no JobSet definition")
	return def
}

func TestCatalogCompiles(t *testing.T) {
	raw, err := Raw()
	require.NoError(t, err)
	require.NotEmpty(t, raw)
	kinds, err := KubernetesKinds()
	require.NoError(t, err)
	require.NotEmpty(t, kinds)
	raw = append(raw, kinds...)
	require.NoError(t, definitions.ValidateSet(raw))
	for _, d := range raw {
		_, err := definitions.Compile(d, definitions.CompileOptions{})
		require.NoError(t, err, d.Name)
	}
}

type roleSummary struct {
	Name string
	Pods int64
	GPUs float64
}

func TestExampleJobSetOffline(t *testing.T) {
	w, err := jobSetDefinition(t).Expand(exampleJobSet(t))
	require.NoError(t, err)

	var roles []roleSummary
	for _, r := range w.Roles {
		roles = append(roles, roleSummary{r.Name, r.Pods, r.GPUs})
	}
	if diff := cmp.Diff([]roleSummary{{"leader", 1, 4}, {"workers", 2, 8}}, roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	require.EqualValues(t, 3, w.Totals.Pods)
	require.EqualValues(t, 12, w.Totals.GPUs)
	require.Len(t, w.Groups, 1)
	require.EqualValues(t, 3, w.Groups[0].MinMember)
	require.Equal(t, v1alpha1.ScopeWorkload, w.Groups[0].Scope)
	require.Equal(t, v1alpha1.StatePending, w.Status.State)
	require.Equal(t, []v1alpha1.State{v1alpha1.StateRunning}, w.Status.Skipped)
	require.Empty(t, w.Warnings)
}

// TestJobSetLintsAgainstUpstreamCRD type-checks the JobSet definition against the real CRD
// when the shared upstream data is beside the checkout.
func TestJobSetLintsAgainstUpstreamCRD(t *testing.T) {
	crdFile := filepath.Join("..", "..", "..", "shared", "upstream", "crds", "jobset", "jobset.x-k8s.io_jobsets.yaml")
	data, err := os.ReadFile(crdFile)
	if err != nil {
		needs.Skip(t, "upstream JobSet CRD not available (%v): skipping the lint against it", err)
	}
	crds, err := crdschema.Parse(data)
	require.NoError(t, err)
	require.Len(t, crds, 1)
	_, err = definitions.Compile(jobSetDefinition(t).Source, definitions.CompileOptions{CRD: crds[0]})
	require.NoError(t, err)
}

// TestJobSetGangPerStartupPolicy: one gang for the JobSet, or one per replicatedJob when its
// Jobs are created in stages (in order, or after the jobs they depend on); a group of one pod
// is not emitted.
func TestJobSetGangPerStartupPolicy(t *testing.T) {
	tests := map[string]struct {
		order string
		// dependsOn, when set, makes the workers depend on the leader with this status.
		dependsOn  string
		wantGroups []string // name/instance:minMember
	}{
		"default AnyOrder: one gang of all pods":               {wantGroups: []string{"all/:3"}},
		"AnyOrder: one gang of all pods":                       {order: "AnyOrder", wantGroups: []string{"all/:3"}},
		"InOrder: one gang per replicatedJob":                  {order: "InOrder", wantGroups: []string{"job/workers:2"}},
		"workers depend on the leader Ready: one gang per job": {dependsOn: "Ready", wantGroups: []string{"job/workers:2"}},
		"workers depend on the leader Complete: one gang per job": {
			dependsOn: "Complete", wantGroups: []string{"job/workers:2"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := exampleJobSet(t)
			if tc.order != "" {
				require.NoError(t, unstructured.SetNestedField(obj.Object, tc.order, "spec", "startupPolicy", "startupPolicyOrder"))
			}
			if tc.dependsOn != "" {
				jobs, _, err := unstructured.NestedSlice(obj.Object, "spec", "replicatedJobs")
				require.NoError(t, err)
				require.Len(t, jobs, 2)
				jobs[1].(map[string]any)["dependsOn"] = []any{map[string]any{"name": "leader", "status": tc.dependsOn}}
				require.NoError(t, unstructured.SetNestedSlice(obj.Object, jobs, "spec", "replicatedJobs"))
			}
			w, err := jobSetDefinition(t).Expand(obj)
			require.NoError(t, err)
			var got []string
			for _, g := range w.Groups {
				got = append(got, fmt.Sprintf("%s/%s:%d", g.Name, g.Instance, g.MinMember))
			}
			require.Equal(t, tc.wantGroups, got)
			require.Empty(t, w.Warnings)
		})
	}
}
