package definitions_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// group is the comparable part of a definitions.Group.
type group struct {
	Name         string
	MinMember    int32
	Scope        v1alpha1.GangScope
	Replica      *int32
	Instance     string
	Members      []string
	Timeout      *int32
	MinResources map[string]string
}

func groups(w *definitions.Workload) []group {
	out := []group{}
	for _, g := range w.Groups {
		out = append(out, group{
			Name: g.Name, MinMember: g.MinMember, Scope: g.Scope, Replica: g.Replica, Instance: g.Instance,
			Members: g.Members, Timeout: g.TimeoutSeconds, MinResources: resList(g.MinResources),
		})
	}
	return out
}

// resList renders a resource list as strings, nil when empty.
func resList(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := map[string]string{}
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}

// rayDef is a RayCluster-like definition: a head and worker groups with minReplicas and
// hosts per replica, all in one workload gang.
var rayDef = thingDef(`
roles:
- name: head
  podTemplate: spec.head.template
- name: workers
  podTemplate: spec.workerGroups[*].template
  instanceName: item.groupName
  replicas: item.?replicas.orValue(0)
  minReplicas: item.?minReplicas.orValue(0)
  podsPerReplica: item.?numOfHosts.orValue(1)
gang:
  groups:
  - name: cluster
    members: [head, workers]
`)

func rayThing(annotations, workerGroups string) string {
	return `
apiVersion: example.com/v1
kind: Thing
metadata:
  name: ray
  annotations: {` + annotations + `}
spec:
  head:
    template:
      spec:
        containers: [{name: head, resources: {requests: {cpu: "2"}}}]
  workerGroups: ` + workerGroups + `
`
}

const twoWorkerGroups = `
  - groupName: big
    replicas: 3
    minReplicas: 2
    numOfHosts: 2
    template:
      spec:
        containers: [{name: w, resources: {limits: {nvidia.com/gpu: "4"}}}]
  - groupName: small
    replicas: 2
    template:
      spec:
        containers: [{name: w, resources: {requests: {cpu: "1"}}}]`

func TestGangWorkloadScope(t *testing.T) {
	minAvailableDef := thingDef(`
roles:
- name: head
  podTemplate: spec.head.template
- name: workers
  podTemplate: spec.workerGroups[*].template
  replicas: item.?replicas.orValue(0)
gang:
  groups:
  - name: cluster
    members: [head, workers]
    minMember: "self.spec.?minAvailable.orValue(0) > 0 ? self.spec.minAvailable : 100"
    timeoutSeconds: 30
`)
	tests := map[string]struct {
		def, object  string
		want         []group
		wantWarnings []string
	}{
		"default is the sum of minReplicas, else replicas, times podsPerReplica": {
			def:    rayDef,
			object: rayThing("", twoWorkerGroups),
			// head 1 + big min(2)×2 hosts + small 2×1
			want: []group{{Name: "cluster", MinMember: 7, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"},
				// the pods each role must start with: head, 2×2 of big, 2 of small
				MinResources: map[string]string{"cpu": "4", "nvidia.com/gpu": "16"}}},
		},
		"no minReplicas: all pods": {
			def: rayDef,
			object: rayThing("", `
  - {groupName: a, replicas: 3, template: {spec: {containers: [{name: w}]}}}`),
			want: []group{{Name: "cluster", MinMember: 4, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"},
				MinResources: map[string]string{"cpu": "2"}}},
		},
		"minReplicas above replicas is capped at replicas": {
			def: rayDef,
			object: rayThing("", `
  - {groupName: a, replicas: 1, minReplicas: 5, template: {spec: {containers: [{name: w}]}}}`),
			want: []group{{Name: "cluster", MinMember: 2, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"},
				MinResources: map[string]string{"cpu": "2"}}},
		},
		"a single pod needs no gang": {
			def:    rayDef,
			object: rayThing("", "[]"),
			want:   []group{},
		},
		"a workers group of zero replicas adds nothing": {
			def:    rayDef,
			object: rayThing("", `[{groupName: a, replicas: 0, template: {spec: {containers: [{name: w}]}}}]`),
			want:   []group{},
		},
		"annotation overrides the default": {
			def:    rayDef,
			object: rayThing(`workmap.dev/min-member: "3"`, twoWorkerGroups),
			want: []group{{Name: "cluster", MinMember: 3, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"},
				MinResources: map[string]string{"cpu": "2", "nvidia.com/gpu": "8"}}},
		},
		"annotation larger than the workload": {
			def:    rayDef,
			object: rayThing(`workmap.dev/min-member: "50"`, twoWorkerGroups),
			want: []group{{Name: "cluster", MinMember: 50, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"},
				// every pod there is
				MinResources: map[string]string{"cpu": "4", "nvidia.com/gpu": "24"}}},
		},
		"annotation of 1 removes the gang": {
			def:    rayDef,
			object: rayThing(`workmap.dev/min-member: "1"`, twoWorkerGroups),
			want:   []group{},
		},
		"annotation that is not a number is ignored with a warning": {
			def:          rayDef,
			object:       rayThing(`workmap.dev/min-member: "lots"`, twoWorkerGroups),
			want:         []group{{Name: "cluster", MinMember: 7, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, MinResources: map[string]string{"cpu": "4", "nvidia.com/gpu": "16"}}},
			wantWarnings: []string{"annotation workmap.dev/min-member ignored: want a positive integer"},
		},
		"annotation of zero is ignored with a warning": {
			def:          rayDef,
			object:       rayThing(`workmap.dev/min-member: "0"`, twoWorkerGroups),
			want:         []group{{Name: "cluster", MinMember: 7, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, MinResources: map[string]string{"cpu": "4", "nvidia.com/gpu": "16"}}},
			wantWarnings: []string{"annotation workmap.dev/min-member ignored: want a positive integer"},
		},
		"negative annotation is ignored with a warning": {
			def:          rayDef,
			object:       rayThing(`workmap.dev/min-member: "-4"`, twoWorkerGroups),
			want:         []group{{Name: "cluster", MinMember: 7, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, MinResources: map[string]string{"cpu": "4", "nvidia.com/gpu": "16"}}},
			wantWarnings: []string{"annotation workmap.dev/min-member ignored: want a positive integer"},
		},
		"annotation beyond int32 is ignored with a warning": {
			def:          rayDef,
			object:       rayThing(`workmap.dev/min-member: "9999999999"`, twoWorkerGroups),
			want:         []group{{Name: "cluster", MinMember: 7, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, MinResources: map[string]string{"cpu": "4", "nvidia.com/gpu": "16"}}},
			wantWarnings: []string{"annotation workmap.dev/min-member ignored: want a positive integer"},
		},
		"CEL minMember overrides the default": {
			def: minAvailableDef,
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  minAvailable: 3
  head: {template: {spec: {containers: [{name: h}]}}}
  workerGroups: [{replicas: 5, template: {spec: {containers: [{name: w}]}}}]`,
			want: []group{{Name: "cluster", MinMember: 3, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, Timeout: ptr.To[int32](30)}},
		},
		"annotation overrides CEL minMember": {
			def: minAvailableDef,
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, annotations: {workmap.dev/min-member: "2"}}
spec:
  minAvailable: 3
  head: {template: {spec: {containers: [{name: h}]}}}
  workerGroups: [{replicas: 5, template: {spec: {containers: [{name: w}]}}}]`,
			want: []group{{Name: "cluster", MinMember: 2, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, Timeout: ptr.To[int32](30)}},
		},
		"CEL minMember that fails is a warning and no group": {
			def: thingDef(`
roles:
- name: main
  podTemplate: spec.template
  replicas: "4"
gang:
  groups:
  - {name: g, members: [main], minMember: "self.spec.minAvailable"}`),
			object:       "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {template: {}}\n",
			want:         []group{},
			wantWarnings: []string{"gang group g: spec.gang.groups[0].minMember: no such key: minAvailable (reading self.spec.minAvailable)"},
		},
		"a role that cannot be read does not join the gang": {
			def: rayDef,
			object: rayThing("", `
  - {groupName: bad, replicas: 3, minReplicas: 2, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: lots}}}]}}}
  - {groupName: good, replicas: 2, template: {spec: {containers: [{name: w}]}}}`),
			want:         []group{{Name: "cluster", MinMember: 3, Scope: v1alpha1.ScopeWorkload, Members: []string{"head", "workers"}, MinResources: map[string]string{"cpu": "2"}}},
			wantWarnings: []string{"role bad (spec.workerGroups[0].template): decoding pod template: spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
		},
		"roles outside any group do not count": {
			def: thingDef(`
roles:
- name: launcher
  podTemplate: spec.launcher
- name: worker
  podTemplate: spec.worker
  replicas: self.spec.workers
gang:
  groups:
  - {name: workers, members: [worker]}`),
			object: "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {workers: 3, launcher: {}, worker: {}}\n",
			want:   []group{{Name: "workers", MinMember: 3, Scope: v1alpha1.ScopeWorkload, Members: []string{"worker"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, tc.def, tc.object)
			if diff := cmp.Diff(tc.want, groups(w)); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, w.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// inOrderJobSetDef is the JobSet definition with one gang per replicatedJob.
var inOrderJobSetDef = thingDef(`
roles:
- name: replicatedJob
  podTemplate: spec.replicatedJobs[*].template.spec.template
  instanceName: item.name
  replicas: "item.?replicas.orValue(1)"
  podsPerReplica: "item.template.?spec.?parallelism.orValue(1)"
gang:
  groups:
  - name: job
    members: [replicatedJob]
    scope: instance
`)

func TestGangInstanceScope(t *testing.T) {
	const obj = `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  replicatedJobs:
  - name: driver
    template: {spec: {template: {spec: {containers: [{name: d}]}}}}
  - name: workers
    replicas: 2
    template: {spec: {parallelism: 4, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "1"}}}]}}}}
  - name: evaluators
    replicas: 3
    template: {spec: {template: {spec: {containers: [{name: e}]}}}}
`
	tests := map[string]struct {
		def, object string // object defaults to obj
		want        []group
	}{
		"one group per instance, single pods left out": {
			def: inOrderJobSetDef,
			want: []group{
				{Name: "job", MinMember: 8, Scope: v1alpha1.ScopeInstance, Instance: "workers", Members: []string{"replicatedJob"}, MinResources: map[string]string{"nvidia.com/gpu": "8"}},
				{Name: "job", MinMember: 3, Scope: v1alpha1.ScopeInstance, Instance: "evaluators", Members: []string{"replicatedJob"}},
			},
		},
		"constant CEL minMember: instances without pods get no group": {
			def: inOrderJobSetDef + "      minMember: \"2\"\n",
			object: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  replicatedJobs:
  - {name: idle, replicas: 0, template: {spec: {template: {}}}}
  - {name: busy, replicas: 3, template: {spec: {template: {}}}}`,
			want: []group{
				{Name: "job", MinMember: 2, Scope: v1alpha1.ScopeInstance, Instance: "busy", Members: []string{"replicatedJob"}},
			},
		},
		"CEL minMember sees the instance as item": {
			// 1 for the driver (no group), 2 for the workers, 3 for the evaluators: each
			// within the instance's pods.
			def: inOrderJobSetDef + "      minMember: \"item.?replicas.orValue(1)\"\n",
			want: []group{
				{Name: "job", MinMember: 2, Scope: v1alpha1.ScopeInstance, Instance: "workers", Members: []string{"replicatedJob"}, MinResources: map[string]string{"nvidia.com/gpu": "2"}},
				{Name: "job", MinMember: 3, Scope: v1alpha1.ScopeInstance, Instance: "evaluators", Members: []string{"replicatedJob"}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.object == "" {
				tc.object = obj
			}
			w := expand(t, tc.def, tc.object)
			if diff := cmp.Diff(tc.want, groups(w)); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			require.Empty(t, w.Warnings)
		})
	}
}

// lwsDef is LeaderWorkerSet-shaped: per replica one leader and size-1 workers, one gang per
// replica.
var lwsDef = thingDef(`
roles:
- name: leader
  podTemplate: spec.leaderWorkerTemplate.leaderTemplate
  replicas: self.spec.?replicas.orValue(1)
  podInstance: "pod.metadata.labels['leaderworkerset.sigs.k8s.io/worker-index'] == '0' ? 'leader' : 'worker'"
  podReplica: "pod.metadata.labels['leaderworkerset.sigs.k8s.io/group-index']"
- name: worker
  podTemplate: spec.leaderWorkerTemplate.workerTemplate
  replicas: self.spec.?replicas.orValue(1)
  podsPerReplica: self.spec.leaderWorkerTemplate.?size.orValue(1) - 1
  podInstance: "pod.metadata.labels['leaderworkerset.sigs.k8s.io/worker-index'] == '0' ? 'leader' : 'worker'"
  podReplica: "pod.metadata.labels['leaderworkerset.sigs.k8s.io/group-index']"
gang:
  groups:
  - name: group
    members: [leader, worker]
    scope: replica
    timeoutSeconds: 120
`)

func lws(replicas, size string) string {
	return `
apiVersion: example.com/v1
kind: Thing
metadata: {name: lws}
spec:
  replicas: ` + replicas + `
  leaderWorkerTemplate:
    size: ` + size + `
    leaderTemplate: {spec: {containers: [{name: l, resources: {requests: {cpu: "1"}}}]}}
    workerTemplate: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "8"}}}]}}
`
}

func TestGangReplicaScope(t *testing.T) {
	members := []string{"leader", "worker"}
	timeout := ptr.To[int32](120)
	tests := map[string]struct {
		def, object  string
		want         []group
		wantWarnings []string
	}{
		"two replicas of size 4": {
			def:    lwsDef,
			object: lws("2", "4"),
			want: []group{
				{Name: "group", MinMember: 4, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](0), Members: members, Timeout: timeout, MinResources: map[string]string{"cpu": "1", "nvidia.com/gpu": "24"}},
				{Name: "group", MinMember: 4, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](1), Members: members, Timeout: timeout, MinResources: map[string]string{"cpu": "1", "nvidia.com/gpu": "24"}},
			},
		},
		"size 1: a leader alone needs no gang": {
			def:    lwsDef,
			object: lws("3", "1"),
			want:   []group{},
		},
		"zero replicas": {
			def:    lwsDef,
			object: lws("0", "4"),
			want:   []group{},
		},
		"CEL minMember sees the replica index": {
			def:    lwsDef + "      minMember: \"replica == 0 ? 2 : 3\"\n",
			object: lws("2", "4"),
			want: []group{
				{Name: "group", MinMember: 2, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](0), Members: members, Timeout: timeout, MinResources: map[string]string{"cpu": "1", "nvidia.com/gpu": "8"}},
				{Name: "group", MinMember: 3, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](1), Members: members, Timeout: timeout, MinResources: map[string]string{"cpu": "1", "nvidia.com/gpu": "16"}},
			},
		},
		"replicas beyond what a role may have: no groups": {
			def:    lwsDef,
			object: lws("2000000000", "4"),
			want:   []group{},
			wantWarnings: []string{
				"role leader (spec.leaderWorkerTemplate.leaderTemplate): replicas (2000000000)",
				"role worker (spec.leaderWorkerTemplate.workerTemplate): replicas (2000000000)",
			},
		},
		"members with different replica counts": {
			def: thingDef(`
roles:
- name: a
  podTemplate: spec.a
  replicas: "3"
  podsPerReplica: "2"
  podReplica: "0"
- name: b
  podTemplate: spec.b
  replicas: "1"
  podsPerReplica: "3"
  podReplica: "0"
gang:
  groups:
  - {name: r, members: [a, b], scope: replica}`),
			object: "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {a: {}, b: {}}\n",
			want: []group{
				{Name: "r", MinMember: 5, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](0), Members: []string{"a", "b"}},
				{Name: "r", MinMember: 2, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](1), Members: []string{"a", "b"}},
				{Name: "r", MinMember: 2, Scope: v1alpha1.ScopeReplica, Replica: ptr.To[int32](2), Members: []string{"a", "b"}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, tc.def, tc.object)
			if diff := cmp.Diff(tc.want, groups(w)); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			require.Len(t, w.Warnings, len(tc.wantWarnings))
			for i, s := range tc.wantWarnings {
				require.Contains(t, w.Warnings[i], s)
			}
		})
	}
}

func TestGangReplicaScopeAnnotation(t *testing.T) {
	obj := object(t, lws("2", "4"))
	obj.SetAnnotations(map[string]string{definitions.AnnotationMinMember: "2"})
	w, err := compile(t, lwsDef).Expand(obj)
	require.NoError(t, err)
	require.Len(t, w.Groups, 2)
	for i, g := range w.Groups {
		require.Equal(t, int32(2), g.MinMember)
		require.Equal(t, int32(i), *g.Replica)
	}
}

// TestGangMinResources checks the summed requests of a gang's first minMember pods.
func TestGangMinResources(t *testing.T) {
	tests := map[string]struct {
		annotation string
		want       map[string]string
	}{
		"whole JobSet": {
			want: map[string]string{"cpu": "33", "memory": "1Gi", "nvidia.com/gpu": "64"},
		},
		"first five pods: the driver and four workers": {
			annotation: "5",
			want:       map[string]string{"cpu": "17", "memory": "1Gi", "nvidia.com/gpu": "32"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, jobSet)
			if tc.annotation != "" {
				obj.SetAnnotations(map[string]string{definitions.AnnotationMinMember: tc.annotation})
			}
			w, err := compile(t, jobSetDef).Expand(obj)
			require.NoError(t, err)
			require.Len(t, w.Groups, 1)
			if diff := cmp.Diff(tc.want, resList(w.Groups[0].MinResources)); diff != "" {
				t.Errorf("minResources (-want +got):\n%s", diff)
			}
		})
	}
}
