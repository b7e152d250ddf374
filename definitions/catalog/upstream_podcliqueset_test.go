package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamPodCliqueSet(t *testing.T) {
	gk := schema.GroupKind{Group: "grove.io", Kind: "PodCliqueSet"}
	lintAgainstCRD(t, gk, "crds/grove/grove.io_podcliquesets.yaml")
	checkSamples(t, "grove", map[string]sample{
		// 1 PCS replica. Standalone pca 3 + pcd 2; scaling group sga (replicas and
		// minAvailable default 1) of pcb 2 + pcc 2 → 1 × (3 + 2 + 1 × (2 + 2)) = 9 pods.
		// Base PodGang: minAvailable defaults to replicas: 3 + 2 + 1 × (2 + 2) = 9; no copy
		// beyond minAvailable (1 − 1 = 0), so one gang.
		"simple1.yaml/simple1": {Pods: 9, GPUs: 0, MinMembers: []int32{9}},
		// 1 replica. Standalone frontend 2 + vision-encoder 1; prefill (1 copy) pleader 1 +
		// pworker 4; decode-cluster (1 copy) dleader 1 + dworker 2 → 3 + 5 + 3 = 11 pods.
		// Base gang = 3 + 1 × 5 + 1 × 3 = 11; both groups have replicas = minAvailable = 1.
		"complete-inference-pipeline.yaml/comp-inf-ppln": {Pods: 11, GPUs: 0, MinMembers: []int32{11}},
		// 1 replica, standalone prefill 3 + decode 2 = 5 pods, base gang 5.
		"single-node-disaggregated.yaml/single-node-disaggregated": {Pods: 5, GPUs: 0, MinMembers: []int32{5}},
		// 1 replica, one clique of 1 pod with nvidia.com/gpu 1: 1 pod, 1 GPU; base gang of 1
		// pod is not emitted (a single pod needs no gang).
		"e2e-mnnvl-gpu-default.yaml/mnnvl-gpu-default": {Pods: 1, GPUs: 1},
		// prefill: 2 copies of pleader 1 + pworker 4 = 10 pods; decode: 1 copy of dleader 1 +
		// dworker 2 = 3 → 13 pods. Base gang: 1 copy × 5 + 1 × 3 = 8; prefill's copy beyond
		// minAvailable 1 gets its own scaled gang of 5.
		"multi-node-disaggregated.yaml/multinode-disaggregated": {Pods: 13, GPUs: 0, MinMembers: []int32{8, 5}},
		// model-instance: 2 copies of leader 1 + worker 3 → 8 pods. Base gang 4; the second
		// copy is a scaled gang of 4.
		"pcsg-env-vars.yaml/env-demo-pcsg": {Pods: 8, GPUs: 0, MinMembers: []int32{4, 4}},
	})
}
