package webview

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	objs := jobSetObjects(t, "ml", "train", 2, "Running")
	eval := jobSetObjects(t, "team-b", "eval", 1, "Pending")
	// eval's leader also asks for an extended resource that is not a GPU.
	rjs, _, _ := unstructured.NestedSlice(eval[0].(*unstructured.Unstructured).Object, "spec", "replicatedJobs")
	containers, _, _ := unstructured.NestedSlice(rjs[0].(map[string]any), "template", "spec", "template", "spec", "containers")
	require.NoError(t, unstructured.SetNestedField(containers[0].(map[string]any), "2", "resources", "limits", "example.com/fpga"))
	require.NoError(t, unstructured.SetNestedSlice(rjs[0].(map[string]any), containers, "template", "spec", "template", "spec", "containers"))
	require.NoError(t, unstructured.SetNestedSlice(eval[0].(*unstructured.Unstructured).Object, rjs, "spec", "replicatedJobs"))
	clients, _ := fakeClients(t, map[string]bool{"leaderworkersets": true}, append(objs, eval...)...)
	s := startServer(t, clients, Options{})

	tests := map[string]struct {
		metrics []string
		want    string
	}{
		"GPUs and other extended resources": {
			metrics: []string{"workmap_workload_gpus", "workmap_workload_extended_resource"},
			want: `
# HELP workmap_workload_extended_resource Extended resources other than GPUs the workload requests, summed over its expected pods.
# TYPE workmap_workload_extended_resource gauge
workmap_workload_extended_resource{kind="JobSet",name="eval",namespace="team-b",resource="example.com/fpga"} 2
# HELP workmap_workload_gpus GPUs the workload requests, summed over its expected pods.
# TYPE workmap_workload_gpus gauge
workmap_workload_gpus{kind="JobSet",name="eval",namespace="team-b"} 8
workmap_workload_gpus{kind="JobSet",name="train",namespace="ml"} 12
`,
		},
		"pods expected, ready and by phase": {
			metrics: []string{"workmap_workload_pods_expected", "workmap_workload_pods_ready", "workmap_workload_pods"},
			want: `
# HELP workmap_workload_pods Pods of the workload found, by phase.
# TYPE workmap_workload_pods gauge
workmap_workload_pods{kind="JobSet",name="eval",namespace="team-b",phase="Failed"} 0
workmap_workload_pods{kind="JobSet",name="eval",namespace="team-b",phase="Pending"} 2
workmap_workload_pods{kind="JobSet",name="eval",namespace="team-b",phase="Running"} 0
workmap_workload_pods{kind="JobSet",name="eval",namespace="team-b",phase="Succeeded"} 0
workmap_workload_pods{kind="JobSet",name="eval",namespace="team-b",phase="Unknown"} 0
workmap_workload_pods{kind="JobSet",name="train",namespace="ml",phase="Failed"} 0
workmap_workload_pods{kind="JobSet",name="train",namespace="ml",phase="Pending"} 0
workmap_workload_pods{kind="JobSet",name="train",namespace="ml",phase="Running"} 3
workmap_workload_pods{kind="JobSet",name="train",namespace="ml",phase="Succeeded"} 0
workmap_workload_pods{kind="JobSet",name="train",namespace="ml",phase="Unknown"} 0
# HELP workmap_workload_pods_expected Pods the workload's definition expects.
# TYPE workmap_workload_pods_expected gauge
workmap_workload_pods_expected{kind="JobSet",name="eval",namespace="team-b"} 2
workmap_workload_pods_expected{kind="JobSet",name="train",namespace="ml"} 3
# HELP workmap_workload_pods_ready Pods of the workload that are ready.
# TYPE workmap_workload_pods_ready gauge
workmap_workload_pods_ready{kind="JobSet",name="eval",namespace="team-b"} 0
workmap_workload_pods_ready{kind="JobSet",name="train",namespace="ml"} 3
`,
		},
		"state as an info metric": {
			metrics: []string{"workmap_workload_state"},
			want: `
# HELP workmap_workload_state The workload's state (value 1; the state is a label).
# TYPE workmap_workload_state gauge
workmap_workload_state{kind="JobSet",name="eval",namespace="team-b",state="Pending"} 1
workmap_workload_state{kind="JobSet",name="train",namespace="ml",state="Running"} 1
`,
		},
		"kinds watched, not permitted, not installed": {
			metrics: []string{"workmap_kind_access"},
			want: `
# HELP workmap_kind_access Whether workmap serve can watch a workload kind (value 1; the access is a label).
# TYPE workmap_kind_access gauge
workmap_kind_access{access="not installed",group="apps.nvidia.com",kind="NIMService"} 1
workmap_kind_access{access="not installed",group="grove.io",kind="PodCliqueSet"} 1
workmap_kind_access{access="watching",group="jobset.x-k8s.io",kind="JobSet"} 1
workmap_kind_access{access="not installed",group="kubeflow.org",kind="MPIJob"} 1
workmap_kind_access{access="not installed",group="kubeflow.org",kind="PyTorchJob"} 1
workmap_kind_access{access="not permitted",group="leaderworkerset.x-k8s.io",kind="LeaderWorkerSet"} 1
workmap_kind_access{access="not installed",group="milvus.io",kind="Milvus"} 1
workmap_kind_access{access="not installed",group="nvidia.com",kind="DynamoGraphDeployment"} 1
workmap_kind_access{access="not installed",group="ray.io",kind="RayCluster"} 1
workmap_kind_access{access="not installed",group="ray.io",kind="RayJob"} 1
workmap_kind_access{access="not installed",group="ray.io",kind="RayService"} 1
workmap_kind_access{access="not installed",group="serving.knative.dev",kind="Service"} 1
workmap_kind_access{access="not installed",group="serving.kserve.io",kind="InferenceService"} 1
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, testutil.CollectAndCompare(newCollector(s.Snapshot), strings.NewReader(tc.want), tc.metrics...))
		})
	}
	t.Run("the collector is consistent and /metrics serves it", func(t *testing.T) {
		problems, err := testutil.CollectAndLint(newCollector(s.Snapshot))
		require.NoError(t, err)
		require.Empty(t, problems)
		_, body := get(t, s.Handler(), "/metrics")
		require.Contains(t, body, `workmap_workload_gpus{kind="JobSet",name="train",namespace="ml"} 12`)
	})
}

// TestMetricsKindLabel: two kinds of one name in different groups keep distinct series.
func TestMetricsKindLabel(t *testing.T) {
	snap := &Snapshot{Entries: []*Entry{
		{Key: Key{Group: "a.example.com", Kind: "Job", Namespace: "ns", Name: "x"}},
		{Key: Key{Group: "b.example.com", Kind: "Job", Namespace: "ns", Name: "x"}},
		{Key: Key{Group: "jobset.x-k8s.io", Kind: "JobSet", Namespace: "ns", Name: "x"}},
	}}
	want := `
# HELP workmap_workload_state The workload's state (value 1; the state is a label).
# TYPE workmap_workload_state gauge
workmap_workload_state{kind="Job.a.example.com",name="x",namespace="ns",state="Unknown"} 1
workmap_workload_state{kind="Job.b.example.com",name="x",namespace="ns",state="Unknown"} 1
workmap_workload_state{kind="JobSet",name="x",namespace="ns",state="Unknown"} 1
`
	require.NoError(t, testutil.CollectAndCompare(newCollector(func() *Snapshot { return snap }), strings.NewReader(want), "workmap_workload_state"))
}
