package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The DynamoGraphDeployment CRD is a hand-written stand-in (see shared/upstream/SOURCES.md):
// it keeps the upstream names and versions but preserves unknown fields, so linting checks
// the expressions compile and the versions exist, not the field paths.
func TestUpstreamDynamoGraphDeployment(t *testing.T) {
	gk := schema.GroupKind{Group: "nvidia.com", Kind: "DynamoGraphDeployment"}
	lintAgainstCRD(t, gk, "crds-standin-NOT-UPSTREAM/dynamo/dynamographdeployments.nvidia.com.standin.yaml")
	checkSamples(t, "dynamo", map[string]sample{
		// v1alpha1. Frontend: 1 replica × 1 pod, no GPU; worker: 1 × 1 pod with
		// resources.limits.gpu "1" → 2 pods, 1 GPU. Nothing multinode: no gang.
		"vllm-v1alpha1-agg.yaml/vllm-agg": {Pods: 2, GPUs: 1},
		// v1alpha1. Frontend 1 pod; decode and prefill each 1 replica × nodeCount 2 = 2 pods
		// with limits.gpu "1" each → 5 pods, 4 GPUs. One gang per multinode replica of
		// nodeCount 2: decode, prefill (services in key order: Frontend, decode, prefill).
		"vllm-v1alpha1-disagg-multinode.yaml/vllm-disagg": {Pods: 5, GPUs: 4, MinMembers: []int32{2, 2}},
		// v1beta1. Frontend 1 pod; decode and prefill 1 replica × nodeCount 2, main container
		// nvidia.com/gpu 1 → 5 pods, 4 GPUs; gangs decode 2, prefill 2 (list order).
		"vllm-v1beta1-disagg-multinode.yaml/vllm-disagg": {Pods: 5, GPUs: 4, MinMembers: []int32{2, 2}},
		// v1beta1. Frontend, VllmDecodeWorker (1 GPU), VllmPrefillWorker (1 GPU), 1 pod each
		// → 3 pods, 2 GPUs; single-node: no gang.
		"vllm-v1beta1-disagg.yaml/vllm-disagg": {Pods: 3, GPUs: 2},
	})
}
