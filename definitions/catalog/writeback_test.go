package catalog

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
)

// TestSetSchedulerNameKeepsTheWorkload: pointing every pod template at a scheduler changes
// nothing else about the workload. Milvus components are read from fields of blocks the
// object may leave out; a write must not create the block of a component that does not run
// (a mixCoord block switches a Milvus 2.5 cluster from separate coordinators to the mixture
// coordinator) nor a pod template the operator builds itself (KubeRay's submitter: a template
// without containers is rejected), and a role whose fields cannot hold the value but has no
// instance (no deployment groups) is no error.
func TestSetSchedulerNameKeepsTheWorkload(t *testing.T) {
	tests := map[string]struct {
		gk      schema.GroupKind
		object  string
		absent  [][]string // blocks that must stay absent
		written [][]string // fields that must hold the scheduler name
	}{
		"Milvus 2.5 cluster with separate coordinators": {
			gk: schema.GroupKind{Group: "milvus.io", Kind: "Milvus"},
			object: `
apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: m, namespace: ml}
spec:
  mode: cluster
  components:
    image: milvusdb/milvus:v2.5.4
    rootCoord: {replicas: 1}
    dataCoord: {replicas: 1}
    queryCoord: {replicas: 1}
    indexCoord: {replicas: 1}
`,
			absent: [][]string{{"spec", "components", "mixCoord"}, {"spec", "components", "standalone"}, {"spec", "components", "streamingNode"}},
			written: [][]string{
				{"spec", "components", "rootCoord", "schedulerName"}, {"spec", "components", "proxy", "schedulerName"},
				{"spec", "components", "queryNode", "schedulerName"}, {"spec", "components", "indexNode", "schedulerName"},
			},
		},
		"RayJob whose submitter pod KubeRay builds itself": {
			gk: schema.GroupKind{Group: "ray.io", Kind: "RayJob"},
			object: `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: j, namespace: ml}
spec:
  entrypoint: python train.py
  rayClusterSpec:
    headGroupSpec: {template: {spec: {containers: [{name: ray-head, image: rayproject/ray:2.46.0}]}}}
    workerGroupSpecs:
    - {groupName: gpu, replicas: 2, template: {spec: {containers: [{name: ray-worker, image: rayproject/ray:2.46.0}]}}}
`,
			absent: [][]string{{"spec", "submitterPodTemplate"}},
			written: [][]string{
				{"spec", "rayClusterSpec", "headGroupSpec", "template", "spec", "schedulerName"},
			},
		},
		"InferenceService whose predictor a serving runtime runs (no containers)": {
			gk: schema.GroupKind{Group: "serving.kserve.io", Kind: "InferenceService"},
			object: `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: i, namespace: ml}
spec:
  predictor:
    model: {modelFormat: {name: sklearn}, storageUri: gs://bucket/model}
`,
			absent:  [][]string{{"spec", "transformer"}, {"spec", "predictor", "containers"}},
			written: [][]string{{"spec", "predictor", "schedulerName"}},
		},
		"Milvus standalone left to its defaults": {
			gk:      schema.GroupKind{Group: "milvus.io", Kind: "Milvus"},
			object:  "apiVersion: milvus.io/v1beta1\nkind: Milvus\nmetadata: {name: m, namespace: ml}\nspec: {}\n",
			absent:  [][]string{{"spec", "components", "mixCoord"}, {"spec", "components", "proxy"}},
			written: [][]string{{"spec", "components", "standalone", "schedulerName"}},
		},
	}
	reg := catalogRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			def, ok := reg.Lookup(tc.gk)
			require.True(t, ok)
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(tc.object), &obj.Object))
			before, err := def.Expand(obj)
			require.NoError(t, err)

			n, err := def.SetPodTemplateField(obj, "spec.schedulerName", "workmap-scheduler")
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, len(tc.written), "fields written")
			for _, f := range tc.written {
				got, _, _ := unstructured.NestedString(obj.Object, f...)
				require.Equal(t, "workmap-scheduler", got, "%v", f)
			}
			for _, f := range tc.absent {
				_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, f...)
				require.False(t, found, "%v was created", f)
			}
			after, err := def.Expand(obj)
			require.NoError(t, err)
			require.Equal(t, podsByRole(before), podsByRole(after), "the write changed what the workload runs")
		})
	}
}

// podsByRole is what a workload runs: its expected pods by role.
func podsByRole(w *definitions.Workload) map[string]int64 {
	out := map[string]int64{}
	for _, r := range w.Roles {
		out[r.Name] += r.Pods
	}
	return out
}

// TestSetPodTemplateFieldCountsTemplates: set reports how many pod templates it wrote, each
// once, however many roles share it.
func TestSetPodTemplateFieldCountsTemplates(t *testing.T) {
	tests := map[string]struct {
		gk     schema.GroupKind
		object string
		want   int
	}{
		"LeaderWorkerSet with a leader template": {
			gk: schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"},
			object: `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ml}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 4
    leaderTemplate: {spec: {containers: [{name: leader, image: vllm}]}}
    workerTemplate: {spec: {containers: [{name: worker, image: vllm}]}}
`,
			want: 2,
		},
		"LeaderWorkerSet whose leaders are built from the worker template": {
			gk: schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"},
			object: `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ml}
spec:
  leaderWorkerTemplate:
    size: 2
    workerTemplate: {spec: {containers: [{name: worker, image: vllm}]}}
`,
			want: 1,
		},
		"JobSet with two replicated jobs": {
			gk: schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"},
			object: `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: j, namespace: ml}
spec:
  replicatedJobs:
  - {name: leader, replicas: 1, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}
  - {name: workers, replicas: 2, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}
`,
			want: 2,
		},
	}
	reg := catalogRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			def, ok := reg.Lookup(tc.gk)
			require.True(t, ok)
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(tc.object), &obj.Object))
			n, err := def.SetPodTemplateField(obj, "spec.schedulerName", "workmap-scheduler")
			require.NoError(t, err)
			require.Equal(t, tc.want, n)
		})
	}
}
