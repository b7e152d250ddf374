package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamInferenceService(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "serving.kserve.io", Kind: "InferenceService"}, "crds/kserve/serving.kserve.io_inferenceservices.yaml")
	checkSamples(t, "kserve", map[string]sample{
		// predictor.model, minReplicas unset (1): 1 pod; model.resources requests and limits
		// nvidia.com/gpu "1": 1 GPU. KServe components get no gang.
		"hf_isvc.yaml/huggingface-llama2": {Pods: 1, GPUs: 1},
		// predictor.tensorflow (framework block) with limits only, nvidia.com/gpu 1: the
		// effective request is the limit, 1 pod × 1 GPU.
		"autoscale_gpu.yaml/flowers-sample-gpu": {Pods: 1, GPUs: 1},
		// predictor.pytorch with limits nvidia.com/gpu "1": 1 pod × 1 GPU.
		"torchserve-v2-bert_gpu.yaml/torchserve-bert-v2": {Pods: 1, GPUs: 1},
		// predictor (pytorch, 1) + transformer (containers, 1) = 2 pods, no GPUs.
		"torchserve-image-transformer.yaml/torch-transformer": {Pods: 2, GPUs: 0},
		// predictor (containers, 1) + explainer (containers, 1) = 2 pods, no GPUs.
		"aix-mnist-explainer.yaml/aix-explainer": {Pods: 2, GPUs: 0},
	})
}
