package definitions_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRoleResources: a role's resources expression turns a framework's own resource format
// into the main container's requests (Dynamo v1alpha1 keeps GPUs in resources.limits.gpu).
func TestRoleResources(t *testing.T) {
	def := thingDef(`
roles:
- name: svc
  podSpec: spec.services[*].extraPodSpec
  replicas: "item.?replicas.orValue(1)"
  resources: "{'nvidia.com/gpu': item.?resources.?limits.?gpu.orValue(''), 'cpu': item.?resources.?requests.?cpu.orValue('')}"
`)
	tests := map[string]struct {
		services string
		wantGPUs float64
		wantCPU  string
		wantWarn bool
	}{
		"gpus from the framework's field":         {services: `{decode: {replicas: 2, resources: {limits: {gpu: "4"}}, extraPodSpec: {containers: [{name: main, image: i}]}}}`, wantGPUs: 8},
		"no containers: a main container is made": {services: `{decode: {resources: {limits: {gpu: "1"}, requests: {cpu: "2"}}, extraPodSpec: {}}}`, wantGPUs: 1, wantCPU: "2"},
		"empty values keep the template":          {services: `{decode: {extraPodSpec: {containers: [{name: main, image: i, resources: {limits: {nvidia.com/gpu: "2"}}}]}}}`, wantGPUs: 2},
		"bad quantity is a warning":               {services: `{decode: {resources: {limits: {gpu: "lots"}}, extraPodSpec: {}}}`, wantWarn: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := expand(t, def, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {services: "+tc.services+"}\n")
			if tc.wantWarn {
				require.NotEmpty(t, w.Warnings)
				require.Contains(t, w.Status.Reason, "lots")
				return
			}
			require.Empty(t, w.Warnings)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			if tc.wantCPU != "" {
				q := w.Roles[0].PodResources["cpu"]
				require.Equal(t, tc.wantCPU, q.String())
			}
		})
	}
}
