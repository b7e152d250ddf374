package definitions_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

// pod builds an unstructured pod with labels and a phase ("" for none).
func pod(name, phase string, labels map[string]string) map[string]any {
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	p := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": l},
	}
	if phase != "" {
		p["status"] = map[string]any{"phase": phase}
	}
	return p
}

func jobSetPod(name, phase, job, index string) map[string]any {
	return pod(name, phase, map[string]string{
		"jobset.sigs.k8s.io/jobset-name":        "train",
		"jobset.sigs.k8s.io/replicatedjob-name": job,
		"jobset.sigs.k8s.io/job-index":          index,
	})
}

func lwsPod(name, phase, group, worker string) map[string]any {
	return pod(name, phase, map[string]string{
		"leaderworkerset.sigs.k8s.io/group-index":  group,
		"leaderworkerset.sigs.k8s.io/worker-index": worker,
	})
}

type placement struct {
	Role    string
	Replica int64
	// Group is "name", "name/replica" or "name/instance"; "" for none.
	Group string
}

func describePlacement(p definitions.Placement) placement {
	out := placement{Role: p.Role, Replica: p.Replica}
	if g := p.Group; g != nil {
		out.Group = g.Name
		if g.Replica != nil {
			out.Group += "/" + strconv.Itoa(int(*g.Replica))
		}
		if g.Instance != "" {
			out.Group += "/" + g.Instance
		}
	}
	return out
}

func TestPlace(t *testing.T) {
	jobSetW := expand(t, jobSetDef, jobSet)
	inOrderW := expand(t, inOrderJobSetDef, `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  replicatedJobs:
  - {name: driver, template: {spec: {template: {}}}}
  - {name: workers, replicas: 2, template: {spec: {template: {}}}}`)
	// inOrderJobSetDef has no podInstance: with more than one role instance nothing is placed.
	lwsW := expand(t, lwsDef, lws("2", "4"))
	singleW := expand(t, thingDef("roles:\n- {name: main, podTemplate: spec.template, replicas: '3'}\ngang:\n  groups: [{name: g, members: [main]}]\n"),
		"apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {template: {}}\n")

	tests := map[string]struct {
		w       *definitions.Workload
		pod     map[string]any
		want    placement
		wantOK  bool
		wantErr string
	}{
		"JobSet worker pod": {
			w:      jobSetW,
			pod:    jobSetPod("train-workers-1-2", "Running", "workers", "1"),
			want:   placement{Role: "workers", Replica: 1, Group: "all"},
			wantOK: true,
		},
		"JobSet driver pod": {
			w:      jobSetW,
			pod:    jobSetPod("train-driver-0-0", "Running", "driver", "0"),
			want:   placement{Role: "driver", Replica: 0, Group: "all"},
			wantOK: true,
		},
		"JobSet pod without a job index": {
			w:      jobSetW,
			pod:    pod("p", "", map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "workers"}),
			want:   placement{Role: "workers", Replica: -1, Group: "all"},
			wantOK: true,
		},
		"JobSet pod with a job index that is not a number": {
			w:       jobSetW,
			pod:     jobSetPod("p", "", "workers", "x"),
			want:    placement{Role: "workers", Replica: -1},
			wantOK:  true,
			wantErr: "pod p: spec.roles[0].podReplica: expected int, got string",
		},
		"JobSet pod of a replicatedJob the spec does not have": {
			w:   jobSetW,
			pod: jobSetPod("p", "", "evaluators", "0"),
		},
		"unrelated pod": {
			w:   jobSetW,
			pod: pod("nginx", "Running", map[string]string{"app": "nginx"}),
		},
		"pod without metadata": {
			w:       jobSetW,
			pod:     map[string]any{"kind": "Pod"},
			wantErr: "spec.roles[0].podInstance: no such key: metadata",
		},
		"LWS leader of group 1": {
			w:      lwsW,
			pod:    lwsPod("lws-1", "Running", "1", "0"),
			want:   placement{Role: "leader", Replica: 1, Group: "group/1"},
			wantOK: true,
		},
		"LWS worker of group 0": {
			w:      lwsW,
			pod:    lwsPod("lws-0-3", "Running", "0", "3"),
			want:   placement{Role: "worker", Replica: 0, Group: "group/0"},
			wantOK: true,
		},
		"LWS pod of a group beyond replicas has no gang": {
			w:      lwsW,
			pod:    lwsPod("lws-5-1", "Running", "5", "1"),
			want:   placement{Role: "worker", Replica: 5},
			wantOK: true,
		},
		"LWS pod without labels": {
			w:       lwsW,
			pod:     pod("x", "", nil),
			wantErr: "no such key",
		},
		"no podInstance and two instances: not placed": {
			w:   inOrderW,
			pod: jobSetPod("p", "", "workers", "0"),
		},
		"no podInstance and one role instance: every pod": {
			w:      singleW,
			pod:    pod("anything", "", nil),
			want:   placement{Role: "main", Replica: -1, Group: "g"},
			wantOK: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var p definitions.Placement
			var ok bool
			var err error
			require.NotPanics(t, func() { p, ok, err = tc.w.Place(tc.pod) })
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantOK, ok)
			if diff := cmp.Diff(tc.want, describePlacement(p)); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlaceInstanceScope(t *testing.T) {
	// The instance-scoped JobSet definition, with podInstance and podReplica.
	def := thingDef(`
roles:
- name: replicatedJob
  podTemplate: spec.replicatedJobs[*].template.spec.template
  instanceName: item.name
  replicas: "item.?replicas.orValue(1)"
  podInstance: "pod.metadata.labels['jobset.sigs.k8s.io/replicatedjob-name']"
  podReplica: "pod.metadata.labels['jobset.sigs.k8s.io/job-index']"
gang:
  groups:
  - {name: job, members: [replicatedJob], scope: instance}
`)
	w := expand(t, def, `
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
spec:
  replicatedJobs:
  - {name: a, replicas: 2, template: {spec: {template: {}}}}
  - {name: b, replicas: 3, template: {spec: {template: {}}}}`)
	for name, tc := range map[string]struct {
		pod  map[string]any
		want placement
	}{
		"pod of a": {jobSetPod("a", "", "a", "1"), placement{Role: "a", Replica: 1, Group: "job/a"}},
		"pod of b": {jobSetPod("b", "", "b", "2"), placement{Role: "b", Replica: 2, Group: "job/b"}},
	} {
		t.Run(name, func(t *testing.T) {
			p, ok, err := w.Place(tc.pod)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, tc.want, describePlacement(p))
		})
	}
}

func TestExpandLive(t *testing.T) {
	d := compile(t, jobSetDef)
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j"}, "status": map[string]any{"active": int64(1)}}
	live := &definitions.LiveData{
		Children: map[string][]map[string]any{"jobs": {job, job, job}},
		Pods: []map[string]any{
			jobSetPod("d", "Succeeded", "driver", "0"),
			jobSetPod("w00", "Running", "workers", "0"),
			jobSetPod("w01", "Running", "workers", "0"),
			jobSetPod("w10", "Pending", "workers", "1"),
			jobSetPod("w11", "", "workers", "1"),
			jobSetPod("w70", "Running", "workers", "7"), // a replica the spec does not have
			jobSetPod("x", "Running", "gone", "0"),
			pod("stray", "Failed", nil),
		},
	}
	w, err := d.ExpandLive(object(t, jobSet), live)
	require.NoError(t, err)

	require.Equal(t, &definitions.Live{
		Children:   map[string]int{"jobs": 3},
		Pods:       8,
		Phases:     map[string]int{"Succeeded": 1, "Running": 4, "Pending": 2, "Failed": 1},
		Unassigned: 2,
	}, w.Live)

	type found struct {
		Name      string
		PodsFound int64
		Phases    map[string]int
	}
	var got []found
	for _, r := range w.Roles {
		got = append(got, found{r.Name, *r.PodsFound, r.Phases})
		for _, in := range r.Instances {
			got = append(got, found{in.Name, *in.PodsFound, in.Phases})
		}
	}
	want := []found{
		{"driver", 1, map[string]int{"Succeeded": 1}},
		{"driver-0", 1, map[string]int{"Succeeded": 1}},
		{"workers", 5, map[string]int{"Running": 3, "Pending": 2}},
		{"workers-0", 2, map[string]int{"Running": 2}},
		{"workers-1", 2, map[string]int{"Pending": 2}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods found (-want +got):\n%s", diff)
	}
	// Live mode evaluates the live status rule.
	require.Equal(t, "Running", string(w.Status.State), w.Status.Reason)
	require.Equal(t, "3 jobs active", w.Status.Reason)
}

func TestExpandLiveWithoutData(t *testing.T) {
	w, err := compile(t, jobSetDef).ExpandLive(object(t, jobSet), nil)
	require.NoError(t, err)
	require.Equal(t, &definitions.Live{Children: map[string]int{"jobs": 0}, Phases: map[string]int{}}, w.Live)
	for _, r := range w.Roles {
		require.Zero(t, *r.PodsFound)
	}
	require.Equal(t, "Pending", string(w.Status.State))
	require.Empty(t, w.Status.Skipped)
}

// TestExpandLiveReplicaUnknown: where a role's pods do not tell their replica (no index
// label), the role is counted as a whole and its replicas get no count (not "0 found"); a
// role whose every pod tells its replica keeps its per-replica counts.
func TestExpandLiveReplicaUnknown(t *testing.T) {
	d := compile(t, jobSetDef)
	noIndex := func(name, job string) map[string]any {
		return pod(name, "Running", map[string]string{"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/replicatedjob-name": job})
	}
	live := &definitions.LiveData{Pods: []map[string]any{
		jobSetPod("d", "Running", "driver", "0"),
		noIndex("w-a", "workers"), noIndex("w-b", "workers"), jobSetPod("w-c", "Running", "workers", "1"),
	}}
	w, err := d.ExpandLive(object(t, jobSet), live)
	require.NoError(t, err)
	counts := map[string]*int64{}
	for _, r := range w.Roles {
		counts[r.Name] = r.PodsFound
		for _, in := range r.Instances {
			counts[in.Name] = in.PodsFound
		}
	}
	one, three := int64(1), int64(3)
	require.Equal(t, map[string]*int64{"driver": &one, "driver-0": &one, "workers": &three, "workers-0": nil, "workers-1": nil}, counts)
	require.Len(t, w.Roles[1].FoundPods, 2, "the pods without a replica are listed under the role")
	require.Len(t, w.Roles[1].Instances[1].FoundPods, 1, "a pod that tells its replica stays listed there")
}
