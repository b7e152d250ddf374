package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamPyTorchJob(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "kubeflow.org", Kind: "PyTorchJob"}, "crds/pytorchjob/kubeflow.org_pytorchjobs.yaml")
	checkSamples(t, "pytorchjob", map[string]sample{
		// Master 1 + Worker 1 (replicas as written), each limits nvidia.com/gpu 1: 2 pods, 2 GPUs.
		// No schedulingPolicy.minAvailable and no elasticPolicy: minMember = all pods = 2.
		"pytorch_deepspeed_demo.yaml/pytorch-deepspeed-demo": {Pods: 2, GPUs: 2, MinMembers: []int32{2}},
		// Master 1 + Worker 1, 1 GPU each: 2 pods, 2 GPUs; minMember = all pods = 2.
		"pytorch_job_mnist_nccl.yaml/pytorch-dist-mnist-nccl": {Pods: 2, GPUs: 2, MinMembers: []int32{2}},
		// Master 1 + Worker 1, CPU only: 2 pods, 0 GPUs; minMember = 2.
		"simple.yaml/pytorch-simple": {Pods: 2, GPUs: 0, MinMembers: []int32{2}},
		// Worker 2 only (no Master), CPU only: 2 pods, 0 GPUs. elasticPolicy.minReplicas = 1 is
		// the gang size (no minAvailable), and a gang of 1 is not emitted: no PodGroup.
		"elastic-imagenet.yaml/elastic-example-imagenet": {Pods: 2, GPUs: 0},
	})
}
