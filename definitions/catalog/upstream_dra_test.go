package catalog

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/manifest"
)

// draForm rewrites a workload that asks for n whole GPUs per pod to ask for them through
// Dynamic Resource Allocation in the operator's own field, and returns the claim objects the
// same manifest would hold.
type draForm func(t *testing.T, obj *unstructured.Unstructured, n int64) []*unstructured.Unstructured

// claimTemplate is a ResourceClaimTemplate of n gpu.nvidia.com devices.
func claimTemplate(namespace, name string, n int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resource.k8s.io/v1",
		"kind":       "ResourceClaimTemplate",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"spec": map[string]any{"devices": map[string]any{"requests": []any{
			map[string]any{"name": "gpus", "exactly": map[string]any{"deviceClassName": "gpu.nvidia.com", "count": n}},
		}}}},
	}}
}

// TestUpstreamGPUsThroughDRA: the real samples that ask for whole GPUs (nvidia.com/gpu) of an
// operator that also takes Dynamic Resource Allocation claims outside a pod template, asking
// for the same GPUs through each of its claim forms instead, count the same GPUs, all from
// gpu.nvidia.com devices, with no warning.
func TestUpstreamGPUsThroughDRA(t *testing.T) {
	nimTemplate := func(t *testing.T, obj *unstructured.Unstructured, n int64) []*unstructured.Unstructured {
		setField(t, obj, []any{map[string]any{"resourceClaimTemplateName": "gpus"}}, "spec", "draResources")
		return []*unstructured.Unstructured{claimTemplate(obj.GetNamespace(), "gpus", n)}
	}
	nimCreation := func(t *testing.T, obj *unstructured.Unstructured, n int64) []*unstructured.Unstructured {
		device := map[string]any{"name": "gpu", "count": n}
		if n == 1 {
			device = map[string]any{"name": "gpu"} // the CRD's defaults: count 1 of gpu.nvidia.com
		}
		setField(t, obj, []any{map[string]any{"claimCreationSpec": map[string]any{"devices": []any{device}}}}, "spec", "draResources")
		return nil
	}
	kservePredictor := func(t *testing.T, obj *unstructured.Unstructured, n int64) []*unstructured.Unstructured {
		setField(t, obj, []any{map[string]any{"name": "gpus", "resourceClaimTemplateName": "gpus"}}, "spec", "predictor", "resourceClaims")
		return []*unstructured.Unstructured{claimTemplate(obj.GetNamespace(), "gpus", n)}
	}
	tests := map[string]struct {
		dir, kind string
		// gpusUnder is where the samples ask for nvidia.com/gpu.
		gpusUnder []string
		form      draForm
		// samples is how many objects of kind ask for GPUs there.
		samples int
	}{
		"NIMService: draResources naming a ResourceClaimTemplate of the manifest": {
			dir: "nim", kind: "NIMService", gpusUnder: []string{"spec", "resources"}, form: nimTemplate, samples: 6},
		"NIMService: draResources with a claimCreationSpec": {
			dir: "nim", kind: "NIMService", gpusUnder: []string{"spec", "resources"}, form: nimCreation, samples: 6},
		"InferenceService: the predictor's resourceClaims": {
			dir: "kserve", kind: "InferenceService", gpusUnder: []string{"spec", "predictor"}, form: kservePredictor, samples: 3},
	}
	up := upstreamDir(t)
	reg := catalogRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(up, "samples", tc.dir, "*.yaml"))
			require.NoError(t, err)
			rewritten := 0
			for _, f := range files {
				docs, err := manifest.ReadFile(f)
				require.NoError(t, err)
				for _, d := range docs {
					if d.Object.GetKind() != tc.kind {
						continue
					}
					def, ok := reg.Lookup(d.Object.GroupVersionKind().GroupKind())
					require.True(t, ok)
					before, err := def.Expand(d.Object)
					require.NoError(t, err)
					obj := d.Object.DeepCopy()
					under, found, err := unstructured.NestedFieldNoCopy(obj.Object, tc.gpusUnder...)
					require.NoError(t, err)
					n := int64(0)
					if found {
						n = takeGPUs(t, under)
					}
					if n == 0 {
						continue
					}
					rewritten++
					claims := tc.form(t, obj, n)
					after, err := def.ExpandWith(obj, nil, definitions.ExpandOptions{Claims: definitions.ClaimsIn(claims, obj.GetNamespace())})
					require.NoError(t, err)
					where := fmt.Sprintf("%s: %s", d.Where(), obj.GetName())
					require.Empty(t, after.Warnings, where)
					require.Equal(t, before.Totals.Pods, after.Totals.Pods, where)
					require.NotZero(t, before.Totals.GPUs, where)
					want := map[string]float64{"dra:gpu.nvidia.com": before.Totals.GPUs}
					if diff := cmp.Diff(want, after.Totals.GPUSources); diff != "" {
						t.Errorf("%s: GPUs by source (-want +got):\n%s", where, diff)
					}
				}
			}
			require.Equal(t, tc.samples, rewritten, "samples of %s in samples/%s asking for nvidia.com/gpu", tc.kind, tc.dir)
		})
	}
}

// takeGPUs removes every nvidia.com/gpu quantity under v and returns the largest: the GPUs one
// pod asks for (a limit and a request of one container are the same GPUs).
func takeGPUs(t *testing.T, v any) int64 {
	t.Helper()
	n := int64(0)
	switch v := v.(type) {
	case map[string]any:
		if q, ok := v["nvidia.com/gpu"]; ok {
			parsed, err := resource.ParseQuantity(fmt.Sprint(q))
			require.NoError(t, err)
			n = max(n, parsed.Value())
			delete(v, "nvidia.com/gpu")
		}
		for _, e := range v {
			n = max(n, takeGPUs(t, e))
		}
	case []any:
		for _, e := range v {
			n = max(n, takeGPUs(t, e))
		}
	}
	return n
}

func setField(t *testing.T, obj *unstructured.Unstructured, value any, fields ...string) {
	t.Helper()
	require.NoError(t, unstructured.SetNestedField(obj.Object, value, fields...))
}
