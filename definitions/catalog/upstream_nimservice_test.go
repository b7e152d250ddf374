package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamNIMService(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "apps.nvidia.com", Kind: "NIMService"}, "crds/nim/apps.nvidia.com_nimservices.yaml")
	checkSamples(t, "nim", map[string]sample{
		// multiNode with parallelism.pipeline 2, replicas 1: 1 LeaderWorkerSet group of 2 pods
		// (leader + 1 worker), each with nvidia.com/gpu 8 = 16 GPUs; one gang per group,
		// minMember = pipeline 2.
		"multi-node-nimservice.yaml/deepseek-r1": {Pods: 2, GPUs: 16, MinMembers: []int32{2}},
		// Single node, replicas 1, limits nvidia.com/gpu 1: 1 pod, 1 GPU, no gang.
		"standalone-basic-llm.yaml/meta-llama-3-2-1b-instruct": {Pods: 1, GPUs: 1},
		// scale.enabled with hpa.minReplicas 1 (spec.replicas is ignored): 1 pod × 1 GPU.
		"standalone-full-llm.yaml/meta-llama-3-2-1b-instruct": {Pods: 1, GPUs: 1},
		// inferencePlatform kserve, replicas 1, requests nvidia.com/gpu 1: 1 pod × 1 GPU.
		"kserve-knative-llm.yaml/meta-llama-3-2-1b-instruct": {Pods: 1, GPUs: 1},
	})
}
