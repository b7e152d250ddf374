package definitions_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

// TestFoundPods: a live pod shows the object that made it, its age, restarts and the most
// telling reason it is not fine.
func TestFoundPods(t *testing.T) {
	pod := func(status string) map[string]any {
		return objectMap(t, `
apiVersion: v1
kind: Pod
metadata:
  name: p
  creationTimestamp: "2025-01-02T03:04:05Z"
  labels: {jobset.sigs.k8s.io/replicatedjob-name: workers, jobset.sigs.k8s.io/job-index: "1"}
  ownerReferences:
  - {apiVersion: v1, kind: Node, name: n1}
  - {apiVersion: batch/v1, kind: Job, name: train-workers-1, controller: true}
spec: {nodeName: n1}
status: `+status)
	}
	tests := map[string]struct {
		status string
		want   definitions.FoundPod
	}{
		"running and ready": {
			status: `{phase: Running, conditions: [{type: Ready, status: "True"}], containerStatuses: [{name: a, restartCount: 0, state: {running: {}}}]}`,
			want:   definitions.FoundPod{Phase: "Running", Ready: true},
		},
		"crash looping, restarts added up over containers": {
			status: `{phase: Running, initContainerStatuses: [{name: i, restartCount: 1, state: {terminated: {reason: Completed, exitCode: 0}}}], containerStatuses: [{name: a, restartCount: 4, state: {running: {}}}, {name: b, restartCount: 2, state: {waiting: {reason: CrashLoopBackOff}}, lastState: {terminated: {reason: OOMKilled}}}]}`,
			want:   definitions.FoundPod{Phase: "Running", Restarts: 7, Reason: "CrashLoopBackOff"},
		},
		"a waiting reason before a terminated one": {
			status: `{phase: Pending, containerStatuses: [{name: a, state: {terminated: {reason: Error, exitCode: 1}}}, {name: b, state: {waiting: {reason: ImagePullBackOff}}}]}`,
			want:   definitions.FoundPod{Phase: "Pending", Reason: "ImagePullBackOff"},
		},
		"killed for memory": {
			status: `{phase: Failed, containerStatuses: [{name: a, state: {terminated: {reason: OOMKilled, exitCode: 137}}}]}`,
			want:   definitions.FoundPod{Phase: "Failed", Reason: "OOMKilled"},
		},
		"a failed exit without a reason is an Error": {
			status: `{phase: Failed, containerStatuses: [{name: a, state: {terminated: {exitCode: 2}}}]}`,
			want:   definitions.FoundPod{Phase: "Failed", Reason: "Error"},
		},
		"an init container's reason": {
			status: `{phase: Pending, initContainerStatuses: [{name: i, restartCount: 3, state: {waiting: {reason: CrashLoopBackOff}}}], containerStatuses: [{name: a, state: {waiting: {reason: PodInitializing}}}]}`,
			want:   definitions.FoundPod{Phase: "Pending", Restarts: 3, Reason: "Init:CrashLoopBackOff"},
		},
		"the pod's own reason first": {
			status: `{phase: Failed, reason: Evicted, containerStatuses: [{name: a, state: {terminated: {reason: Error, exitCode: 137}}}]}`,
			want:   definitions.FoundPod{Phase: "Failed", Reason: "Evicted"},
		},
		"creating is no reason": {
			status: `{phase: Pending, containerStatuses: [{name: a, state: {waiting: {reason: ContainerCreating}}}]}`,
			want:   definitions.FoundPod{Phase: "Pending"},
		},
	}
	def := compile(t, jobSetDef)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, err := def.ExpandLive(object(t, jobSet), &definitions.LiveData{Pods: []map[string]any{pod(tc.status)}})
			require.NoError(t, err)
			require.Len(t, w.Roles[1].Instances[1].FoundPods, 1)
			want := tc.want
			want.Name, want.Node, want.Owner, want.Created = "p", "n1", "Job/train-workers-1", "2025-01-02T03:04:05Z"
			if diff := cmp.Diff(want, w.Roles[1].Instances[1].FoundPods[0]); diff != "" {
				t.Errorf("found pod (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("the only owner, when none is the controller", func(t *testing.T) {
		p := objectMap(t, `{apiVersion: v1, kind: Pod, metadata: {name: p, labels: {jobset.sigs.k8s.io/replicatedjob-name: driver, jobset.sigs.k8s.io/job-index: "0"}, ownerReferences: [{kind: Job, name: train-driver-0}]}}`)
		w, err := def.ExpandLive(object(t, jobSet), &definitions.LiveData{Pods: []map[string]any{p}})
		require.NoError(t, err)
		require.Equal(t, "Job/train-driver-0", w.Roles[0].Instances[0].FoundPods[0].Owner)
	})
}

// TestUnreadableRoles: a role the engine could not read says so, and whether its replicas
// are known: its zero pods are not a role that asks for none.
func TestUnreadableRoles(t *testing.T) {
	tests := map[string]struct {
		from, to        string
		replicasUnknown bool
		field           string
	}{
		"replicas of the wrong type":          {from: "replicas: 2", to: `replicas: "two"`, replicasUnknown: true, field: "spec.replicatedJobs[1].replicas"},
		"a pod template that does not decode": {from: `cpu: "4"}`, to: `cpu: "lots"}`, field: `spec.replicatedJobs[1].template.spec.template.spec.containers[0].resources.limits.cpu`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := replaceOnce(t, jobSet, tc.from, tc.to)
			w := expand(t, jobSetDef, obj)
			_, ok := w.Roles[0].Unreadable()
			require.False(t, ok, "the driver is read")
			fe, ok := w.Roles[1].Unreadable()
			require.True(t, ok)
			require.Equal(t, tc.field, fe.Path)
			require.Equal(t, tc.replicasUnknown, w.Roles[1].ReplicasUnknown())
			require.Contains(t, w.Errors, fe, "the same error is the workload's")
			require.Zero(t, w.Roles[1].Pods)
		})
	}
}

func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(s, from), "%q once in the object", from)
	return strings.Replace(s, from, to, 1)
}
