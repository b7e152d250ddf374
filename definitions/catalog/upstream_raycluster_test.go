package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamRayCluster(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}, "crds/raycluster/ray.io_rayclusters.yaml")
	checkSamples(t, "raycluster", map[string]sample{
		// head 1 + workergroup clamp(replicas 1, [min 1, max 5]) = 1 × numOfHosts 1 = 2 pods, no GPUs.
		// Gang: 1 + minReplicas 1 × 1 = 2.
		"ray-cluster.sample.yaml/raycluster-kuberay": {Pods: 2, GPUs: 0, MinMembers: []int32{2}},
		// head 1 + tpu-group clamp(1, [1, 1]) = 1 × numOfHosts 2 = 3 pods; google.com/tpu is not a GPU.
		// Gang: 1 + minReplicas 1 × 2 hosts = 3.
		"ray-cluster.tpu-v4-multihost.yaml/raycluster-tpu-v4-multihost": {Pods: 3, GPUs: 0, MinMembers: []int32{3}},
		// head only (4 nvidia.com/gpu), no worker groups: 1 pod, 4 GPUs; a 1-pod gang is not emitted.
		"ray-cluster.verl.yaml/verl-cluster": {Pods: 1, GPUs: 4, MinMembers: nil},
		// head 1 + large-cpu-group clamp(1, [1, 10]) = 1 + accelerator-group clamp(0, [0, 10]) = 0
		// + spot-group clamp(0, [0, 5]) = 0 → 2 pods; the accelerator group's GPU is a Ray resource
		// (rayStartParams/resources), its pods request no nvidia.com/gpu: 0 GPUs.
		// Gang: 1 + 1 (minReplicas 1) + 0 + 0 = 2.
		"ray-cluster-label-selector.yaml/ray-label-cluster": {Pods: 2, GPUs: 0, MinMembers: []int32{2}},
	})
}
