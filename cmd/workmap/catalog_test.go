package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
)

// clusterJobSetDefinition overrides the catalog's JobSet definition (its gang is named
// from-cluster); fileJobSetDefinition overrides that one in turn.
const clusterJobSetDefinition = `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: jobsets.jobset.x-k8s.io, generation: 1}
spec:
  workload: {group: jobset.x-k8s.io, kind: JobSet, versions: [v1alpha2]}
  roles:
  - name: replicatedJob
    podTemplate: spec.replicatedJobs[*].template.spec.template
    instanceName: item.name
    replicas: "item.?replicas.orValue(1)"
  gang:
    groups: [{name: from-cluster, members: [replicatedJob]}]
`

const fileJobSetDefinition = `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: jobsets.jobset.x-k8s.io}
spec:
  workload: {group: jobset.x-k8s.io, kind: JobSet, versions: [v1alpha2]}
  roles:
  - name: replicatedJob
    podTemplate: spec.replicatedJobs[*].template.spec.template
    instanceName: item.name
`

// invalidGadgetDefinition passes the CRD's validation (the API server accepts it) but not
// workmap's compiler: its replicas expression does not parse, nor does its podTemplate path.
const invalidGadgetDefinition = `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: gadgets.example.com}
spec:
  workload: {group: example.com, kind: Gadget, versions: [v1]}
  roles:
  - {name: worker, podTemplate: "spec.template[", replicas: "self.spec.("}
`

// undecodableDefinition is one the API server would not accept (its spec is not an object),
// as an older or a broken CRD might let through.
const undecodableDefinition = `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: broken.example.com}
spec: not-an-object
`

// customWidgetDefinition is a valid definition of a kind the catalog does not know.
var customWidgetDefinition = widgetDefinition("self.spec.workers")

// fakeAPIServer serves the WorkloadDefinitions given as YAML, and an empty discovery (no other
// kinds), and returns a kubeconfig for it.
func fakeAPIServer(t *testing.T, defs ...string) string {
	t.Helper()
	var items []any
	for _, d := range defs {
		docs, err := manifest.Read([]byte(d), "definition.yaml")
		require.NoError(t, err)
		for _, doc := range docs {
			items = append(items, doc.Object.Object)
		}
	}
	if items == nil {
		items = []any{}
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/workmap.dev/v1alpha1/workloaddefinitions":
			reply(w, map[string]any{"apiVersion": "workmap.dev/v1alpha1", "kind": "WorkloadDefinitionList", "metadata": map[string]any{}, "items": items})
		case "/api":
			reply(w, map[string]any{"kind": "APIVersions", "versions": []string{"v1"}})
		case "/apis":
			reply(w, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{}})
		case "/api/v1":
			reply(w, map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{}})
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "the server could not find the requested resource"})
		}
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	return kubeconfig
}

// runCLI runs the CLI in-process and returns stdout, stderr and the error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("NO_COLOR", "1")
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// clusterFlags are the flags of a command reading the fake cluster.
func clusterFlags(t *testing.T, kubeconfig string) []string {
	return []string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}
}

// TestCatalogListLayers: catalog list shows every layer's definitions with their source and
// which one each kind uses; --cluster adds the cluster's, an invalid one with its problems.
func TestCatalogListLayers(t *testing.T) {
	kubeconfig := fakeAPIServer(t, clusterJobSetDefinition, invalidGadgetDefinition, customWidgetDefinition)
	file := filepath.Join(t.TempDir(), "jobset.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fileJobSetDefinition), 0o644))
	kc := clusterFlags(t, kubeconfig)

	t.Run("text, every layer", func(t *testing.T) {
		out, errOut, err := runCLI(t, append([]string{"catalog", "list", "--cluster", "--definitions", file}, kc...)...)
		require.NoError(t, err)
		require.Empty(t, errOut, "the list itself says which definitions are invalid")
		golden(t, "catalog-list-cluster.txt", out)
	})
	t.Run("without --cluster the cluster is not read", func(t *testing.T) {
		out, _, err := runCLI(t, "catalog", "list", "--kubeconfig", filepath.Join(t.TempDir(), "none"))
		require.NoError(t, err)
		require.NotRegexp(t, `\scluster\s`, out, "no definition from the cluster")
	})
	t.Run("-o yaml: a List of the definitions, annotated", func(t *testing.T) {
		out, _, err := runCLI(t, append([]string{"catalog", "list", "--cluster", "--definitions", file, "-o", "yaml"}, kc...)...)
		require.NoError(t, err)
		var list struct {
			APIVersion, Kind string
			Items            []struct {
				Kind     string
				Metadata struct {
					Name        string
					Annotations map[string]string
				}
			}
		}
		require.NoError(t, yaml.Unmarshal([]byte(out), &list))
		require.Equal(t, "List", list.Kind)
		got := map[string][]map[string]string{}
		for _, item := range list.Items {
			require.Equal(t, "WorkloadDefinition", item.Kind)
			got[item.Metadata.Name] = append(got[item.Metadata.Name], item.Metadata.Annotations)
		}
		require.Equal(t, []map[string]string{
			{"workmap.dev/source": "embedded", "workmap.dev/in-effect": "false"},
			{"workmap.dev/source": "cluster", "workmap.dev/in-effect": "false"},
			{"workmap.dev/source": "file", "workmap.dev/in-effect": "true"},
		}, got["jobsets.jobset.x-k8s.io"], "in order of precedence")
		require.Equal(t, []map[string]string{{"workmap.dev/source": "cluster", "workmap.dev/in-effect": "true"}}, got["widgets.example.com"])
		require.Len(t, got["gadgets.example.com"], 1)
		gadget := got["gadgets.example.com"][0]
		require.Equal(t, "false", gadget["workmap.dev/in-effect"])
		require.Contains(t, gadget["workmap.dev/invalid"], `spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error`)
	})
	t.Run("-o jsonpath: the cluster's definitions", func(t *testing.T) {
		out, _, err := runCLI(t, append([]string{"catalog", "list", "--cluster", "-o", `jsonpath={.items[?(@.metadata.annotations.workmap\.dev/source=="cluster")].metadata.name}`}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "gadgets.example.com widgets.example.com jobsets.jobset.x-k8s.io", out, "by group, then kind")
	})
}

// TestCatalogShowCluster: show prints the definition in effect, the cluster's with --cluster;
// a kind only an invalid definition describes is an error naming it.
func TestCatalogShowCluster(t *testing.T) {
	kc := clusterFlags(t, fakeAPIServer(t, clusterJobSetDefinition, invalidGadgetDefinition, customWidgetDefinition))
	tests := map[string]struct {
		args    []string
		want    []string
		wantErr string
	}{
		"offline: the catalog's": {args: []string{"catalog", "show", "jobset"}, want: []string{"workmap.dev/source: embedded", "workmap.dev/in-effect: \"true\""}},
		"the cluster's overrides": {args: append([]string{"catalog", "show", "jobset", "--cluster"}, kc...),
			want: []string{"workmap.dev/source: cluster", "name: from-cluster"}},
		"a kind only the cluster knows": {args: append([]string{"catalog", "show", "widgets", "--cluster"}, kc...),
			want: []string{"workmap.dev/source: cluster", "kind: Widget"}},
		"an invalid one": {args: append([]string{"catalog", "show", "gadget", "--cluster"}, kc...),
			wantErr: `WorkloadDefinition gadgets.example.com in the cluster is invalid: spec.roles[0].podTemplate: Invalid value: "spec.template["`},
		"the kind offline": {args: []string{"catalog", "show", "gadget"}, wantErr: `unknown workload kind "gadget"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := runCLI(t, tc.args...)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
		})
	}
}

// TestInvalidClusterDefinitionWarning: commands that use the cluster's definitions warn once
// per problem of an invalid one, naming it, the field and the problem, and go on without it.
func TestInvalidClusterDefinitionWarning(t *testing.T) {
	kc := clusterFlags(t, fakeAPIServer(t, invalidGadgetDefinition, customWidgetDefinition))
	reg, errOut := liveRegistryOf(t, kc)
	require.Equal(t, `warning: WorkloadDefinition gadgets.example.com in the cluster is invalid, skipped: spec.roles[0].podTemplate: Invalid value: "spec.template[": path "spec.template[": at position 13: unterminated '['
warning: WorkloadDefinition gadgets.example.com in the cluster is invalid, skipped: spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error: no viable alternative at input '.(' (at column 11)
`, errOut)
	var names []string
	for _, d := range reg.All() {
		names = append(names, d.Source.Name)
	}
	require.Contains(t, names, "widgets.example.com", "the valid one is in effect")
	require.NotContains(t, names, "gadgets.example.com")
}

// brokenTrainerDefinition is generation 3 of a definition that does not compile, whose status
// records generation 2, the last that did (as workmap-scheduler writes it).
const brokenTrainerDefinition = `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: trainers.example.com, generation: 3}
spec:
  workload: {group: example.com, kind: Trainer, versions: [v1]}
  roles:
  - {name: worker, podTemplate: spec.template, replicas: "sise(self.spec.workers)"}
status:
  lastValid:
    generation: 2
    spec:
      workload: {group: example.com, kind: Trainer, versions: [v1]}
      roles:
      - {name: worker, podTemplate: spec.template, replicas: "self.spec.workers"}
`

// TestLastValidClusterDefinition: an invalid cluster definition whose status records its last
// valid generation is not skipped: that generation is in effect, as in workmap-scheduler, and
// the warning and `catalog list` say so.
func TestLastValidClusterDefinition(t *testing.T) {
	kc := clusterFlags(t, fakeAPIServer(t, brokenTrainerDefinition))
	reg, errOut := liveRegistryOf(t, kc)
	require.Equal(t, `warning: WorkloadDefinition trainers.example.com in the cluster is invalid, its generation 2, the last valid one, is used instead, as workmap-scheduler does: spec.roles[0].replicas: Invalid value: "sise(self.spec.workers)": undeclared reference to 'sise' (at column 5)
`, errOut)
	d, ok := reg.Lookup(schema.GroupKind{Group: "example.com", Kind: "Trainer"})
	require.True(t, ok, "the last valid generation is in effect")
	require.Equal(t, int64(2), d.Source.Generation)

	listed, _, err := runCLI(t, append([]string{"catalog", "list", "--cluster"}, kc...)...)
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^Trainer +example\.com +v1 +worker +no +trainers\.example\.com +cluster +Invalid: spec\.roles\[0\]\.replicas: .*; its generation 2, the last valid one, is in effect$`), listed)
	shown, _, err := runCLI(t, append([]string{"catalog", "show", "trainer", "--cluster"}, kc...)...)
	require.NoError(t, err)
	require.Contains(t, shown, "workmap.dev/in-effect: \"true\"")
}

// liveRegistryOf is the registry a command run with the flags kc uses, and what it warned.
func liveRegistryOf(t *testing.T, kc []string) (*definitions.Registry, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	var o *options
	cmd := newRootCommand(&out, &errOut, func(opts *options) { o = opts })
	require.NoError(t, cmd.ParseFlags(kc))
	r, err := o.workloadReader()
	require.NoError(t, err)
	reg, err := r.registry(context.Background())
	require.NoError(t, err)
	return reg, errOut.String()
}

// TestLintClusterDefinitions: lint --cluster lints the cluster's definitions too and fails on
// an invalid one, naming it, the field and the problem.
func TestLintClusterDefinitions(t *testing.T) {
	tests := map[string]struct {
		defs    []string
		wantErr string
		want    []string
	}{
		"an invalid one fails": {
			defs: []string{invalidGadgetDefinition, customWidgetDefinition}, wantErr: "1 of 17 definitions are invalid",
			want: []string{
				"cluster: definition \"gadgets.example.com\" is invalid:\n  spec.roles[0].podTemplate: Invalid value: \"spec.template[\"",
				`  spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error`,
				"cluster: widgets.example.com: ok",
				"embedded: jobsets.jobset.x-k8s.io: ok",
			},
		},
		"one that does not decode fails": {
			defs: []string{undecodableDefinition}, wantErr: "1 of 16 definitions are invalid",
			want: []string{"cluster: WorkloadDefinition broken.example.com: "},
		},
		"an overridden catalog definition is not linted, the cluster's is": {
			defs: []string{clusterJobSetDefinition},
			want: []string{"cluster: jobsets.jobset.x-k8s.io: ok"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := runCLI(t, append([]string{"lint", "--cluster"}, clusterFlags(t, fakeAPIServer(t, tc.defs...))...)...)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
				require.NotContains(t, out, "embedded: jobsets.jobset.x-k8s.io")
			}
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
		})
	}
}
