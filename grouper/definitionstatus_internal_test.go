package grouper

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

func compileForTest(t *testing.T, src string) (*definitions.Definition, error) {
	t.Helper()
	defs, err := definitions.Decode([]byte(src), "definition.yaml")
	require.NoError(t, err)
	require.Len(t, defs, 1)
	return definitions.Compile(defs[0], definitions.CompileOptions{})
}

func definitionYAML(name, group, kind, replicas string) string {
	return `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: ` + name + `}
spec:
  workload: {group: ` + group + `, kind: ` + kind + `, versions: [v1]}
  roles:
  - {name: worker, podTemplate: spec.template, replicas: "` + replicas + `"}
`
}

// TestJudge: each cluster definition is invalid (with every problem and its field, and the
// last valid generation that stays in effect), in effect for its kind (saying when it
// overrides the catalog) or overridden by the one whose name sorts last.
func TestJudge(t *testing.T) {
	builtin, err := compileForTest(t, definitionYAML("jobsets.jobset.x-k8s.io", "jobset.x-k8s.io", "JobSet", "1"))
	require.NoError(t, err)
	compiled := []compiledDefinition{}
	add := func(name, group, kind, replicas string, generation int64) {
		d, err := compileForTest(t, definitionYAML(name, group, kind, replicas))
		compiled = append(compiled, compiledDefinition{name: name, generation: generation, groupKind: schema.GroupKind{Group: group, Kind: kind}, def: d, err: err})
	}
	add("a-widgets.example.com", "example.com", "Widget", "self.spec.workers", 1)
	add("b-widgets.example.com", "example.com", "Widget", "self.spec.workers", 3)
	add("gadgets.example.com", "example.com", "Gadget", "self.spec.(", 2)
	add("jobsets.jobset.x-k8s.io", "jobset.x-k8s.io", "JobSet", "2", 1)
	// Valid at generation 4, broken at 5: generation 4 stays in effect.
	add("trainers.example.com", "example.com", "Trainer", "self.spec.workers", 4)
	good := compiled[len(compiled)-1]
	add("trainers.example.com", "example.com", "Trainer", "self.spec.(", 5)
	compiled[len(compiled)-1].lastGood = &good
	compiled = append(compiled[:len(compiled)-2], compiled[len(compiled)-1])
	reg := definitions.NewRegistry()
	reg.Add(builtin)
	for _, c := range compiled {
		if d := c.inEffect(); d != nil {
			reg.Add(d)
		}
	}
	got := judge(compiled, reg, []*definitions.Definition{builtin})
	want := map[string]definitionResult{
		"a-widgets.example.com": {generation: 1, status: metav1.ConditionTrue, reason: "Compiled",
			message: "overridden by WorkloadDefinition b-widgets.example.com (of the same kind, Widget.example.com)"},
		"b-widgets.example.com": {generation: 3, status: metav1.ConditionTrue, reason: "Compiled", message: "in effect for Widget.example.com"},
		"gadgets.example.com": {generation: 2, status: metav1.ConditionFalse, reason: "Invalid",
			message: `spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error: no viable alternative at input '.(' (at column 11)`},
		"jobsets.jobset.x-k8s.io": {generation: 1, status: metav1.ConditionTrue, reason: "Compiled",
			message: "in effect for JobSet.jobset.x-k8s.io, overriding the embedded catalog's definition"},
		"trainers.example.com": {generation: 5, status: metav1.ConditionFalse, reason: "Invalid",
			message:   `generation 4, the last valid one, stays in effect; spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error: no viable alternative at input '.(' (at column 11)`,
			lastValid: &v1alpha1.LastValidDefinition{Generation: 4, Spec: good.def.Source.Spec}},
	}
	require.Equal(t, want, got)
	trainer, _ := reg.Lookup(schema.GroupKind{Group: "example.com", Kind: "Trainer"})
	require.Same(t, good.def, trainer, "the last valid generation is in effect")
}

// TestWithAccepted: the condition is set with its generation, other conditions are kept, and
// an object already as it should be is not written again.
func TestWithAccepted(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	obj := func(conditions ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "workmap.dev/v1alpha1", "kind": "WorkloadDefinition",
			"metadata": map[string]any{"name": "widgets.example.com", "generation": int64(2), "resourceVersion": "7"},
		}}
		if conditions != nil {
			u.Object["status"] = map[string]any{"conditions": conditions}
		}
		return u
	}
	cond := func(typ, status, reason, message string, generation int64) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
			"observedGeneration": generation, "lastTransitionTime": earlier.UTC().Format(time.RFC3339)}
	}
	valid := definitionResult{generation: 2, status: metav1.ConditionTrue, reason: "Compiled", message: "in effect for Widget.example.com"}
	tests := map[string]struct {
		obj        *unstructured.Unstructured
		want       definitionResult
		changed    bool
		keepsTime  bool
		otherStays bool
	}{
		"no status yet":            {obj: obj(), want: valid, changed: true},
		"already as it should be":  {obj: obj(cond("Accepted", "True", "Compiled", "in effect for Widget.example.com", 2)), want: valid},
		"an older generation":      {obj: obj(cond("Accepted", "True", "Compiled", "in effect for Widget.example.com", 1)), want: valid, changed: true, keepsTime: true},
		"was invalid, now correct": {obj: obj(cond("Accepted", "False", "Invalid", "spec.roles: Required value", 1)), want: valid, changed: true},
		"another condition stays":  {obj: obj(cond("Reviewed", "True", "ByHand", "ok", 1)), want: valid, changed: true, otherStays: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			updated, changed, err := withAccepted(tc.obj, tc.want)
			require.NoError(t, err)
			require.Equal(t, tc.changed, changed)
			if !changed {
				require.Nil(t, updated)
				return
			}
			require.Equal(t, "7", updated.GetResourceVersion(), "written over the version read")
			var status v1alpha1.WorkloadDefinitionStatus
			m, _, _ := unstructured.NestedMap(updated.Object, "status")
			b, err := yaml.Marshal(m)
			require.NoError(t, err)
			require.NoError(t, yaml.Unmarshal(b, &status))
			var accepted *metav1.Condition
			for i := range status.Conditions {
				if status.Conditions[i].Type == "Accepted" {
					accepted = &status.Conditions[i]
				}
			}
			require.NotNil(t, accepted)
			require.Equal(t, metav1.ConditionTrue, accepted.Status)
			require.Equal(t, "Compiled", accepted.Reason)
			require.Equal(t, int64(2), accepted.ObservedGeneration)
			require.Equal(t, tc.keepsTime, accepted.LastTransitionTime.Equal(&earlier), "the transition time moves only with the status")
			if tc.otherStays {
				require.Len(t, status.Conditions, 2)
			}
		})
	}
}

// TestInvalidMessageIsBounded: a definition with very many problems still fits the condition.
func TestInvalidMessageIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(definitionYAML("gadgets.example.com", "example.com", "Gadget", "self.spec.("))
	for i := range 2000 {
		b.WriteString("  - {name: r" + strings.Repeat("x", 40) + string(rune('a'+i%26)) + ", podTemplate: 'spec.t[', replicas: 'self.('}\n")
	}
	_, err := compileForTest(t, b.String())
	require.Error(t, err)
	require.LessOrEqual(t, len(invalidMessage(err)), maxConditionMessage)
}

// TestWorkloadDefinitionCRDStatus: the shipped CRD (and the chart's copy) has the status
// subresource and shows the Accepted condition in `kubectl get wd`.
func TestWorkloadDefinitionCRDStatus(t *testing.T) {
	for _, path := range []string{"../deploy/crds/workmap.dev_workloaddefinitions.yaml", "../deploy/helm/workmap-scheduler/crds/workmap.dev_workloaddefinitions.yaml"} {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var crd apiextensionsv1.CustomResourceDefinition
			require.NoError(t, yaml.UnmarshalStrict(data, &crd))
			require.Len(t, crd.Spec.Versions, 1)
			v := crd.Spec.Versions[0]
			require.NotNil(t, v.Subresources, "subresources")
			require.NotNil(t, v.Subresources.Status, "the status subresource: spec edits bump the generation, status writes do not")
			columns := map[string]string{}
			for _, c := range v.AdditionalPrinterColumns {
				columns[c.Name] = c.JSONPath
			}
			require.Equal(t, `.status.conditions[?(@.type=="Accepted")].status`, columns["Accepted"])
			require.Equal(t, `.status.conditions[?(@.type=="Accepted")].reason`, columns["Reason"])
			conditions := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"]
			require.Equal(t, "map", *conditions.XListType)
			require.Equal(t, []string{"type"}, conditions.XListMapKeys)
		})
	}
}
