package live

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestResolveGroveSharedClaims: live, the claims a PodCliqueSet's pods share through
// resourceSharing count once per ResourceClaim Grove's operator creates, their template read
// from the cluster in the namespace the entry names (or the workload's).
func TestResolveGroveSharedClaims(t *testing.T) {
	labels := map[string]any{"app.kubernetes.io/managed-by": "grove-operator", "app.kubernetes.io/part-of": "serve"}
	template := func(ns string, n int64) *unstructured.Unstructured {
		return obj("resource.k8s.io/v1", "ResourceClaimTemplate", ns, "gpus", "", nil, "", map[string]any{
			"spec": map[string]any{"spec": map[string]any{"devices": map[string]any{"requests": []any{
				map[string]any{"name": "gpus", "exactly": map[string]any{"deviceClassName": "gpu.nvidia.com", "count": n}},
			}}}},
		})
	}
	tests := map[string]struct {
		entry     map[string]any
		wantGPUs  float64
		wantGetNs string
	}{
		// 2 PCS replicas × 1 PodClique each: 2 claims of the shared namespace's 4 GPUs.
		"a template of another namespace, one claim per PodClique": {
			entry:    map[string]any{"name": "gpus", "namespace": "shared", "scope": "AllReplicas"},
			wantGPUs: 8, wantGetNs: "shared",
		},
		// 2 PCS replicas × 3 pods: one claim per pod of the workload namespace's 1 GPU.
		"a template of the workload's namespace, one claim per pod": {
			entry:    map[string]any{"name": "gpus", "scope": "PerReplica"},
			wantGPUs: 6, wantGetNs: "ml",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := obj("grove.io/v1alpha1", "PodCliqueSet", "ml", "serve", "pcs-uid", nil, "", map[string]any{
				"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"cliques": []any{map[string]any{
					"name": "worker", "resourceSharing": []any{tc.entry},
					"spec": map[string]any{"roleName": "worker", "replicas": int64(3), "podSpec": map[string]any{
						"containers": []any{map[string]any{"name": "engine", "image": "engine:1"}}}},
				}}}},
			})
			objs := []runtime.Object{root, template("shared", 4), template("ml", 1),
				obj("v1", "Pod", "ml", "serve-0-worker-a", "pod-a", labels, "pclq-uid", map[string]any{"status": map[string]any{"phase": "Running"}})}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "grove.io", Version: "v1alpha1", Resource: "podcliques"}:             "PodCliqueList",
				{Group: "grove.io", Version: "v1alpha1", Resource: "podcliquescalinggroups"}: "PodCliqueScalingGroupList",
				{Group: "scheduler.grove.io", Version: "v1alpha1", Resource: "podgangs"}:     "PodGangList",
				{Version: "v1", Resource: "pods"}:                                            "PodList",
			}, objs...)
			res, err := (&Resolver{Client: client}).Resolve(context.Background(), catalogDefinition(t, "grove.io", "PodCliqueSet"), root)
			require.NoError(t, err)
			require.Empty(t, res.Workload.Warnings)
			require.Equal(t, tc.wantGPUs, res.Workload.Totals.GPUs)
			var gets []string
			for _, a := range client.Actions() {
				if g, ok := a.(clienttesting.GetAction); ok {
					gets = append(gets, g.GetNamespace()+"/"+g.GetName())
				}
			}
			require.Equal(t, []string{tc.wantGetNs + "/gpus"}, gets)
		})
	}
}
