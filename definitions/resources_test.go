package definitions_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func sidecar(name string, requests corev1.ResourceList) corev1.Container {
	c := ctr(name, requests, nil)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

func TestPodRequests(t *testing.T) {
	tests := map[string]struct {
		spec corev1.PodSpec
		want map[string]string
	}{
		"no resources": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		},
		"requests of all containers add up": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				ctr("a", rl("cpu", "1", "memory", "1Gi"), nil),
				ctr("b", rl("cpu", "500m"), nil),
			}},
			want: map[string]string{"cpu": "1500m", "memory": "1Gi"},
		},
		"GPU only in limits counts as requested": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				ctr("a", rl("cpu", "1"), rl("nvidia.com/gpu", "4")),
			}},
			want: map[string]string{"cpu": "1", "nvidia.com/gpu": "4"},
		},
		"limits of every resource default its requests": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				ctr("a", nil, rl("cpu", "2", "memory", "4Gi", "example.com/fpga", "1")),
			}},
			want: map[string]string{"cpu": "2", "memory": "4Gi", "example.com/fpga": "1"},
		},
		"explicit requests win over limits": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				ctr("a", rl("cpu", "1"), rl("cpu", "4", "nvidia.com/gpu", "2")),
			}},
			want: map[string]string{"cpu": "1", "nvidia.com/gpu": "2"},
		},
		"init container larger than the app containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init", rl("cpu", "4"), nil), ctr("init2", rl("cpu", "1"), nil)},
				Containers:     []corev1.Container{ctr("a", rl("cpu", "1"), nil), ctr("b", rl("cpu", "1"), nil)},
			},
			want: map[string]string{"cpu": "4"},
		},
		"app containers larger than the init container": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init", rl("cpu", "1"), rl("nvidia.com/gpu", "1"))},
				Containers:     []corev1.Container{ctr("a", rl("cpu", "2"), nil), ctr("b", rl("cpu", "2"), rl("nvidia.com/gpu", "1"))},
			},
			want: map[string]string{"cpu": "4", "nvidia.com/gpu": "1"},
		},
		"init container's GPU limit counts too": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("warmup", nil, rl("nvidia.com/gpu", "8"))},
				Containers:     []corev1.Container{ctr("a", nil, rl("nvidia.com/gpu", "2"))},
			},
			want: map[string]string{"nvidia.com/gpu": "8"},
		},
		"sidecar adds to the app containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar("proxy", rl("cpu", "1", "memory", "128Mi"))},
				Containers:     []corev1.Container{ctr("a", rl("cpu", "2", "memory", "1Gi"), nil)},
			},
			want: map[string]string{"cpu": "3", "memory": "1152Mi"},
		},
		"init container after a sidecar runs next to it": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					sidecar("proxy", rl("cpu", "1")),
					ctr("migrate", rl("cpu", "5"), nil),
				},
				Containers: []corev1.Container{ctr("a", rl("cpu", "2"), nil)},
			},
			// max(sidecar 1 + init 5, sidecar 1 + app 2)
			want: map[string]string{"cpu": "6"},
		},
		"init container before a sidecar does not run next to it": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					ctr("migrate", rl("cpu", "5"), nil),
					sidecar("proxy", rl("cpu", "1")),
				},
				Containers: []corev1.Container{ctr("a", rl("cpu", "2"), nil)},
			},
			want: map[string]string{"cpu": "5"},
		},
		"pod overhead": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi"), nil)},
				Overhead:   rl("cpu", "250m", "memory", "64Mi"),
			},
			want: map[string]string{"cpu": "1250m", "memory": "1088Mi"},
		},
		"pod-level resources replace the containers' cpu and memory": {
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Limits: rl("cpu", "8", "memory", "8Gi")},
				Containers: []corev1.Container{ctr("a", rl("cpu", "1"), rl("nvidia.com/gpu", "1"))},
			},
			want: map[string]string{"cpu": "8", "memory": "8Gi", "nvidia.com/gpu": "1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			orig := tc.spec.DeepCopy()
			got := definitions.PodRequests(&tc.spec)
			if diff := cmp.Diff(tc.want, resList(got)); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			require.Equal(t, orig, &tc.spec, "PodRequests must not modify its argument")
		})
	}
}

func TestTotals(t *testing.T) {
	def := thingDef(`
roles:
- name: part
  podTemplate: spec.parts[*].template
  replicas: item.replicas
status:
- {state: Running, when: "true"}
`)
	tests := map[string]struct {
		parts        string
		wantPods     int64
		wantGPUs     float64
		wantRes      map[string]string
		wantRoleGPUs []float64
		wantState    v1alpha1.State
		wantWarnings []string
	}{
		"roles with different GPU counts": {
			parts: `
- replicas: 2
  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "8"}, requests: {cpu: "4"}}}]}}
- replicas: 3
  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1", amd.com/gpu: "2"}}}]}}
- replicas: 1
  template: {spec: {containers: [{name: c, resources: {requests: {memory: 2Gi}}}]}}`,
			wantPods: 6,
			// amd.com/gpu are GPUs too: 2×8 + 3×(1+2).
			wantGPUs:     25,
			wantRes:      map[string]string{"cpu": "8", "memory": "2Gi", "nvidia.com/gpu": "19", "amd.com/gpu": "6"},
			wantRoleGPUs: []float64{16, 9, 0},
			wantState:    v1alpha1.StateRunning,
		},
		"malformed quantity": {
			parts: `
- replicas: 2
  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "8"}}}]}}
- replicas: 3
  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "lots"}}}]}}`,
			wantPods:     2,
			wantGPUs:     16,
			wantRes:      map[string]string{"nvidia.com/gpu": "16"},
			wantRoleGPUs: []float64{16, 0},
			wantState:    v1alpha1.StateUnknown,
			wantWarnings: []string{"role 1 (spec.parts[1].template): decoding pod template"},
		},
		"resources of the wrong shape": {
			parts: `
- replicas: 1
  template: {spec: {containers: [{name: c, resources: [1, 2]}]}}`,
			wantRoleGPUs: []float64{0},
			wantState:    v1alpha1.StateUnknown,
			wantWarnings: []string{"role 0 (spec.parts[0].template): decoding pod template"},
		},
		"template that is not an object": {
			parts: `
- replicas: 1
  template: "a pod"`,
			wantRoleGPUs: []float64{0},
			wantState:    v1alpha1.StateUnknown,
			wantWarnings: []string{"role 0 (spec.parts[0].template): pod template is not an object"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var w *definitions.Workload
			require.NotPanics(t, func() {
				w = expand(t, def, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n  parts:\n"+indent(tc.parts, "  "))
			})
			require.Equal(t, tc.wantPods, w.Totals.Pods)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			if diff := cmp.Diff(tc.wantRes, resList(w.Totals.Resources)); diff != "" {
				t.Errorf("total resources (-want +got):\n%s", diff)
			}
			var roleGPUs []float64
			for _, r := range w.Roles {
				roleGPUs = append(roleGPUs, r.GPUs)
			}
			require.Equal(t, tc.wantRoleGPUs, roleGPUs)
			require.Equal(t, tc.wantState, w.Status.State, w.Status.Reason)
			require.Len(t, w.Warnings, len(tc.wantWarnings))
			for i, s := range tc.wantWarnings {
				require.Contains(t, w.Warnings[i], s)
			}
			if len(tc.wantWarnings) > 0 {
				require.Contains(t, w.Status.Reason, "cannot read the workload: "+tc.wantWarnings[0])
			}
		})
	}
}
