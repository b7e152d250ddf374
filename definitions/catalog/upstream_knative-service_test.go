package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUpstreamKnativeService(t *testing.T) {
	lintAgainstCRD(t, schema.GroupKind{Group: "serving.knative.dev", Kind: "Service"}, "crds/knative-serving/service.yaml")
	checkSamples(t, "knative-serving", map[string]sample{
		// minScale 50 (legacy spelling), no initial-scale (default 1): max(50, 1) = 50 pods;
		// min-scale 50 ≥ 2, so one group per Revision of minMember 50. No GPUs.
		"rollout-probe-setup-activator-direct.yaml/activator-with-cc": {Pods: 50, GPUs: 0, MinMembers: []int32{50}},
		// No scale annotations: max(min-scale 0, initial-scale 1) = 1 pod (two containers in it);
		// min-scale 0 < 2, so no gang.
		"multicontainer-service.yaml/multi-container-test": {Pods: 1, GPUs: 0},
		// No scale annotations: 1 pod with an init container; no gang.
		"initcontainers-service.yaml/initcontainers": {Pods: 1, GPUs: 0},
	})
}
