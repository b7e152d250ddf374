package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamRayService(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "ray.io", Kind: "RayService"}, "crds/rayservice/ray.io_rayservices.yaml")
	checkSamples(t, "rayservice", map[string]sample{
		// head 1 (no GPU) + gpu-group clamp(replicas 2, [min 2, max 2]) = 2 pods × 8 nvidia.com/gpu:
		// 3 pods, 16 GPUs. Gang: 1 + minReplicas 2 = 3.
		"ray-service.deepseek.yaml/deepseek-r1": {Pods: 3, GPUs: 16, MinMembers: []int32{3}},
		// head 1 + gpu-group clamp(1, [1, 1]) = 1 × numOfHosts 1, 4 GPUs each: 2 pods, 4 GPUs.
		// Gang: 1 + 1 = 2.
		"ray-service.llm-serve.yaml/ray-serve-llm": {Pods: 2, GPUs: 4, MinMembers: []int32{2}},
		// head 1 + small-group clamp(1, [1, 5]) = 1, no GPUs: 2 pods. Gang: 1 + 1 = 2.
		"ray-service.sample.yaml/rayservice-sample": {Pods: 2, GPUs: 0, MinMembers: []int32{2}},
		// head 1 + gpu-group clamp(1, [1, 10]) = 1 × 1 GPU: 2 pods, 1 GPU. Gang: 1 + 1 = 2.
		"ray-service.stable-diffusion.yaml/stable-diffusion": {Pods: 2, GPUs: 1, MinMembers: []int32{2}},
	})
}
