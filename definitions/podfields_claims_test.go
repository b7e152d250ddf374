package definitions_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
)

// nimClaimsDef is NIMService-like: the operator puts the list at spec.claims in every pod's
// spec.resourceClaims (the NIM operator's draResources).
var nimClaimsDef = thingDef(`
roles:
- name: nim
  podFields:
    resources: spec.resources
    resourceClaims: spec.claims
    containerName: nim
  replicas: self.spec.?replicas.orValue(1)
`)

// componentClaimsDef has the claims under a [*] base over a map.
var componentClaimsDef = thingDef(`
roles:
- name: component
  podFields:
    base: spec.components[*]
    resourceClaims: claims
  instanceName: key
`)

// claimObjects are the claim templates and claims of namespace ml the tests' manifests hold.
var claimObjects = []string{`
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, count: 2}
`, `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: one-gpu, namespace: ml}
spec:
  devices:
    requests:
    - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}
`, `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: mig-slice, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: slice, exactly: {deviceClassName: mig.nvidia.com}}
`}

// TestPodFieldsResourceClaims: the claims an operator puts in its pods' spec.resourceClaims
// from its own list count their GPUs like a pod template's: by name from the manifest (or
// cluster), or described in place (a claimCreationSpec); what cannot be counted says why.
func TestPodFieldsResourceClaims(t *testing.T) {
	tests := map[string]struct {
		def, spec    string
		noLookup     bool // expand with no claim lookup at all
		wantGPUs     float64
		wantSources  map[string]float64
		wantWarnings []string
		wantClaims   []corev1.PodResourceClaim // the assembled pod's, when set
	}{
		"a ResourceClaimTemplate by name": {
			spec:     "replicas: 2\nclaims: [{resourceClaimTemplateName: two-gpus}]",
			wantGPUs: 4, wantSources: map[string]float64{"dra:gpu.nvidia.com": 4},
			wantClaims: []corev1.PodResourceClaim{{Name: "spec.claims[0]", ResourceClaimTemplateName: ptr.To("two-gpus")}},
		},
		"a ResourceClaim by name": {
			spec:     "claims: [{resourceClaimName: one-gpu}]",
			wantGPUs: 1, wantSources: map[string]float64{"dra:gpu.nvidia.com": 1},
			wantClaims: []corev1.PodResourceClaim{{Name: "spec.claims[0]", ResourceClaimName: ptr.To("one-gpu")}},
		},
		"items in a pod spec's form keep their names": {
			spec:       "claims: [{name: gpus, resourceClaimTemplateName: two-gpus}]",
			wantGPUs:   2,
			wantClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")}},
		},
		"a claim described in place: a device counts 1 of gpu.nvidia.com by default": {
			spec:     "replicas: 3\nclaims: [{claimCreationSpec: {devices: [{name: gpu}]}}]",
			noLookup: true,
			wantGPUs: 3, wantSources: map[string]float64{"dra:gpu.nvidia.com": 3},
			wantClaims: []corev1.PodResourceClaim{{Name: "spec.claims[0]"}},
		},
		"a claim described in place: its counts, and an IMEX channel beside it is no GPU": {
			spec: `replicas: 2
claims:
- claimCreationSpec:
    devices:
    - {name: gpus, count: 4, deviceClassName: gpu.nvidia.com}
    - {name: channel, deviceClassName: compute-domain-default-channel.nvidia.com}`,
			wantGPUs: 8, wantSources: map[string]float64{"dra:gpu.nvidia.com": 8},
		},
		"claims and GPU resources together": {
			spec:     "resources: {limits: {nvidia.com/gpu: 1}}\nclaims: [{resourceClaimTemplateName: two-gpus}, {claimCreationSpec: {devices: [{name: g}]}}]",
			wantGPUs: 4, wantSources: map[string]float64{"nvidia.com/gpu": 1, "dra:gpu.nvidia.com": 3},
		},
		"a template that is not in the manifest says so": {
			spec:         "claims: [{resourceClaimTemplateName: missing}]",
			wantWarnings: []string{"role nim: ResourceClaimTemplate missing not found: its GPUs are not counted"},
		},
		"a claim by name with no claim lookup says so": {
			spec:         "claims: [{resourceClaimName: one-gpu}]",
			noLookup:     true,
			wantWarnings: []string{"role nim: ResourceClaim one-gpu is not known here: its GPUs are not counted"},
		},
		"a claim described in place of a device class that is no GPU says so": {
			spec: "claims: [{claimCreationSpec: {devices: [{name: slice, deviceClassName: mig.nvidia.com}]}}]",
			wantWarnings: []string{
				"role nim: spec.claims[0].claimCreationSpec asks for devices of class mig.nvidia.com, none of a GPU device class (gpu.nvidia.com): no GPUs are counted from it"},
		},
		"a template of a device class that is no GPU says so": {
			spec: "claims: [{resourceClaimTemplateName: mig-slice}]",
			wantWarnings: []string{
				"role nim: ResourceClaimTemplate mig-slice asks for devices of class mig.nvidia.com, none of a GPU device class (gpu.nvidia.com): no GPUs are counted from it"},
		},
		"a device class that is no GPU beside counted GPUs says nothing": {
			spec:     "resources: {limits: {nvidia.com/gpu: 1}}\nclaims: [{resourceClaimTemplateName: mig-slice}]",
			wantGPUs: 1, wantSources: map[string]float64{"nvidia.com/gpu": 1},
		},
		"with a [*] base, the note names the claim in the object": {
			def:      componentClaimsDef,
			spec:     "components:\n  a: {claims: [{claimCreationSpec: {devices: [{name: s, deviceClassName: mig.nvidia.com}]}}]}\n  b: {claims: [{resourceClaimTemplateName: two-gpus}]}",
			wantGPUs: 2, wantSources: map[string]float64{"dra:gpu.nvidia.com": 2},
			wantWarnings: []string{
				"role a: spec.components.a.claims[0].claimCreationSpec asks for devices of class mig.nvidia.com, none of a GPU device class (gpu.nvidia.com): no GPUs are counted from it"},
		},
	}
	claims := make([]*unstructured.Unstructured, len(claimObjects))
	for i, c := range claimObjects {
		claims[i] = object(t, c)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			def := tc.def
			if def == "" {
				def = nimClaimsDef
			}
			opts := definitions.ExpandOptions{Claims: definitions.ClaimsIn(claims, "ml")}
			if tc.noLookup {
				opts = definitions.ExpandOptions{}
			}
			obj := object(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ml}\nspec:\n"+indent(tc.spec, "  "))
			w, err := compile(t, def).ExpandWith(obj, nil, opts)
			require.NoError(t, err)
			require.Equal(t, tc.wantWarnings, w.Warnings)
			require.Empty(t, w.Errors)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			if tc.wantSources != nil {
				if diff := cmp.Diff(tc.wantSources, w.Totals.GPUSources); diff != "" {
					t.Errorf("GPUs by source (-want +got):\n%s", diff)
				}
			}
			if tc.wantClaims != nil {
				if diff := cmp.Diff(tc.wantClaims, w.Roles[0].Template.Spec.ResourceClaims); diff != "" {
					t.Errorf("the pod's resourceClaims (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestPodFieldsResourceClaimsUnreadable: a claims list of the wrong shape is a field error of
// the object, at the field, not a silent 0 GPUs.
func TestPodFieldsResourceClaimsUnreadable(t *testing.T) {
	tests := map[string]struct {
		spec      string
		wantPath  string
		wantError string
	}{
		"not a list": {
			spec: "claims: {resourceClaimTemplateName: two-gpus}", wantPath: "spec.claims",
			wantError: "role nim: spec.claims: expected list, found object"},
		"an item that is not an object": {
			spec: "claims: [two-gpus]", wantPath: "spec.claims[0]",
			wantError: "role nim: spec.claims[0]: expected object, found string"},
		"a claim's name that is not a string": {
			spec: "claims: [{resourceClaimName: 5}]", wantPath: "spec.claims[0].resourceClaimName",
			wantError: "role nim: spec.claims[0].resourceClaimName: expected string, found number"},
		"devices that are not a list": {
			spec: "claims: [{claimCreationSpec: {devices: {name: gpu}}}]", wantPath: "spec.claims[0].claimCreationSpec.devices",
			wantError: "role nim: spec.claims[0].claimCreationSpec.devices: expected list, found object"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ml}\nspec:\n"+indent(tc.spec, "  "))
			w, err := compile(t, nimClaimsDef).Expand(obj)
			require.NoError(t, err)
			require.Equal(t, []string{tc.wantError}, w.Warnings)
			require.Len(t, w.Errors, 1)
			require.Equal(t, tc.wantPath, w.Errors[0].Path)
			require.Len(t, w.Roles, 1)
			_, unreadable := w.Roles[0].Unreadable()
			require.True(t, unreadable)
		})
	}
}

// TestSetPodTemplateFieldResourceClaims: a pod's claims are not written into the operator's
// own list, which it converts (a claimCreationSpec is no pod claim).
func TestSetPodTemplateFieldResourceClaims(t *testing.T) {
	obj := object(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ml}\nspec:\n  claims: [{resourceClaimTemplateName: two-gpus}]\n")
	before := obj.DeepCopy()
	_, err := compile(t, nimClaimsDef).SetPodTemplateField(obj, "spec.resourceClaims", []any{map[string]any{"name": "x", "resourceClaimName": "y"}})
	require.EqualError(t, err, "role nim: spec.resourceClaims: this role's claims are the operator's own list at spec.claims, which it converts: change them there")
	require.Equal(t, before, obj)
}
