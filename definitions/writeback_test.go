package definitions_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// edit is one expected write: the concrete location (field names and list indices) and value.
type edit struct {
	at    []any
	value any
}

// at builds a location.
func at(steps ...any) []any { return steps }

// applyEdit writes value at a concrete location of obj, creating missing objects on the way;
// it is the tests' independent model of what SetPodTemplateField should have done.
func applyEdit(t *testing.T, obj map[string]any, e edit) {
	t.Helper()
	var cur any = obj
	for i, step := range e.at {
		last := i == len(e.at)-1
		switch s := step.(type) {
		case string:
			m, ok := cur.(map[string]any)
			require.True(t, ok, "step %d (%s) is not in an object", i, s)
			if last {
				m[s] = e.value
				return
			}
			if m[s] == nil {
				m[s] = map[string]any{}
			}
			cur = m[s]
		case int:
			l, ok := cur.([]any)
			require.True(t, ok, "step %d ([%d]) is not in a list", i, s)
			require.Less(t, s, len(l))
			if last {
				l[s] = e.value
				return
			}
			cur = l[s]
		default:
			t.Fatalf("bad step %v", step)
		}
	}
}

var podSpecDef = thingDef("roles:\n- {name: main, podSpec: spec.podSpec}\n")

const podSpecObject = `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, labels: {keep: me}}
spec:
  podSpec: {containers: [{name: c, image: i}]}
  other: {untouched: true}
`

// componentsDef has a podFields role with a [*] base over a map.
var componentsDef = thingDef(`
roles:
- name: component
  podFields:
    base: spec.components[*]
    resources: resources
    labels: podLabels
  instanceName: key
`)

const componentsObject = `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  components:
    proxy: {resources: {requests: {cpu: "1"}}}
    query: {podLabels: {tier: q}}
`

// mixedDef has a pod template role and a bare pod spec role.
var mixedDef = thingDef(`
roles:
- {name: launcher, podTemplate: spec.launcher.template}
- {name: worker, podSpec: spec.worker.podSpec}
`)

const mixedObject = `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  launcher: {template: {spec: {containers: [{name: l}]}}}
  worker: {podSpec: {containers: [{name: w}]}}
`

func TestSetPodTemplateField(t *testing.T) {
	const rj = "replicatedJobs"
	tests := map[string]struct {
		def, object string
		field       string
		value       any
		wantN       int
		want        []edit
		wantErr     string
	}{
		"label in every instance of every role": {
			def: jobSetDef, object: jobSet,
			field: `metadata.labels["team"]`, value: "ml",
			wantN: 2,
			want: []edit{
				{at("spec", rj, 0, "template", "spec", "template", "metadata", "labels", "team"), "ml"},
				{at("spec", rj, 1, "template", "spec", "template", "metadata", "labels", "team"), "ml"},
			},
		},
		"label with dots and slashes in the key": {
			def: jobSetDef, object: jobSet,
			field: `metadata.labels['kai.scheduler/queue']`, value: "research",
			wantN: 2,
			want: []edit{
				{at("spec", rj, 0, "template", "spec", "template", "metadata", "labels", "kai.scheduler/queue"), "research"},
				{at("spec", rj, 1, "template", "spec", "template", "metadata", "labels", "kai.scheduler/queue"), "research"},
			},
		},
		"schedulerName": {
			def: jobSetDef, object: jobSet,
			field: "spec.schedulerName", value: "kai-scheduler",
			wantN: 2,
			want: []edit{
				{at("spec", rj, 0, "template", "spec", "template", "spec", "schedulerName"), "kai-scheduler"},
				{at("spec", rj, 1, "template", "spec", "template", "spec", "schedulerName"), "kai-scheduler"},
			},
		},
		"a field of every container": {
			def: jobSetDef, object: jobSet,
			field: "spec.containers[*].imagePullPolicy", value: "Always",
			wantN: 2,
			want: []edit{
				{at("spec", rj, 0, "template", "spec", "template", "spec", "containers", 0, "imagePullPolicy"), "Always"},
				{at("spec", rj, 1, "template", "spec", "template", "spec", "containers", 0, "imagePullPolicy"), "Always"},
			},
		},
		"structured value is stored in unstructured form": {
			def: jobSetDef, object: jobSet,
			field: "spec.tolerations", value: []map[string]any{{"key": "gpu", "operator": "Exists", "tolerationSeconds": 30}},
			wantN: 2,
			want: []edit{
				{at("spec", rj, 0, "template", "spec", "template", "spec", "tolerations"), []any{map[string]any{"key": "gpu", "operator": "Exists", "tolerationSeconds": int64(30)}}},
				{at("spec", rj, 1, "template", "spec", "template", "spec", "tolerations"), []any{map[string]any{"key": "gpu", "operator": "Exists", "tolerationSeconds": int64(30)}}},
			},
		},
		"no instances: nothing written": {
			def: jobSetDef, object: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec: {}\n",
			field: `metadata.labels["team"]`, value: "ml",
			wantN: 0,
		},
		"pod spec role: spec field": {
			def: podSpecDef, object: podSpecObject,
			field: "spec.schedulerName", value: "kai",
			wantN: 1,
			want:  []edit{{at("spec", "podSpec", "schedulerName"), "kai"}},
		},
		"pod spec role refuses metadata": {
			def: podSpecDef, object: podSpecObject,
			field: `metadata.labels["team"]`, value: "ml",
			wantErr: `role main: metadata.labels["team"]: this role embeds a bare pod spec, only spec.<field> can be set`,
		},
		"pod spec role refuses the whole spec": {
			def: podSpecDef, object: podSpecObject,
			field: "spec", value: map[string]any{},
			wantErr: "only spec.<field> can be set",
		},
		"pod fields: label maps to the labels path": {
			def: nimDef, object: nimObject,
			field: `metadata.labels["x"]`, value: "y",
			wantN: 1,
			want:  []edit{{at("spec", "labels", "x"), "y"}},
		},
		"pod fields: container resources map to the resources path": {
			def: nimDef, object: nimObject,
			field: "spec.containers[*].resources", value: map[string]any{"limits": map[string]any{"nvidia.com/gpu": "4"}},
			wantN: 1,
			want:  []edit{{at("spec", "resources"), map[string]any{"limits": map[string]any{"nvidia.com/gpu": "4"}}}},
		},
		"pod fields: a field below container resources": {
			def: nimDef, object: nimObject,
			field: `spec.containers[*].resources.limits["nvidia.com/gpu"]`, value: "1",
			wantN: 1,
			want:  []edit{{at("spec", "resources", "limits", "nvidia.com/gpu"), "1"}},
		},
		"pod fields: a declared field that is absent is created": {
			def: nimDef, object: nimObject,
			field: "spec.schedulerName", value: "kai",
			wantN: 1,
			want:  []edit{{at("spec", "schedulerName"), "kai"}},
		},
		"pod fields: the whole annotations map": {
			def: nimDef, object: nimObject,
			field: "metadata.annotations", value: map[string]string{"a": "b"},
			wantN: 1,
			want:  []edit{{at("spec", "annotations"), map[string]any{"a": "b"}}},
		},
		"pod fields: a field the role does not declare": {
			def: nimDef, object: nimObject,
			field: "spec.affinity", value: map[string]any{},
			wantErr: "role nim: spec.affinity: no podFields entry of this role holds it",
		},
		"pod fields: a container field other than resources": {
			def: nimDef, object: nimObject,
			field: "spec.containers[*].image", value: "x",
			wantErr: "no podFields entry of this role holds it",
		},
		"pod fields with a [*] base": {
			def: componentsDef, object: componentsObject,
			field: `metadata.labels["team"]`, value: "ml",
			wantN: 2,
			want: []edit{
				{at("spec", "components", "proxy", "podLabels", "team"), "ml"},
				{at("spec", "components", "query", "podLabels", "team"), "ml"},
			},
		},
		"all or nothing: one role refuses": {
			def: mixedDef, object: mixedObject,
			field: `metadata.labels["team"]`, value: "ml",
			wantErr: "role worker: ",
		},
		"mixed roles: a spec field goes to both": {
			def: mixedDef, object: mixedObject,
			field: "spec.priorityClassName", value: "high",
			wantN: 2,
			want: []edit{
				{at("spec", "launcher", "template", "spec", "priorityClassName"), "high"},
				{at("spec", "worker", "podSpec", "priorityClassName"), "high"},
			},
		},
		"empty field": {
			def: jobSetDef, object: jobSet,
			field: "", value: "x",
			wantErr: "field path is empty",
		},
		"field that does not parse": {
			def: jobSetDef, object: jobSet,
			field: "metadata.labels[", value: "x",
			wantErr: `path "metadata.labels["`,
		},
		"value that cannot be stored": {
			def: jobSetDef, object: jobSet,
			field: "spec.schedulerName", value: make(chan int),
			wantErr: "spec.schedulerName",
		},
		"a location of the wrong type": {
			def: jobSetDef, object: `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: j}
spec:
  replicatedJobs:
  - {name: a, template: {spec: {template: {}}}}
  - {name: b, template: {spec: {template: {metadata: {labels: "oops"}}}}}`,
			field: `metadata.labels["team"]`, value: "ml",
			wantErr: "expected object",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := compile(t, tc.def)
			obj := object(t, tc.object)
			orig := obj.DeepCopy()
			n, err := d.SetPodTemplateField(obj, tc.field, tc.value)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Zero(t, n)
				if diff := cmp.Diff(orig.Object, obj.Object); diff != "" {
					t.Errorf("object changed on error (-before +after):\n%s", diff)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantN, n)
			want := orig.DeepCopy().Object
			for _, e := range tc.want {
				applyEdit(t, want, e)
			}
			if diff := cmp.Diff(want, obj.Object); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetPodTemplateFieldRoundTrip writes through the definition and reads the result back
// through an expansion.
func TestSetPodTemplateFieldRoundTrip(t *testing.T) {
	tests := map[string]struct {
		def, object string
	}{
		"pod templates": {jobSetDef, jobSet},
		"pod spec":      {podSpecDef, podSpecObject},
		"pod fields":    {nimDef, nimObject},
		"mixed":         {mixedDef, mixedObject},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := compile(t, tc.def)
			obj := object(t, tc.object)
			n, err := d.SetPodTemplateField(obj, "spec.schedulerName", "kai")
			require.NoError(t, err)
			require.Positive(t, n)
			w, err := d.Expand(obj)
			require.NoError(t, err)
			require.Len(t, w.Roles, n)
			for _, r := range w.Roles {
				require.Equal(t, "kai", r.Template.Spec.SchedulerName, "role %s", r.Name)
			}
		})
	}
}

func TestSetPodTemplateFieldThenLabelsVisible(t *testing.T) {
	d := compile(t, nimDef)
	obj := object(t, nimObject)
	_, err := d.SetPodTemplateField(obj, `metadata.labels["kai.scheduler/queue"]`, "q1")
	require.NoError(t, err)
	w, err := d.Expand(obj)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"team": "ml", "kai.scheduler/queue": "q1"}, w.Roles[0].Template.Labels)
	require.Equal(t, fmt.Sprint(map[string]any{"team": "ml", "kai.scheduler/queue": "q1"}), fmt.Sprint(obj.Object["spec"].(map[string]any)["labels"]))
}
