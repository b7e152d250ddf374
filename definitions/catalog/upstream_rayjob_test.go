package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamRayJob(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "ray.io", Kind: "RayJob"}, "crds/rayjob/ray.io_rayjobs.yaml")
	checkSamples(t, "rayjob", map[string]sample{
		// cluster: head 1 + small-group clamp(replicas 1, [min 1, max 5]) = 1 × 1 host; plus the
		// submitter pod (submissionMode defaults to K8sJobMode): 3 pods, no GPUs.
		// Gang (submitter excluded): 1 + minReplicas 1 = 2.
		"ray-job.sample.yaml/rayjob-sample": {Pods: 3, GPUs: 0, MinMembers: []int32{2}},
		// generateName only (the name is empty): head 1 (no GPU) + gpu-group clamp(4, [4, 4]) = 4
		// pods × 1 nvidia.com/gpu + submitter 1 = 6 pods, 4 GPUs. Gang: 1 + minReplicas 4 = 5.
		"ray-job.pytorch-image-classifier.yaml/": {Pods: 6, GPUs: 4, MinMembers: []int32{5}},
		// head only (4 nvidia.com/gpu) + submitter = 2 pods, 4 GPUs; the gang would be the head
		// alone (1 pod): none.
		"ray-job.batch-inference.yaml/rayjob-sample": {Pods: 2, GPUs: 4, MinMembers: nil},
		// clusterSelector: the existing cluster is not the RayJob's; only the submitter pod. No gang.
		"ray-job.use-existing-raycluster.yaml/rayjob-use-existing-raycluster": {Pods: 1, GPUs: 0, MinMembers: nil},
	})
}
