package catalog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// runningJobSet is a JobSet with replicatedJob workers of jobs Jobs × podsPerJob pods, all
// running, with its Jobs and pods as live data.
func runningJobSet(tb testing.TB, jobs, podsPerJob int) (*unstructured.Unstructured, *definitions.LiveData) {
	tb.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "train", "namespace": "default", "uid": "js"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(jobs),
			"template": map[string]any{"spec": map[string]any{
				"parallelism": int64(podsPerJob), "completions": int64(podsPerJob),
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
					"name": "trainer", "image": "trainer:1",
					"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(1)}},
				}}}},
			}},
		}}},
		"status": map[string]any{"replicatedJobsStatus": []any{map[string]any{"name": "workers", "active": int64(jobs)}}},
	}}
	live := &definitions.LiveData{Children: map[string][]map[string]any{}}
	for j := range jobs {
		live.Children["jobs"] = append(live.Children["jobs"], map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": fmt.Sprintf("train-workers-%d", j), "namespace": "default"},
			"status":   map[string]any{"active": int64(podsPerJob)},
		})
		for p := range podsPerJob {
			pod := jobSetPod(fmt.Sprintf("train-workers-%d-%d-abcde", j, p), "workers", j)
			pod["metadata"].(map[string]any)["labels"].(map[string]any)["jobset.sigs.k8s.io/jobset-name"] = "train"
			pod["status"] = map[string]any{"phase": "Running"}
			live.Pods = append(live.Pods, pod)
		}
	}
	return obj, live
}

// BenchmarkStatusLive evaluates every status rule of the JobSet definition on a running
// JobSet with its 3 Jobs and 3 pods, the definition already compiled.
func BenchmarkStatusLive(b *testing.B) {
	def := jobSetDefinition(b)
	obj, live := runningJobSet(b, 3, 1)
	states, err := def.MatchingStates(obj.Object, live)
	require.NoError(b, err)
	require.Equal(b, []v1alpha1.State{v1alpha1.StateRunning}, states)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := def.MatchingStates(obj.Object, live); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpandLive1000 is what `workmap tree` computes for a JobSet of 10 Jobs × 100
// running pods once it has listed them: roles, status, gangs and every pod placed.
func BenchmarkExpandLive1000(b *testing.B) {
	def := jobSetDefinition(b)
	obj, live := runningJobSet(b, 10, 100)
	w, err := def.ExpandLive(obj, live)
	require.NoError(b, err)
	require.EqualValues(b, 1000, w.Totals.Pods)
	require.Equal(b, v1alpha1.StateRunning, w.Status.State)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := def.ExpandLive(obj, live); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkColdFirstUse is the cold cost of a definition: compiling the JobSet definition,
// then the first expansion of the example JobSet and the first placement of one of its pods.
func BenchmarkColdFirstUse(b *testing.B) {
	src := jobSetDefinition(b).Source
	obj := exampleJobSet(b)
	pod := jobSetPod("leader-workers-workers-1-0-abcde", "workers", 1)
	b.ReportAllocs()
	for b.Loop() {
		def, err := definitions.Compile(src, definitions.CompileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		w, err := def.Expand(obj)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok, err := w.Place(pod); err != nil || !ok {
			b.Fatalf("pod not placed: %v %v", ok, err)
		}
	}
}
