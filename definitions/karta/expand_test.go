package karta

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/manifest"
)

// The converted definitions expand real-shaped objects into the right roles, pods, GPUs, gangs
// and states, and place live pods.

const jobSetObject = `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: default}
spec:
  replicatedJobs:
  - name: leader
    template: {spec: {template: {spec: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 4}}}]}}}}
  - name: workers
    replicas: 2
    template: {spec: {template: {spec: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 4}}}]}}}}
`

const pyTorchJobObject = `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: 2}}}]}}
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: 2}}}]}}
`

func readObject(t *testing.T, src string) *unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.Read([]byte(src), "object.yaml")
	require.NoError(t, err)
	require.Len(t, docs, 1)
	return docs[0].Object
}

func compileFile(t *testing.T, file string) *definitions.Definition {
	t.Helper()
	def, _ := convertFile(t, file)
	d, err := definitions.Compile(def, definitions.CompileOptions{})
	require.NoError(t, err)
	return d
}

type rolePods struct {
	Name string
	Pods int64
	GPUs float64
}

type gang struct {
	Name      string
	MinMember int32
	Scope     v1alpha1.GangScope
}

func TestExpandConverted(t *testing.T) {
	tests := map[string]struct {
		file, object string
		edit         func(obj map[string]any)
		roles        []rolePods
		pods         int64
		gpus         float64
		gangs        []gang
	}{
		"JobSet: a role per replicatedJob, one gang of all pods": {
			file: "jobset.yaml", object: jobSetObject,
			roles: []rolePods{{"leader", 1, 4}, {"workers", 2, 8}},
			pods:  3, gpus: 12,
			gangs: []gang{{"job", 3, v1alpha1.ScopeWorkload}},
		},
		"PyTorchJob: master and workers": {
			file: "pytorchjob.yaml", object: pyTorchJobObject,
			roles: []rolePods{{"master", 1, 2}, {"worker", 3, 6}},
			pods:  4, gpus: 8,
			gangs: []gang{{"job", 4, v1alpha1.ScopeWorkload}},
		},
		"PyTorchJob with elastic minReplicas: the gang starts with fewer workers": {
			file: "pytorchjob.yaml", object: pyTorchJobObject,
			edit: func(obj map[string]any) {
				require.NoError(t, unstructured.SetNestedField(obj, int64(2), "spec", "elasticPolicy", "minReplicas"))
			},
			roles: []rolePods{{"master", 1, 2}, {"worker", 3, 6}},
			pods:  4, gpus: 8,
			gangs: []gang{{"job", 3, v1alpha1.ScopeWorkload}},
		},
		"PyTorchJob over the map of replica specs: instances named by their key": {
			file: "pytorchjob-map.yaml", object: pyTorchJobObject,
			roles: []rolePods{{"Master", 1, 2}, {"Worker", 3, 6}},
			pods:  4, gpus: 8,
			gangs: []gang{{"job", 4, v1alpha1.ScopeWorkload}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := compileFile(t, tc.file)
			obj := readObject(t, tc.object)
			if tc.edit != nil {
				tc.edit(obj.Object)
			}
			w, err := d.Expand(obj)
			require.NoError(t, err)
			require.Empty(t, w.Warnings)
			var roles []rolePods
			for _, r := range w.Roles {
				roles = append(roles, rolePods{r.Name, r.Pods, r.GPUs})
			}
			assert.Equal(t, tc.roles, roles)
			assert.Equal(t, tc.pods, w.Totals.Pods)
			assert.Equal(t, tc.gpus, w.Totals.GPUs)
			var gangs []gang
			for _, g := range w.Groups {
				gangs = append(gangs, gang{g.Name, g.MinMember, g.Scope})
			}
			assert.Equal(t, tc.gangs, gangs)
		})
	}
}

func TestStatusConverted(t *testing.T) {
	cond := func(typ, status string) map[string]any {
		return map[string]any{"type": typ, "status": status, "message": typ + " message"}
	}
	tests := map[string]struct {
		file, object string
		conditions   []any
		state        v1alpha1.State
		reason       string
	}{
		"JobSet without status":    {file: "jobset.yaml", object: jobSetObject, state: v1alpha1.StatePending, reason: "no status mapping matched"},
		"JobSet completed":         {file: "jobset.yaml", object: jobSetObject, conditions: []any{cond("Completed", "True")}, state: v1alpha1.StateCompleted, reason: "Completed message"},
		"JobSet failed":            {file: "jobset.yaml", object: jobSetObject, conditions: []any{cond("Completed", "False"), cond("Failed", "True")}, state: v1alpha1.StateFailed, reason: "Failed message"},
		"PyTorchJob created":       {file: "pytorchjob.yaml", object: pyTorchJobObject, conditions: []any{cond("Created", "True")}, state: v1alpha1.StateInitializing, reason: "Created message"},
		"PyTorchJob running":       {file: "pytorchjob.yaml", object: pyTorchJobObject, conditions: []any{cond("Created", "True"), cond("Running", "True")}, state: v1alpha1.StateRunning, reason: "Running message"},
		"PyTorchJob succeeded":     {file: "pytorchjob.yaml", object: pyTorchJobObject, conditions: []any{cond("Created", "True"), cond("Running", "False"), cond("Succeeded", "True")}, state: v1alpha1.StateCompleted, reason: "Succeeded message"},
		"Failed wins over Running": {file: "pytorchjob.yaml", object: pyTorchJobObject, conditions: []any{cond("Running", "True"), cond("Failed", "True")}, state: v1alpha1.StateFailed, reason: "Failed message"},
		"no message: the matcher":  {file: "pytorchjob.yaml", object: pyTorchJobObject, conditions: []any{map[string]any{"type": "Running", "status": "True"}}, state: v1alpha1.StateRunning, reason: "condition Running is True"},
		"restarting is running":    {file: "pytorchjob-map.yaml", object: pyTorchJobObject, conditions: []any{cond("Restarting", "True")}, state: v1alpha1.StateRunning, reason: "condition Running is True, or condition Restarting is True"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := compileFile(t, tc.file)
			obj := readObject(t, tc.object)
			if tc.conditions != nil {
				require.NoError(t, unstructured.SetNestedSlice(obj.Object, tc.conditions, "status", "conditions"))
			}
			w, err := d.Expand(obj)
			require.NoError(t, err)
			assert.Equal(t, tc.state, w.Status.State)
			assert.Equal(t, tc.reason, w.Status.Reason)
		})
	}
}

func TestPlacePodsConverted(t *testing.T) {
	pod := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "labels": labels}}
	}
	tests := map[string]struct {
		file, object string
		labels       map[string]any
		placed       bool
		role         string
		replica      int64
		group        string
	}{
		"JobSet pod of the workers job": {
			file: "jobset.yaml", object: jobSetObject,
			labels: map[string]any{"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/replicatedjob-name": "workers"},
			placed: true, role: "workers", replica: -1, group: "job",
		},
		"JobSet pod of an unknown job": {
			file: "jobset.yaml", object: jobSetObject,
			labels: map[string]any{"jobset.sigs.k8s.io/replicatedjob-name": "other"},
		},
		"PyTorchJob worker 2": {
			file: "pytorchjob.yaml", object: pyTorchJobObject,
			labels: map[string]any{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "2"},
			placed: true, role: "worker", replica: 2, group: "job",
		},
		"PyTorchJob master": {
			file: "pytorchjob.yaml", object: pyTorchJobObject,
			labels: map[string]any{"training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0"},
			placed: true, role: "master", replica: 0, group: "job",
		},
		"PyTorchJob pod without labels": {
			file: "pytorchjob.yaml", object: pyTorchJobObject, labels: map[string]any{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := compileFile(t, tc.file)
			w, err := d.Expand(readObject(t, tc.object))
			require.NoError(t, err)
			p, ok, err := w.Place(pod(tc.labels))
			require.NoError(t, err)
			require.Equal(t, tc.placed, ok)
			if !ok {
				return
			}
			assert.Equal(t, tc.role, p.Role)
			assert.Equal(t, tc.replica, p.Replica)
			require.NotNil(t, p.Group)
			assert.Equal(t, tc.group, p.Group.Name)
		})
	}
}

// TestPodSelectorConverted: the pods selector found from the gang's name label selects the
// workload's pods.
func TestPodSelectorConverted(t *testing.T) {
	d := compileFile(t, "pytorchjob.yaml")
	sel, err := d.PodLabelSelector(readObject(t, pyTorchJobObject))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"training.kubeflow.org/job-name": "mnist"}, sel)
}
