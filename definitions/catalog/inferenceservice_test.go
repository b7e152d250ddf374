package catalog

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInferenceServiceScaleFromZero: minReplicas 0 in Serverless (Knative) mode, KServe's
// default, still starts one pod per component (Knative's initial scale); in Standard mode it
// means none.
func TestInferenceServiceScaleFromZero(t *testing.T) {
	tests := map[string]struct {
		annotation, statusMode string
		wantPods               int64
	}{
		"Serverless by default":                  {wantPods: 2},
		"Serverless by annotation":               {annotation: "Serverless", wantPods: 2},
		"Knative by annotation":                  {annotation: "Knative", wantPods: 2},
		"Standard by annotation":                 {annotation: "Standard", wantPods: 0},
		"RawDeployment by annotation":            {annotation: "RawDeployment", wantPods: 0},
		"RawDeployment as the controller saw it": {statusMode: "RawDeployment", wantPods: 0},
	}
	def, ok := catalogRegistry(t).Lookup(schema.GroupKind{Group: "serving.kserve.io", Kind: "InferenceService"})
	require.True(t, ok)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
				"metadata": map[string]any{"name": "scale-zero", "namespace": "ml"},
				"spec": map[string]any{
					"predictor":   map[string]any{"minReplicas": int64(0), "model": map[string]any{"modelFormat": map[string]any{"name": "sklearn"}, "storageUri": "gs://m"}},
					"transformer": map[string]any{"minReplicas": int64(0), "containers": []any{map[string]any{"name": "t", "image": "i"}}},
				},
			}}
			if tc.annotation != "" {
				obj.SetAnnotations(map[string]string{"serving.kserve.io/deploymentMode": tc.annotation})
			}
			if tc.statusMode != "" {
				obj.Object["status"] = map[string]any{"deploymentMode": tc.statusMode}
			}
			w, err := def.Expand(obj)
			require.NoError(t, err)
			require.Equal(t, tc.wantPods, w.Totals.Pods)
		})
	}
}
