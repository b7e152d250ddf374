package webview

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workmap/workmap/definitions/catalog"
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

// TestHealthMetrics: /metrics says whether the cluster is reached and since when, counts the
// lists and watches that fail by resource and reason, and has the process's own metrics, in
// each state: an alert can be written on a workmap serve that sees nothing.
func TestHealthMetrics(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		clients func(t *testing.T) Clients
		// wantReachable is workmap_cluster_reachable; wantErrors, series of
		// workmap_watch_errors_total that must be counted (at least once).
		wantReachable float64
		wantErrors    []map[string]string
	}{
		"the cluster answers": {
			clients: func(t *testing.T) Clients {
				clients, _ := fakeClients(t, nil, jobSetObjects(t, "ml", "train", 1, "Running")...)
				return clients
			},
			wantReachable: 1,
		},
		"the cluster cannot be reached": {
			clients: func(t *testing.T) Clients {
				clients, err := ClientsFor(&rest.Config{Host: "https://127.0.0.1:1"})
				require.NoError(t, err)
				return clients
			},
			wantReachable: 0,
		},
		"lists the API server refuses": {
			clients: func(t *testing.T) Clients {
				clients, dyn := fakeClients(t, nil, jobSetObjects(t, "ml", "train", 1, "Running")...)
				dyn.PrependReactor("list", "jobsets", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
				})
				dyn.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC"))
				})
				return clients
			},
			wantReachable: 1,
			wantErrors: []map[string]string{
				{"resource": "jobsets.jobset.x-k8s.io", "reason": "api_error"},
				{"resource": "pods", "reason": "forbidden"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			started := time.Now()
			reg, err := catalog.Registry()
			require.NoError(t, err)
			s := New(tc.clients(t), Options{Registry: reg, SyncTimeout: 200 * time.Millisecond, Debounce: 10 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = s.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			web := httptest.NewServer(s.Handler())
			t.Cleanup(web.Close)

			var families map[string]*dto.MetricFamily
			require.Eventually(t, func() bool {
				families = Scrape(t, web.URL+"/metrics")
				if v, ok := Sample(families["workmap_cluster_reachable"], nil); !ok || v != tc.wantReachable {
					return false
				}
				for _, series := range tc.wantErrors {
					if v, ok := Sample(families["workmap_watch_errors_total"], series); !ok || v < 1 {
						return false
					}
				}
				return tc.wantReachable == 1 || s.Snapshot().Problem != ""
			}, 10*time.Second, 20*time.Millisecond, "workmap_cluster_reachable %v, watch errors %v", tc.wantReachable, tc.wantErrors)
			since, ok := Sample(families["workmap_cluster_reachable_changed_timestamp_seconds"], nil)
			require.True(t, ok, "workmap_cluster_reachable_changed_timestamp_seconds is exported")
			require.InDelta(t, float64(started.Unix()), since, 15, "it changed after the test started")
			for _, family := range []string{"process_start_time_seconds", "process_resident_memory_bytes", "go_goroutines"} {
				require.Contains(t, families, family, "the process's own metrics")
			}
		})
	}
}
