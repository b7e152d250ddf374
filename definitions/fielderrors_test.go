package definitions_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

// A field of the object the engine cannot read is an error naming the field in the object
// (not in the definition), once, so that an offline command can point at the user's line.
func TestExpandFieldErrors(t *testing.T) {
	const head = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n  replicatedJobs:\n"
	container := func(resources string) string {
		return "    template: {spec: {template: {spec: {containers: [{name: c, image: i, resources: " + resources + "}]}}}}\n"
	}
	tests := map[string]struct {
		object string
		want   []definitions.FieldError
	}{
		"a valid object has none": {
			object: head + "  - name: w\n    replicas: 2\n" + container("{limits: {nvidia.com/gpu: 4}}"),
		},
		"replicas that are not a number": {
			object: head + "  - name: w\n    replicas: two\n" + container("{}"),
			want:   []definitions.FieldError{{Path: "spec.replicatedJobs[0].replicas", Message: `expected an integer, got "two"`}},
		},
		"a memory that is not a Kubernetes quantity": {
			object: head + "  - name: w\n" + container("{requests: {memory: 8GB}}"),
			want: []definitions.FieldError{{
				Path:    "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.memory",
				Message: `expected a Kubernetes quantity (such as 8Gi, 500m or 4), got "8GB"`,
			}},
		},
		"a negative GPU count": {
			object: head + "  - name: w\n" + container("{limits: {nvidia.com/gpu: -4}}"),
			want: []definitions.FieldError{{
				Path:    `spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]`,
				Message: "must not be negative, got -4",
			}},
		},
		"one error per role": {
			object: head + "  - name: a\n    replicas: two\n" + container("{}") + "  - name: b\n" + container("{limits: {nvidia.com/gpu: -1}}"),
			want: []definitions.FieldError{
				{Path: "spec.replicatedJobs[0].replicas", Message: `expected an integer, got "two"`},
				{Path: `spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]`, Message: "must not be negative, got -1"},
			},
		},
		"a list where an object belongs": {
			object: head + "  - name: w\n    template: {spec: {template: [1]}}\n",
			want:   []definitions.FieldError{{Path: "spec.replicatedJobs[0].template.spec.template", Message: "expected an object, got a list"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, jobSetDef, tc.object)
			require.Equal(t, tc.want, w.Errors)
			if len(tc.want) > 0 {
				require.Equal(t, "Unknown", string(w.Status.State))
			}
			var pods int64
			for _, r := range w.Roles {
				pods += r.Pods
			}
			require.Equal(t, pods, w.Totals.Pods, "the totals add up the roles")
		})
	}
}
