package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamMPIJob(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "kubeflow.org", Kind: "MPIJob"}, "crds/mpijob/kubeflow.org_mpijobs.yaml")
	checkSamples(t, "mpijob", map[string]sample{
		// launcher 1 + Worker.replicas 2 = 3 pods; only the workers have nvidia.com/gpu (limit
		// 1 each): 2 GPUs. No minAvailable, launcherCreationPolicy default AtStartup:
		// minMember = launcher + workers = 3.
		"tensorflow-benchmarks.yaml/tensorflow-benchmarks": {Pods: 3, GPUs: 2, MinMembers: []int32{3}},
		// launcher 1 + 2 workers, CPU/memory only: 3 pods, 0 GPUs, minMember 1 + 2 = 3.
		"pi.yaml/pi": {Pods: 3, GPUs: 0, MinMembers: []int32{3}},
		// launcher 1 + 2 workers, CPU/memory only: 3 pods, 0 GPUs, minMember 3.
		"horovod-tensorflow-mnist.yaml/tensorflow-mnist": {Pods: 3, GPUs: 0, MinMembers: []int32{3}},
	})
}
