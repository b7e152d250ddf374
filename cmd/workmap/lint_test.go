package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              workers: {type: integer}
              template: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// widgetCRDVersions serves v1 and v2, where v2 renamed spec.workers to spec.workerCount, and
// still has v0 but no longer serves it.
const widgetCRDVersions = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              workerCount: {type: integer}
              template: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              workers: {type: integer}
              template: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func widgetDefinition(replicas string, versions ...string) string {
	if len(versions) == 0 {
		versions = []string{"v1"}
	}
	return `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: widgets.example.com}
spec:
  workload: {group: example.com, kind: Widget, versions: [` + strings.Join(versions, ", ") + `]}
  roles:
  - name: worker
    podTemplate: spec.template
    replicas: "` + replicas + `"
`
}

func TestLint(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	crd := write("crd.yaml", widgetCRD)
	crdVersions := write("crd-versions.yaml", widgetCRDVersions)
	tests := map[string]struct {
		args       []string
		wantOut    string
		wantErrOut string
		wantErr    string
	}{
		"every listed version served is checked": {
			args:       []string{"lint", write("v1v0.yaml", widgetDefinition("self.spec.workers", "v1", "v0")), "--crd", crdVersions},
			wantOut:    "ok (against the CRD schema of v1)",
			wantErrOut: "version v0 is not served by the CRD: not checked",
		},
		"a field renamed in one served version fails, naming it": {
			args:    []string{"lint", write("v1v2.yaml", widgetDefinition("self.spec.workers", "v1", "v2")), "--crd", crdVersions},
			wantOut: "spec.roles[0].replicas: Invalid value: \"self.spec.workers\": undefined field 'workers' (at column 10) (in version v2)",
			wantErr: "1 of 1 definitions are invalid",
		},
		"the same problem in two versions is reported once": {
			args:    []string{"lint", write("both.yaml", widgetDefinition("self.spec.wrokers", "v1", "v2")), "--crd", crdVersions},
			wantOut: "(in version v1, v2)",
			wantErr: "invalid",
		},
		"a field the CRD does not have, read optionally: a warning, the expression falls back": {
			args:       []string{"lint", write("newer.yaml", widgetDefinition("self.spec.?suspend.orValue(false) ? 0 : self.spec.workers")), "--crd", crd},
			wantOut:    "ok (against the CRD schema of v1; 1 warning: fields the CRD does not have)",
			wantErrOut: "warning: spec.roles[0].replicas: the CRD has no field suspend (newer than this CRD, or misspelled): the expression reads it with .?suspend and falls back to its default (in version v1)",
		},
		"a field the CRD does not have, read directly: an error": {
			args:    []string{"lint", write("direct.yaml", widgetDefinition("self.spec.?suspend.orValue(false) || self.spec.suspend ? 0 : self.spec.workers")), "--crd", crd},
			wantOut: "undefined field 'suspend'", wantErr: "1 of 1 definitions are invalid",
		},
		"a pod template path the CRD does not have: a warning, the role finds no pods there": {
			args:       []string{"lint", write("path.yaml", strings.Replace(widgetDefinition("self.spec.workers"), "podTemplate: spec.template", "podTemplate: spec.newTemplate", 1)), "--crd", crd},
			wantOut:    "1 warning: fields the CRD does not have",
			wantErrOut: "the CRD has no field spec.newTemplate (newer than this CRD, or misspelled): the role finds no pods there",
		},
		"no listed version served": {
			args:    []string{"lint", write("v0.yaml", widgetDefinition("1", "v0")), "--crd", crdVersions},
			wantOut: "none of these versions is served by the CRD of example.com/Widget",
			wantErr: "invalid",
		},
		"valid without a schema":       {args: []string{"lint", write("ok.yaml", widgetDefinition("self.spec.workers"))}, wantOut: "widgets.example.com: ok"},
		"valid against the CRD":        {args: []string{"lint", write("ok2.yaml", widgetDefinition("self.spec.workers")), "--crd", crd}, wantOut: "ok (against the CRD schema of v1)"},
		"field renamed in the CRD":     {args: []string{"lint", write("typo.yaml", widgetDefinition("self.spec.wrokers")), "--crd", crd}, wantOut: "spec.roles[0].replicas", wantErr: "1 of 1 definitions are invalid"},
		"wrong type against the CRD":   {args: []string{"lint", write("type.yaml", widgetDefinition("self.spec.workers + 'x'")), "--crd", crd}, wantOut: "spec.roles[0].replicas", wantErr: "invalid"},
		"undeclared variable":          {args: []string{"lint", write("var.yaml", widgetDefinition("itme.replicas"))}, wantOut: "undeclared reference to 'itme'", wantErr: "invalid"},
		"too expensive":                {args: []string{"lint", write("cost.yaml", widgetDefinition("size(self.spec.template.a.filter(x, self.spec.template.b.exists(y, self.spec.template.c.exists(z, z == y && y == x))))"))}, wantOut: "estimated cost", wantErr: "invalid"},
		"file without definitions":     {args: []string{"lint", crd}, wantErr: "no WorkloadDefinition in the file"},
		"two definitions for one kind": {args: []string{"lint", write("a.yaml", widgetDefinition("1")), write("b.yaml", widgetDefinition("2"))}, wantErr: "both describe Widget.example.com"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var errOut bytes.Buffer
			out, err := runWith(t, func(o *options) { o.errOut = &errOut }, tc.args...)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Contains(t, out, tc.wantOut)
			require.Contains(t, errOut.String(), tc.wantErrOut)
		})
	}
}

func TestTestCommand(t *testing.T) {
	out, err := run(t, "test", "../../definitions/catalog/testdata/jobset")
	require.NoError(t, err)
	require.Contains(t, out, "0 failed")

	dir := t.TempDir()
	bad := `
root:
  apiVersion: jobset.x-k8s.io/v1alpha2
  kind: JobSet
  metadata: {name: x, namespace: ns}
  spec: {replicatedJobs: [{name: w, replicas: 2, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}]}
offline: true
expect: {state: Pending, pods: 3}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wrong.yaml"), []byte(bad), 0o644))
	out, err = run(t, "test", dir)
	require.ErrorContains(t, err, "1 of 1 fixtures failed")
	require.Contains(t, out, "pods: want 3, got 2")
	require.Contains(t, out, "0 passed, 1 failed")

	// A malformed fixture is reported with its line, and the others still run and are listed.
	good, err := os.ReadFile("../../definitions/catalog/testdata/jobset/running.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a-good.yaml"), good, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b-broken.yaml"), []byte("root:\n  kind: JobSet\n   metadata: {}\n"), 0o644))
	out, err = run(t, "test", dir)
	require.ErrorContains(t, err, "2 of 3 fixtures failed")
	require.Contains(t, out, "ok    "+filepath.Join(dir, "a-good.yaml"))
	require.Contains(t, out, "ERROR "+filepath.Join(dir, "b-broken.yaml")+":3: malformed YAML")
	require.Contains(t, out, "1 passed, 2 failed")
}

// TestTreeInvalidManifest: a manifest the engine cannot read exits non-zero, naming each
// problem once by file, line and field of the user's object.
func TestTreeInvalidManifest(t *testing.T) {
	example, err := os.ReadFile("../../examples/jobset-leader-workers.yaml")
	require.NoError(t, err)
	tests := map[string]struct {
		from, to string
		want     []string
	}{
		"replicas not a number": {from: "replicas: 2", to: "replicas: two", want: []string{`:33: spec.replicatedJobs[1].replicas: expected an integer, got "two"`}},
		"memory not a quantity": {from: "memory: 8Gi", to: "memory: 8GB", want: []string{
			`spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.memory: expected a Kubernetes quantity`,
			`spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.requests.memory: expected a Kubernetes quantity`,
		}},
		"negative GPUs": {from: `nvidia.com/gpu: 4`, to: `nvidia.com/gpu: -4`, want: []string{
			`:28: spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]: must not be negative, got -4`,
			`:48: spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]: must not be negative, got -4`,
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(string(example), tc.from, tc.to, -1)
			require.NotEqual(t, string(example), bad, "the edit applies")
			file := filepath.Join(t.TempDir(), "job.yaml")
			require.NoError(t, os.WriteFile(file, []byte(bad), 0o644))
			_, err := run(t, "tree", "-f", file)
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), file)
				require.Equal(t, 1, strings.Count(err.Error(), w), "reported once: %s\n%s", w, err)
			}
		})
	}
}
