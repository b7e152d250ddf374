package grouper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
)

var pyTorchJobGVK = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

// catalogHub is a hub over the catalog whose top owners come from objects.
func catalogHub(tb testing.TB, resolver *grouper.OwnerResolver, objects map[types.UID]*unstructured.Unstructured) *grouper.Hub {
	tb.Helper()
	reg, err := catalog.Registry()
	require.NoError(tb, err)
	return &grouper.Hub{
		Owners: resolver, Natives: grouper.DefaultNatives(),
		Definitions: func() *definitions.Registry { return reg },
		Object: func(_ context.Context, o grouper.Owner) (*unstructured.Unstructured, error) {
			return objects[o.UID], nil
		},
	}
}

// TestHubPyTorchJobMinAvailable: a PyTorchJob's gang takes its minMember from
// runPolicy.schedulingPolicy.minAvailable when set.
func TestHubPyTorchJobMinAvailable(t *testing.T) {
	ptj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": "bert", "namespace": "ml", "uid": "ptj", "generation": int64(1)},
		"spec": map[string]any{
			"runPolicy": map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(3)}},
			"pytorchReplicaSpecs": map[string]any{
				"Master": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{}}},
				"Worker": map[string]any{"replicas": int64(4), "template": map[string]any{"spec": map[string]any{}}},
			},
		},
	}}
	meta := partial(pyTorchJobGVK, "bert", "ptj", nil)
	meta.Generation = 1
	resolver := fakeResolverWith(t, []schema.GroupVersionKind{pyTorchJobGVK}, meta)
	hub := catalogHub(t, resolver, map[types.UID]*unstructured.Unstructured{"ptj": ptj})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "bert-worker-2", Namespace: "ml", UID: "pod",
		Labels:          map[string]string{"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "2"},
		OwnerReferences: []metav1.OwnerReference{*controllerRef(pyTorchJobGVK, "bert", "ptj")},
	}}
	d, err := hub.Decide(context.Background(), pod)
	require.NoError(t, err)
	require.Equal(t, grouper.SourceDefinition, d.Source)
	require.Len(t, d.Desired, 1)
	require.EqualValues(t, 3, d.Desired[0].Spec.MinMember)
	require.Equal(t, d.Desired[0].Name, d.PodGroup)
}

// BenchmarkDecideWarm is the per-pod grouping decision with warm caches: pod → Job → JobSet
// through the metadata informers, the JobSet already expanded.
func BenchmarkDecideWarm(b *testing.B) {
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "train", "namespace": "ml", "uid": "js", "generation": int64(1)},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(4),
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}}},
		}}},
	}}
	jsMeta := partial(jobSetGVK, "train", "js", nil)
	jsMeta.Generation = 1
	t := &testing.T{}
	resolver := fakeResolver(t, jsMeta, partial(jobGVK, "train-workers-1", "job", controllerRef(jobSetGVK, "train", "js")))
	hub := catalogHub(b, resolver, map[types.UID]*unstructured.Unstructured{"js": js})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "train-workers-1-0", Namespace: "ml", UID: "pod",
		Labels:          map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1"},
		OwnerReferences: []metav1.OwnerReference{*controllerRef(jobGVK, "train-workers-1", "job")},
	}}
	ctx := context.Background()
	d, err := hub.Decide(ctx, pod) // warm the caches
	require.NoError(b, err)
	require.Equal(b, "train-all", d.PodGroup)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hub.Decide(ctx, pod); err != nil {
			b.Fatal(err)
		}
	}
}
