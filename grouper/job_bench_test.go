package grouper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkDecideWarmJob is the per-pod grouping decision for a pod of a batch/v1 Job (the
// native Job grouper, as in the scheduler throughput benchmark) with warm caches.
func BenchmarkDecideWarmJob(b *testing.B) {
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "gang-0", "namespace": "ml", "uid": "job", "generation": int64(1)},
		"spec":     map[string]any{"parallelism": int64(8), "completions": int64(8)},
	}}
	jobMeta := partial(jobGVK, "gang-0", "job", nil)
	jobMeta.Generation = 1
	resolver := fakeResolver(&testing.T{}, jobMeta)
	hub := catalogHub(b, resolver, map[types.UID]*unstructured.Unstructured{"job": job})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "gang-0-abcde", Namespace: "ml", UID: "pod",
		Labels:          map[string]string{"batch.kubernetes.io/job-name": "gang-0"},
		OwnerReferences: []metav1.OwnerReference{*controllerRef(jobGVK, "gang-0", "job")},
	}}
	ctx := context.Background()
	d, err := hub.Decide(ctx, pod) // warm the caches
	require.NoError(b, err)
	require.Equal(b, "gang-0-job", d.PodGroup)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hub.Decide(ctx, pod); err != nil {
			b.Fatal(err)
		}
	}
}
