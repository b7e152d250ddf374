package catalog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

// BenchmarkExpand expands the example JobSet offline with the definition already compiled.
func BenchmarkExpand(b *testing.B) {
	def, obj := jobSetDefinition(b), exampleJobSet(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := def.Expand(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPodDecision measures the per-pod decision: which role, replica and gang a live
// pod belongs to, with the workload already expanded (as the grouper caches it).
func BenchmarkPodDecision(b *testing.B) {
	w, err := jobSetDefinition(b).Expand(exampleJobSet(b))
	require.NoError(b, err)
	pods := make([]map[string]any, 3)
	for i, rj := range []string{"leader", "workers", "workers"} {
		pods[i] = jobSetPod(fmt.Sprintf("leader-workers-%s-%d-0-abcde", rj, i), rj, i%2)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, ok, err := w.Place(pods[i%len(pods)])
		if err != nil || !ok || p.Group == nil {
			b.Fatalf("pod not placed: %+v %v %v", p, ok, err)
		}
		i++
	}
}

// BenchmarkCompileCold is the cold cost: compiling the JobSet definition from its source.
func BenchmarkCompileCold(b *testing.B) {
	src := jobSetDefinition(b).Source
	b.ReportAllocs()
	for b.Loop() {
		if _, err := definitions.Compile(src, definitions.CompileOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func jobSetPod(name, replicatedJob string, jobIndex int) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": name, "namespace": "default",
			"labels": map[string]any{
				"jobset.sigs.k8s.io/jobset-name":           "leader-workers",
				"jobset.sigs.k8s.io/replicatedjob-name":    replicatedJob,
				"jobset.sigs.k8s.io/job-index":             fmt.Sprint(jobIndex),
				"batch.kubernetes.io/job-completion-index": "0",
			},
		},
		"status": map[string]any{"phase": "Pending"},
	}
}
