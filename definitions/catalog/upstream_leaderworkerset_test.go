package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamLeaderWorkerSet(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}, "crds/lws/leaderworkerset.x-k8s.io_leaderworkersets.yaml")
	checkSamples(t, "lws", map[string]sample{
		// replicas 2 × size 2 = 4 pods (2 leaders from leaderTemplate, 2 workers); leader and
		// worker each limit nvidia.com/gpu "8": 4 × 8 = 32 GPUs. One gang per group, minMember
		// = size = 2: [2, 2].
		"vllm-gpu-lws.yaml/vllm": {Pods: 4, GPUs: 32, MinMembers: []int32{2, 2}},
		// replicas 2 × size 2 = 4 pods, each limits nvidia.com/gpu "1": 4 GPUs; [2, 2].
		"sglang-lws.yaml/sglang": {Pods: 4, GPUs: 4, MinMembers: []int32{2, 2}},
		// replicas 3 × size 4 = 12 pods, no leaderTemplate (leaders from workerTemplate), CPU
		// only: 0 GPUs; 3 groups of minMember 4.
		"sample-lws.yaml/leaderworkerset-sample": {Pods: 12, GPUs: 0, MinMembers: []int32{4, 4, 4}},
		// replicas 3 × size 4 = 12 pods with a distinct leaderTemplate, CPU only; [4, 4, 4].
		"leaderworkerset_multi_template.yaml/leaderworkerset-multi-template": {Pods: 12, GPUs: 0, MinMembers: []int32{4, 4, 4}},
		// replicas 2 × size 4 = 8 pods, CPU only; [4, 4].
		"lws-sample-volcano.yaml/lws-sample-volcano": {Pods: 8, GPUs: 0, MinMembers: []int32{4, 4}},
	})
}
