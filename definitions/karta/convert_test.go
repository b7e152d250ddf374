package karta

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// convertFile converts a testdata file holding one Karta, checks that the definition compiles
// and returns it with its issues.
func convertFile(t *testing.T, name string) (*v1alpha1.WorkloadDefinition, []Issue) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	results, err := Convert(data, name)
	require.NoError(t, err)
	require.Len(t, results, 1)
	r := results[0]
	require.NotNil(t, r.Definition, "issues: %v", r.Issues)
	require.NoError(t, r.Err)
	_, err = definitions.Compile(r.Definition, definitions.CompileOptions{})
	require.NoError(t, err)
	return r.Definition, r.Issues
}

// conditionRule is the rule a single-condition matcher becomes: its reason is the condition's
// message.
func conditionRule(state v1alpha1.State, condType string) v1alpha1.StatusRule {
	test := "c.type == '" + condType + "' && c.status == 'True'"
	return v1alpha1.StatusRule{
		State:  state,
		When:   "self.?status.?conditions.orValue([]).exists(c, " + test + ")",
		Reason: "self.?status.?conditions.orValue([]).filter(c, " + test + ")[0].?message.orValue('condition " + condType + " is True')",
	}
}

var pending = v1alpha1.StatusRule{State: v1alpha1.StatePending, When: "true", Reason: "'no status mapping matched'"}

type wantIssue struct {
	severity Severity
	field    string
}

func issueKeys(is []Issue) []wantIssue {
	if len(is) == 0 {
		return nil
	}
	out := make([]wantIssue, len(is))
	for i, x := range is {
		out[i] = wantIssue{x.Severity, x.Field}
	}
	return out
}

func TestConvert(t *testing.T) {
	const (
		statusMappings = "spec.structureDefinition.rootComponent.statusDefinition.statusMappings"
		group0         = "spec.optimizationInstructions.gangScheduling.podGroups[0]"
	)
	tests := map[string]struct {
		file       string
		name       string
		spec       v1alpha1.WorkloadDefinitionSpec
		wantIssues []wantIssue
	}{
		"JobSet (ResourceInterface): one role per replicatedJob, paths through the template's []": {
			file: "jobset.yaml",
			name: "jobsets.jobset.x-k8s.io",
			spec: v1alpha1.WorkloadDefinitionSpec{
				Workload: v1alpha1.WorkloadType{Group: "jobset.x-k8s.io", Kind: "JobSet", Versions: []string{"v1alpha2"}},
				Roles: []v1alpha1.Role{{
					Name:         "replicatedjob",
					PodTemplate:  "spec.replicatedJobs[*].template.spec.template",
					InstanceName: "item.?name.orValue(key)",
					Replicas:     "item.?replicas.orValue(1)",
					PodInstance:  "pod.metadata.?labels[?'jobset.sigs.k8s.io/replicatedjob-name'].orValue('')",
				}},
				Children: []v1alpha1.ChildKind{{Group: "batch", Version: "v1", Kind: "Job"}},
				Pods:     &v1alpha1.PodSelection{Selector: "{'jobset.sigs.k8s.io/jobset-name': self.metadata.name}"},
				Status: []v1alpha1.StatusRule{
					conditionRule(v1alpha1.StateFailed, "Failed"),
					conditionRule(v1alpha1.StateCompleted, "Completed"),
					pending,
				},
				Gang: &v1alpha1.Gang{Groups: []v1alpha1.GangGroup{{Name: "job", Members: []string{"replicatedjob"}}}},
			},
			wantIssues: []wantIssue{
				{SemanticChange, statusMappings},
				{SemanticChange, group0},
				{SemanticChange, group0 + ".members[0].groupByKeyPaths[0]"},
			},
		},
		"PyTorchJob (Karta): a role per replica type, told apart by the replica-type label": {
			file: "pytorchjob.yaml",
			name: "pytorchjobs.kubeflow.org",
			spec: v1alpha1.WorkloadDefinitionSpec{
				Workload: v1alpha1.WorkloadType{Group: "kubeflow.org", Kind: "PyTorchJob", Versions: []string{"v1"}},
				Roles: []v1alpha1.Role{{
					Name:        "master",
					PodTemplate: "spec.pytorchReplicaSpecs.Master.template",
					Replicas:    "self.?spec.?pytorchReplicaSpecs.?Master.?replicas.orValue(1)",
					PodInstance: "pod.metadata.?labels[?'training.kubeflow.org/replica-type'].orValue('') == 'master' ? 'master' : ''",
					PodReplica:  "pod.metadata.?labels[?'training.kubeflow.org/replica-index'].orValue('-1')",
				}, {
					Name:        "worker",
					PodTemplate: "spec.pytorchReplicaSpecs.Worker.template",
					Replicas:    "self.?spec.?pytorchReplicaSpecs.?Worker.?replicas.orValue(1)",
					MinReplicas: "self.?spec.?elasticPolicy.?minReplicas.orValue(0)",
					PodInstance: "pod.metadata.?labels[?'training.kubeflow.org/replica-type'].orValue('') == 'worker' ? 'worker' : ''",
					PodReplica:  "pod.metadata.?labels[?'training.kubeflow.org/replica-index'].orValue('-1')",
				}},
				Pods: &v1alpha1.PodSelection{Selector: "{'training.kubeflow.org/job-name': self.metadata.name}"},
				Status: []v1alpha1.StatusRule{
					conditionRule(v1alpha1.StateFailed, "Failed"),
					conditionRule(v1alpha1.StateCompleted, "Succeeded"),
					conditionRule(v1alpha1.StateRunning, "Running"),
					conditionRule(v1alpha1.StateInitializing, "Created"),
					pending,
				},
				Gang: &v1alpha1.Gang{Groups: []v1alpha1.GangGroup{{Name: "job", Members: []string{"master", "worker"}}}},
			},
			wantIssues: []wantIssue{
				{SemanticChange, statusMappings},
				{SemanticChange, group0},
				{SemanticChange, group0 + ".members[0].groupByKeyPaths[0]"},
			},
		},
		"PyTorchJob over the map of replica specs: instances named by key, ORed matchers, a // default": {
			file: "pytorchjob-map.yaml",
			name: "pytorchjobs.kubeflow.org",
			spec: v1alpha1.WorkloadDefinitionSpec{
				Workload: v1alpha1.WorkloadType{Group: "kubeflow.org", Kind: "PyTorchJob", Versions: []string{"v1"}},
				Roles: []v1alpha1.Role{{
					Name:         "replica",
					PodTemplate:  "spec.pytorchReplicaSpecs[*].template",
					InstanceName: "key",
					Replicas:     "item.?replicas.orValue(1)",
					PodInstance:  "pod.metadata.?labels[?'training.kubeflow.org/replica-type'].orValue('')",
					PodReplica:   "pod.metadata.?labels[?'training.kubeflow.org/replica-index'].orValue('0')",
				}},
				Pods: &v1alpha1.PodSelection{Selector: "{'training.kubeflow.org/job-name': self.metadata.name}"},
				Status: []v1alpha1.StatusRule{
					conditionRule(v1alpha1.StateFailed, "Failed"),
					conditionRule(v1alpha1.StateCompleted, "Succeeded"),
					{
						State: v1alpha1.StateRunning,
						When: "(self.?status.?conditions.orValue([]).exists(c, c.type == 'Running' && c.status == 'True')) || " +
							"(self.?status.?conditions.orValue([]).exists(c, c.type == 'Restarting' && c.status == 'True'))",
						Reason: "'condition Running is True, or condition Restarting is True'",
					},
					pending,
				},
				Gang: &v1alpha1.Gang{Groups: []v1alpha1.GangGroup{{Name: "job", Members: []string{"replica"}}}},
			},
			wantIssues: []wantIssue{
				{SemanticChange, "spec.structureDefinition.childComponents[0].podSelector.replicaSelector.keyPath"},
				{SemanticChange, statusMappings},
				{SemanticChange, group0},
				{SemanticChange, group0 + ".members[0].groupByKeyPaths[0]"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			def, issues := convertFile(t, tc.file)
			assert.Equal(t, "workmap.dev/v1alpha1", def.APIVersion)
			assert.Equal(t, "WorkloadDefinition", def.Kind)
			assert.Equal(t, tc.name, def.Name)
			if diff := cmp.Diff(tc.spec, def.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIssues, issueKeys(issues), cmp.AllowUnexported(wantIssue{})); diff != "" {
				t.Errorf("issues (-want +got):\n%s\nall: %v", diff, issues)
			}
		})
	}
}

func TestConvertWarnings(t *testing.T) {
	_, issues := convertFile(t, "pytorchjob.yaml")
	byField := map[string]string{}
	for _, is := range issues {
		byField[is.Field] = is.Message
	}
	assert.Contains(t, byField["spec.structureDefinition.rootComponent.statusDefinition.statusMappings"],
		"failed → Failed, completed → Completed, running → Running, initializing → Initializing, anything else → Pending")
	assert.Contains(t, byField["spec.optimizationInstructions.gangScheduling.podGroups[0]"], "minMember is now computed once for group job")
	assert.Contains(t, byField["spec.optimizationInstructions.gangScheduling.podGroups[0]"], "Karta computed it per member (Master, Worker)")
}

func TestConvertDocuments(t *testing.T) {
	jobset, err := os.ReadFile("testdata/jobset.yaml")
	require.NoError(t, err)
	pytorch, err := os.ReadFile("testdata/pytorchjob.yaml")
	require.NoError(t, err)
	noKind := "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: broken}\nspec:\n  structureDefinition:\n    rootComponent: {name: x}\n"
	tests := map[string]struct {
		input     string
		wantNames []string
		wantDefs  []string // "" where nothing was converted
		wantErr   string
	}{
		"several documents, other kinds ignored": {
			input:     string(jobset) + "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" + string(pytorch),
			wantNames: []string{"jobset", "pytorchjob"},
			wantDefs:  []string{"jobsets.jobset.x-k8s.io", "pytorchjobs.kubeflow.org"},
		},
		"a document that cannot be converted gives a result without definition": {
			input:     noKind + "---\n" + string(jobset),
			wantNames: []string{"broken", "jobset"},
			wantDefs:  []string{"", "jobsets.jobset.x-k8s.io"},
		},
		"no Karta":            {input: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", wantErr: "no Karta (run.ai/v1alpha1) or ResourceInterface"},
		"empty file":          {input: "", wantErr: "found: no objects"},
		"malformed YAML":      {input: "apiVersion: run.ai/v1alpha1\nkind: [Karta\n", wantErr: "in.yaml:2: malformed YAML"},
		"unsupported version": {input: "apiVersion: run.ai/v2\nkind: Karta\nmetadata: {name: k}\n", wantErr: "unsupported apiVersion run.ai/v2"},
		"wrong shape":         {input: "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: k}\nspec: {structureDefinition: {childComponents: {}}}\n", wantErr: `in.yaml:1: Karta "k": cannot unmarshal`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			results, err := Convert([]byte(tc.input), "in.yaml")
			if tc.wantErr != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			var names, defs []string
			for _, r := range results {
				names = append(names, r.Name)
				require.NoError(t, r.Err)
				if r.Definition == nil {
					defs = append(defs, "")
					require.NotEmpty(t, r.Issues, "a document that is not converted says why")
					continue
				}
				defs = append(defs, r.Definition.Name)
			}
			assert.Equal(t, tc.wantNames, names)
			assert.Equal(t, tc.wantDefs, defs)
		})
	}
}

// TestMarshalYAML: the printed definition reads back (strictly) as the same definition, with
// its fields in the API's order.
func TestMarshalYAML(t *testing.T) {
	for _, file := range []string{"jobset.yaml", "pytorchjob.yaml", "pytorchjob-map.yaml", "unconvertible.yaml"} {
		t.Run(file, func(t *testing.T) {
			def, _ := convertFile(t, file)
			out, err := MarshalYAML(def)
			require.NoError(t, err)
			back, err := definitions.Decode(out, file)
			require.NoError(t, err)
			require.Len(t, back, 1)
			if diff := cmp.Diff(def, back[0]); diff != "" {
				t.Errorf("round trip (-want +got):\n%s\n%s", diff, out)
			}
			s := string(out)
			require.Regexp(t, `(?s)^apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata:.*\nspec:\n  workload:.*\n  roles:\n  - name: `, s)
		})
	}
}
