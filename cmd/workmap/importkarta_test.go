package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

const kartaJobSet = `apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: jobset}
spec:
  structureDefinition:
    rootComponent:
      name: jobset
      kind: {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}
      statusDefinition:
        conditionsDefinition: {path: .status.conditions}
        statusMappings:
          completed: [{byConditions: [{type: Completed, status: "True"}]}]
          failed: [{byConditions: [{type: Failed, status: "True"}]}]
    childComponents:
    - name: replicatedjob
      kind: {group: batch, version: v1, kind: Job}
      ownerRef: jobset
      specDefinition: {podTemplateSpecPath: '.spec.replicatedJobs[].template.spec.template'}
      scaleDefinition: {replicasPath: '.spec.replicatedJobs[] | .replicas * .template.spec.parallelism'}
      instanceIdPath: '.spec.replicatedJobs[].name'
      podSelector:
        componentInstanceSelector: {idPath: '.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]'}
  optimizationInstructions:
    gangScheduling:
      podGroups:
      - name: job
        members:
        - componentName: replicatedjob
          groupByKeyPaths: ['.metadata.labels["jobset.sigs.k8s.io/jobset-name"]']
`

const kartaDeployment = `apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: deployment}
spec:
  structureDefinition:
    rootComponent:
      name: deployment
      kind: {group: apps, version: v1, kind: Deployment}
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: .spec.replicas}
`

func TestImportKarta(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	tests := map[string]struct {
		file        string
		wantDefs    []string
		wantStderr  []string
		wantErr     string
		wantComment string
	}{
		"a ResourceInterface": {
			file:     write("jobset.yaml", kartaJobSet),
			wantDefs: []string{"jobsets.jobset.x-k8s.io"},
			wantStderr: []string{
				"not converted: spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath: `.spec.replicatedJobs[] | .replicas * .template.spec.parallelism` is not a simple jq path (it uses a pipe, arithmetic): replicas default to 1",
				"warning: spec.structureDefinition.rootComponent.statusDefinition.statusMappings: status mappings are now ordered first-match rules: failed → Failed, completed → Completed, anything else → Pending.",
				"warning: spec.optimizationInstructions.gangScheduling.podGroups[0]: minMember is now computed once for group job",
			},
			wantComment: "# - not converted: spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath: ",
		},
		"several documents, issues prefixed with the Karta's name": {
			file:       write("both.yaml", kartaJobSet+"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"+kartaDeployment),
			wantDefs:   []string{"jobsets.jobset.x-k8s.io", "deployments.apps"},
			wantStderr: []string{"warning: jobset: spec.optimizationInstructions.gangScheduling.podGroups[0]: "},
		},
		"a Karta without issues": {
			file:     write("deployment.yaml", kartaDeployment),
			wantDefs: []string{"deployments.apps"},
		},
		"nothing convertible": {
			file:       write("empty.yaml", "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: k}\nspec: {structureDefinition: {rootComponent: {name: k}}}\n"),
			wantStderr: []string{"not converted: spec.structureDefinition.rootComponent.kind: the root component needs a kind with a version"},
			wantErr:    "nothing could be converted",
		},
		"not a Karta":    {file: write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), wantErr: "no Karta (run.ai/v1alpha1) or ResourceInterface"},
		"malformed YAML": {file: write("bad.yaml", "apiVersion: run.ai/v1alpha1\nkind: [Karta\n"), wantErr: "bad.yaml:2: malformed YAML"},
		"missing file":   {file: filepath.Join(dir, "nope.yaml"), wantErr: "no such file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			out, err := runWith(t, func(o *options) { o.errOut = &stderr }, "import-karta", tc.file)
			for _, want := range tc.wantStderr {
				assert.Contains(t, stderr.String(), want)
			}
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if line != "" {
					assert.Regexp(t, `^(warning|not converted): \S`, line, "one issue per line")
				}
			}
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			if len(tc.wantStderr) == 0 {
				assert.Empty(t, stderr.String())
			}
			if tc.wantComment != "" {
				assert.Contains(t, out, tc.wantComment, "issues are repeated as comments in the output")
			}
			defs, err := definitions.Decode([]byte(out), "stdout")
			require.NoError(t, err)
			var names []string
			for _, d := range defs {
				names = append(names, d.Name)
				_, err := definitions.Compile(d, definitions.CompileOptions{})
				require.NoError(t, err, "the printed definition compiles")
			}
			assert.Equal(t, tc.wantDefs, names)
		})
	}
}

// TestImportKartaThenTree: a converted definition drives `tree` like a catalog one.
func TestImportKartaThenTree(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "jobset-karta.yaml")
	simple := strings.Replace(kartaJobSet, "'.spec.replicatedJobs[] | .replicas * .template.spec.parallelism'", "'.spec.replicatedJobs[].replicas'", 1)
	require.NoError(t, os.WriteFile(in, []byte(simple), 0o644))
	out, err := runWith(t, func(o *options) { o.errOut = &bytes.Buffer{} }, "import-karta", in)
	require.NoError(t, err)
	def := filepath.Join(dir, "jobset-definition.yaml")
	require.NoError(t, os.WriteFile(def, []byte(out), 0o644))
	tree, err := run(t, "tree", "-f", example, "--definitions", def)
	require.NoError(t, err)
	assert.Contains(t, tree, "Total: 3 pods, 12 GPUs")
	assert.Contains(t, tree, "Gang job (leader, workers): minMember 3")
}
