package live

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

// nimService is a running single-node NIMService with 2 replicas whose GPUs come from
// draResources, with its Deployment and pods, and the claim templates of its namespace.
func nimService(draResources []any) []runtime.Object {
	labels := map[string]any{"app": "llama", "app.kubernetes.io/part-of": "nim-service"}
	root := obj("apps.nvidia.com/v1alpha1", "NIMService", "nim", "llama", "nim-uid", nil, "", map[string]any{
		"spec": map[string]any{
			"image":        map[string]any{"repository": "nvcr.io/nim/meta/llama-3.1-8b-instruct", "tag": "1.8.0"},
			"replicas":     int64(2),
			"draResources": draResources,
		},
		"status": map[string]any{"state": "Ready", "availableReplicas": int64(2)},
	})
	template := obj("resource.k8s.io/v1", "ResourceClaimTemplate", "nim", "two-gpus", "rct-uid", nil, "", map[string]any{
		"spec": map[string]any{"spec": map[string]any{"devices": map[string]any{"requests": []any{
			map[string]any{"name": "gpus", "exactly": map[string]any{"deviceClassName": "gpu.nvidia.com", "count": int64(2)}},
		}}}},
	})
	objs := []runtime.Object{root, template,
		obj("apps/v1", "Deployment", "nim", "llama", "dep-uid", labels, "nim-uid", map[string]any{"status": map[string]any{"availableReplicas": int64(2)}}),
	}
	for _, name := range []string{"llama-a", "llama-b"} {
		objs = append(objs, obj("v1", "Pod", "nim", name, types.UID("pod-"+name), labels, "rs-uid", map[string]any{"status": map[string]any{"phase": "Running"}}))
	}
	return objs
}

func nimFakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "apps", Version: "v1", Resource: "deployments"}:                          "DeploymentList",
		{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}: "LeaderWorkerSetList",
		{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}:  "InferenceServiceList",
		{Version: "v1", Resource: "pods"}:                                                "PodList",
	}, objs...)
}

// TestResolveClaimsOutsideTheTemplate: live, the GPUs a NIMService asks for through
// draResources (which the operator puts in its pods' spec.resourceClaims) count like a pod
// template's claims: a ResourceClaimTemplate read from the cluster, a claimCreationSpec from
// the NIMService itself; a template the cluster does not have is a warning, not 0 GPUs
// without a word.
func TestResolveClaimsOutsideTheTemplate(t *testing.T) {
	tests := map[string]struct {
		draResources []any
		wantGPUs     float64
		wantWarnings []string
		// wantGets are the claim templates read from the cluster.
		wantGets []string
	}{
		"a ResourceClaimTemplate of the cluster": {
			draResources: []any{map[string]any{"resourceClaimTemplateName": "two-gpus"}},
			wantGPUs:     4, wantGets: []string{"two-gpus"},
		},
		"a claimCreationSpec: counted from the NIMService, nothing read": {
			draResources: []any{map[string]any{"claimCreationSpec": map[string]any{"devices": []any{
				map[string]any{"name": "gpu", "count": int64(1), "deviceClassName": "gpu.nvidia.com"},
			}}}},
			wantGPUs: 2,
		},
		"a template the cluster does not have": {
			draResources: []any{map[string]any{"resourceClaimTemplateName": "missing"}},
			wantWarnings: []string{"role nim: ResourceClaimTemplate missing not found: its GPUs are not counted"},
			wantGets:     []string{"missing"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := nimService(tc.draResources)
			client := nimFakeClient(objs...)
			res, err := (&Resolver{Client: client}).Resolve(context.Background(), catalogDefinition(t, "apps.nvidia.com", "NIMService"), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			w := res.Workload
			require.Equal(t, v1alpha1.StateRunning, w.Status.State, w.Status.Reason)
			require.Len(t, res.Pods, 2)
			require.EqualValues(t, 2, *w.Roles[0].PodsFound)
			require.Equal(t, tc.wantWarnings, w.Warnings)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			var gets []string
			for _, a := range client.Actions() {
				if g, ok := a.(clienttesting.GetAction); ok {
					require.Equal(t, schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaimtemplates"}, g.GetResource())
					require.Equal(t, "nim", g.GetNamespace())
					gets = append(gets, g.GetName())
				}
			}
			// One read per pod role, not per pod.
			if diff := cmp.Diff(tc.wantGets, gets); diff != "" {
				t.Errorf("claim templates read (-want +got):\n%s", diff)
			}
		})
	}
}
