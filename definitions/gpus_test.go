package definitions_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
)

// gpuJobSet is jobSet's shape with one replicatedJob of 2 pods whose template is tmpl.
func gpuJobSet(tmpl string) string {
	return `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: ml}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        template:
` + indent(tmpl, "          ")
}

const (
	claimTemplateV1 = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, count: 2}
      - name: channel
        exactly: {deviceClassName: compute-domain-default-channel.nvidia.com}
`
	claimTemplateV1beta1 = `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, deviceClassName: gpu.nvidia.com}
`
	claimTemplateAll = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: all-gpus, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All}
`
)

func withLimits(limits string) string {
	return "spec:\n  containers:\n  - name: main\n    image: i\n    resources: {limits: {" + limits + "}}\n"
}

func withClaim(template string) string {
	return "spec:\n  containers: [{name: main, image: i}]\n  resourceClaims:\n  - {name: gpu, resourceClaimTemplateName: " + template + "}\n"
}

// TestGPUSources: what counts as a GPU, with the breakdown by source.
func TestGPUSources(t *testing.T) {
	tests := map[string]struct {
		template     string
		gpus         definitions.GPUCounting
		wantGPUs     float64
		wantSources  map[string]float64
		wantWarnings []string
	}{
		"nvidia.com/gpu":                       {template: withLimits("nvidia.com/gpu: 4"), wantGPUs: 8, wantSources: map[string]float64{"nvidia.com/gpu": 8}},
		"nvidia.com/pgpu, passed to a Kata VM": {template: withLimits("nvidia.com/pgpu: 1"), wantGPUs: 2, wantSources: map[string]float64{"nvidia.com/pgpu": 2}},
		"amd.com/gpu":                          {template: withLimits("amd.com/gpu: 2"), wantGPUs: 4, wantSources: map[string]float64{"amd.com/gpu": 4}},
		"MIG slices and TPUs are not GPUs":     {template: withLimits("nvidia.com/mig-1g.5gb: 1, google.com/tpu: 4"), wantGPUs: 0},
		"a DRA claim template (resource.k8s.io/v1): its GPU devices, not its IMEX channel": {
			template: withClaim("two-gpus"), wantGPUs: 4, wantSources: map[string]float64{"dra:gpu.nvidia.com": 4}},
		"a DRA claim template (v1beta1): count defaults to 1": {
			template: withClaim("one-gpu"), wantGPUs: 2, wantSources: map[string]float64{"dra:gpu.nvidia.com": 2}},
		"allocationMode All cannot be counted": {
			template: withClaim("all-gpus"), wantGPUs: 0,
			wantWarnings: []string{"role workers: ResourceClaimTemplate all-gpus: request gpus asks for all devices of class gpu.nvidia.com (allocationMode All): that cannot be counted from the spec"}},
		"a claim template that is not there": {
			template: withClaim("missing"), wantGPUs: 0,
			wantWarnings: []string{"role workers: ResourceClaimTemplate missing not found: its GPUs are not counted"}},
		"a fraction of a GPU (KAI's gpu-fraction)": {
			template: "metadata: {annotations: {gpu-fraction: \"0.5\"}}\n" + withLimits("cpu: 1"), wantGPUs: 1, wantSources: map[string]float64{"gpu-fraction": 1}},
		"GPUs from resources and claims together": {
			template: withLimits("nvidia.com/gpu: 1") + "  resourceClaims:\n  - {name: gpu, resourceClaimTemplateName: one-gpu}\n",
			wantGPUs: 4, wantSources: map[string]float64{"nvidia.com/gpu": 2, "dra:gpu.nvidia.com": 2}},
		"a resource configured as a GPU": {
			template: withLimits("example.com/accelerator: 3, nvidia.com/gpu: 1"), gpus: definitions.GPUCounting{Resources: []corev1.ResourceName{"example.com/accelerator"}},
			wantGPUs: 6, wantSources: map[string]float64{"example.com/accelerator": 6}},
		"a device class configured as GPUs": {
			template: withClaim("two-gpus"), gpus: definitions.GPUCounting{DeviceClasses: []string{"gpu.nvidia.com", "compute-domain-default-channel.nvidia.com"}},
			wantGPUs: 6, wantSources: map[string]float64{"dra:gpu.nvidia.com": 4, "dra:compute-domain-default-channel.nvidia.com": 2}},
	}
	def := compile(t, jobSetDef)
	claims := definitions.ClaimsIn([]*unstructured.Unstructured{
		object(t, claimTemplateV1), object(t, claimTemplateV1beta1), object(t, claimTemplateAll),
	}, "ml")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, err := def.ExpandWith(object(t, gpuJobSet(tc.template)), nil, definitions.ExpandOptions{GPUs: tc.gpus, Claims: claims})
			require.NoError(t, err)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			require.Equal(t, tc.wantSources, w.Totals.GPUSources)
			require.Len(t, w.Roles, 1)
			require.Equal(t, tc.wantGPUs, w.Roles[0].GPUs)
			require.Equal(t, tc.wantSources, w.Roles[0].GPUSources)
			require.Equal(t, tc.wantWarnings, w.Warnings)
		})
	}
}
