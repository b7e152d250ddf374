package definitions_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// TestObjectCollectionLimit: a list or map far longer than any workload has is refused before
// any expression runs over it (cel-go's cost tracking slows down with the square of a loop's
// length), and the reason names it.
func TestObjectCollectionLimit(t *testing.T) {
	long := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = map[string]any{"type": "Ready", "status": "False"}
		}
		return l
	}
	wide := map[string]any{}
	for i := range definitions.MaxObjectCollection + 1 {
		wide["k"+strconv.Itoa(i)] = "v"
	}
	tests := map[string]struct {
		status     map[string]any
		labels     map[string]any
		wantReason string // empty: readable
	}{
		"a status list at the limit is read": {status: map[string]any{"conditions": long(definitions.MaxObjectCollection)}},
		"one more entry is refused, named": {
			status:     map[string]any{"conditions": long(definitions.MaxObjectCollection + 1)},
			wantReason: "cannot read the workload: status.conditions has 10001 entries, more than the 10000 a list or map of a workload may have",
		},
		"a nested list is named by its location": {
			status:     map[string]any{"replicatedJobsStatus": []any{map[string]any{"name": "w", "history": long(20_000)}}},
			wantReason: "status.replicatedJobsStatus[0].history has 20000 entries",
		},
		"a map counts its keys": {labels: wide, wantReason: "metadata.labels has 10001 entries"},
	}
	def := compile(t, jobSetDef)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, jobSet)
			if tc.status != nil {
				obj.Object["status"] = tc.status
			}
			if tc.labels != nil {
				obj.Object["metadata"].(map[string]any)["labels"] = tc.labels
			}
			for _, live := range []*definitions.LiveData{nil, {Pods: []map[string]any{{"metadata": map[string]any{"name": "p"}}}}} {
				expandFn := def.Expand
				if live != nil {
					expandFn = func(o *unstructured.Unstructured) (*definitions.Workload, error) { return def.ExpandLive(o, live) }
				}
				w, err := expandFn(obj)
				require.NoError(t, err)
				if tc.wantReason == "" {
					assert.NotEqual(t, v1alpha1.StateUnknown, w.Status.State, w.Status.Reason)
					assert.Positive(t, w.Totals.Pods)
					continue
				}
				assert.Equal(t, v1alpha1.StateUnknown, w.Status.State)
				assert.Contains(t, w.Status.Reason, tc.wantReason)
				assert.Empty(t, w.Roles, "nothing is evaluated")
				assert.Empty(t, w.Groups)
				assert.NotEmpty(t, w.Warnings, "the grouper reports warnings")
				if live != nil {
					require.NotNil(t, w.Live, "the live summary is still there")
					assert.Equal(t, 1, w.Live.Pods)
				}
			}
		})
	}
}

// TestWorkloadPodLimit: each role may have up to a million pods, and so may the workload as a
// whole: many roles at the role limit would otherwise list millions of replicas.
func TestWorkloadPodLimit(t *testing.T) {
	w := expand(t, jobSetDef, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: j}
spec:
  replicatedJobs:
  - {name: a, replicas: 1, template: {spec: {parallelism: 700000, template: {}}}}
  - {name: b, replicas: 1, template: {spec: {parallelism: 300000, template: {}}}}
  - {name: c, replicas: 1, template: {spec: {parallelism: 1, template: {}}}}
`)
	assert.Equal(t, v1alpha1.StateUnknown, w.Status.State)
	assert.Equal(t, "cannot read the workload: role c (spec.replicatedJobs[2].template.spec.template): its 1 pods would take the workload past the 1000000 pods one workload may have", w.Status.Reason)
	assert.EqualValues(t, 1_000_000, w.Totals.Pods, "a and b, exactly at the limit, are read")
}

// TestNegativeResources: Kubernetes rejects pods with negative requests or limits, so their
// role has no pods the scheduler will see; counted, they would cancel other roles' GPUs out.
func TestNegativeResources(t *testing.T) {
	tests := map[string]struct {
		spec string
		want string
	}{
		"container limit": {
			spec: `{containers: [{name: a}, {name: b, resources: {limits: {nvidia.com/gpu: -8}}}]}`,
			want: `pod template: spec.containers[1].resources.limits["nvidia.com/gpu"] is negative (-8)`,
		},
		"init container request": {
			spec: `{initContainers: [{name: i, resources: {requests: {cpu: -1m}}}], containers: [{name: a}]}`,
			want: "pod template: spec.initContainers[0].resources.requests.cpu is negative (-1m)",
		},
		"pod-level request": {
			spec: `{resources: {requests: {memory: -1Gi}}, containers: [{name: a}]}`,
			want: "pod template: spec.resources.requests.memory is negative (-1Gi)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, jobSetDef, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: j}
spec:
  replicatedJobs:
  - {name: ok, replicas: 2, template: {spec: {template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]}}}}}
  - {name: bad, template: {spec: {template: {spec: `+tc.spec+`}}}}
`)
			assert.Equal(t, v1alpha1.StateUnknown, w.Status.State)
			assert.Contains(t, w.Status.Reason, "role bad (spec.replicatedJobs[1].template.spec.template): "+tc.want)
			assert.EqualValues(t, 8, w.Totals.GPUs, "the other role's GPUs, untouched")
		})
	}
}

// TestDecodeErrorNamesTheField: the pod template decoder says "unrecognized type: string";
// the reason must say where.
func TestDecodeErrorNamesTheField(t *testing.T) {
	tests := map[string]struct {
		template string
		want     string
	}{
		"a port number as a word": {
			template: `{spec: {containers: [{name: c, ports: [{containerPort: 80}, {containerPort: http}]}]}}`,
			want:     "decoding pod template: spec.containers[0].ports[1].containerPort: ",
		},
		"an object where a list belongs": {
			template: `{spec: {containers: {name: c}}}`,
			want:     "decoding pod template: spec.containers: ",
		},
		"a list where an object belongs": {
			template: `{metadata: {labels: [a, b]}, spec: {containers: [{name: c}]}}`,
			want:     "decoding pod template: metadata.labels: ",
		},
		"a quantity that is not one": {
			template: `{spec: {containers: [{name: c, resources: {requests: {memory: lots}}}]}}`,
			want:     "decoding pod template: spec.containers[0].resources.requests.memory: quantities must match",
		},
		"a label key that needs quoting": {
			template: `{metadata: {labels: {app.kubernetes.io/name: [x]}}, spec: {containers: [{name: c}]}}`,
			want:     `decoding pod template: metadata.labels["app.kubernetes.io/name"]: `,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, jobSetDef, `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: j}
spec:
  replicatedJobs:
  - {name: w, template: {spec: {template: `+tc.template+`}}}
`)
			assert.Equal(t, v1alpha1.StateUnknown, w.Status.State)
			assert.Contains(t, w.Status.Reason, "role w (spec.replicatedJobs[0].template.spec.template): "+tc.want)
		})
	}
}

// TestGangLargerThanItsMembers: a minMember no member pods can reach would hold the pods that
// do exist forever; the group is dropped with a warning. A workload without pods simply has no
// gang, and the min-member annotation, the user's word, still wins.
func TestGangLargerThanItsMembers(t *testing.T) {
	def := thingDef(`
roles:
- {name: w, podTemplate: spec.template, replicas: "self.spec.replicas"}
gang:
  groups:
  - {name: g, members: [w], minMember: "self.spec.want"}
`)
	tests := map[string]struct {
		object      string
		wantGroups  []int32
		wantWarning string
	}{
		"within the pods":  {object: "spec: {replicas: 3, want: 3, template: {}}", wantGroups: []int32{3}},
		"beyond the pods":  {object: "spec: {replicas: 3, want: 4, template: {}}", wantWarning: "gang group g: minMember 4 is more than the 3 pods of its members: no gang"},
		"no pods at all":   {object: "spec: {replicas: 0, want: 4, template: {}}"},
		"annotation wins":  {object: "metadata: {name: t, annotations: {workmap.dev/min-member: '5'}}\nspec: {replicas: 3, want: 4, template: {}}", wantGroups: []int32{5}},
		"a billion wanted": {object: "spec: {replicas: 2, want: 1000000000, template: {}}", wantWarning: "minMember 1000000000 is more than the 2 pods"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := "apiVersion: example.com/v1\nkind: Thing\n"
			if !strings.HasPrefix(tc.object, "metadata:") {
				src += "metadata: {name: t}\n"
			}
			w := expand(t, def, src+tc.object)
			var got []int32
			for _, g := range w.Groups {
				got = append(got, g.MinMember)
			}
			assert.Equal(t, tc.wantGroups, got)
			if tc.wantWarning == "" {
				assert.Empty(t, w.Warnings)
			} else {
				assert.Contains(t, strings.Join(w.Warnings, "\n"), tc.wantWarning)
			}
		})
	}
}

// TestComputedGroupsBounded: a computed list cannot make more groups than the workload has
// pods (plus the entries of one list): a count read from a malformed object must not make a
// million PodGroups.
func TestComputedGroupsBounded(t *testing.T) {
	w := expand(t, thingDef(`
roles:
- {name: w, podTemplate: spec.template, replicas: "self.spec.replicas"}
gang:
  groups:
  - {name: g, members: [w], computed: "[{'name': 'copy', 'minMember': 2, 'count': self.spec.copies}]", podGroup: "''"}
`), "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {replicas: 4, copies: 1000000, template: {}}\n")
	assert.Empty(t, w.Groups)
	assert.Contains(t, strings.Join(w.Warnings, "\n"), "gang group g: computed[0]: more groups than the workload has pods")
}

// TestLongReasonTruncated: a reason built from the object (every condition's message) stays
// one readable line.
func TestLongReasonTruncated(t *testing.T) {
	w := expand(t, thingDef(`
roles:
- {name: w, podTemplate: spec.template}
status:
- {state: Failed, when: "true", reason: "self.status.conditions.map(c, c.message).join('; ')"}
`), "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {template: {}}\nstatus:\n  conditions:\n"+
		strings.Repeat("  - {message: \"é ünicode message that goes on\"}\n", 200))
	assert.Equal(t, v1alpha1.StateFailed, w.Status.State)
	assert.LessOrEqual(t, len(w.Status.Reason), 1024)
	assert.True(t, utf8.ValidString(w.Status.Reason), "cut at a character boundary")
	assert.True(t, strings.HasPrefix(w.Status.Reason, "é ünicode message that goes on; é"))
	assert.True(t, strings.HasSuffix(w.Status.Reason, "…"))
}
