package definitions_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
)

// sharedClaimsDef has one role per part (replicas pods each); its sharedClaims are the
// object's spec.shared as written, so the tests give the entries themselves.
var sharedClaimsDef = thingDef(`
roles:
- name: part
  podTemplate: spec.parts[*].template
  replicas: item.replicas
sharedClaims: self.spec.?shared.orValue([])
`)

// parts is a Thing's spec.parts: a (2 pods) and b (3 pods), and c (no pods).
const parts = `parts:
- {name: a, replicas: 2, template: {spec: {containers: [{name: main, image: i}]}}}
- {name: b, replicas: 3, template: {spec: {containers: [{name: main, image: i}]}}}
- {name: c, replicas: 0, template: {spec: {containers: [{name: main, image: i}]}}}
`

// twoGPUSpec is a claim spec of 2 gpu.nvidia.com devices.
const twoGPUSpec = "{devices: {requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]}}"

// TestSharedClaims: the claims an operator creates and shares among pods count their GPUs
// once per ResourceClaim, in the total and in every role whose pods use them; what cannot be
// counted says why.
func TestSharedClaims(t *testing.T) {
	tests := map[string]struct {
		shared       string
		noLookup     bool
		wantGPUs     float64
		wantRoles    map[string]float64 // GPUs per role, when set
		wantWarnings []string
	}{
		"a claim described in place, shared by two roles: once in the total, in each role": {
			shared:   "[{name: spec.x, roles: [a, b], claims: 3, spec: " + twoGPUSpec + "}]",
			wantGPUs: 6, wantRoles: map[string]float64{"a": 6, "b": 6, "c": 0},
		},
		"claims default to one": {
			shared:   "[{name: spec.x, roles: [a], spec: " + twoGPUSpec + "}]",
			wantGPUs: 2, wantRoles: map[string]float64{"a": 2, "b": 0, "c": 0},
		},
		"a ResourceClaimTemplate of the workload's namespace": {
			shared:   "[{name: spec.x, roles: [b], claims: 2, resourceClaimTemplateName: two-gpus}]",
			wantGPUs: 4, wantRoles: map[string]float64{"a": 0, "b": 4, "c": 0},
		},
		"a ResourceClaimTemplate of another namespace": {
			shared:   "[{name: spec.x, roles: [a], claims: 2, resourceClaimTemplateName: one-gpu, namespace: shared}]",
			wantGPUs: 2,
		},
		"a ResourceClaimTemplate that is not found": {
			shared:       "[{name: spec.x, roles: [a], resourceClaimTemplateName: missing}]",
			wantWarnings: []string{"spec.x: ResourceClaimTemplate missing not found: its GPUs are not counted"},
		},
		"a ResourceClaimTemplate with no lookup": {
			shared: "[{name: spec.x, roles: [a], resourceClaimTemplateName: two-gpus, namespace: ml}]", noLookup: true,
			wantWarnings: []string{"spec.x: ResourceClaimTemplate ml/two-gpus is not known here: its GPUs are not counted"},
		},
		"allocationMode All cannot be counted": {
			shared:       "[{name: spec.x, roles: [a], spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All}}]}}}]",
			wantWarnings: []string{"spec.x: request g asks for all devices of class gpu.nvidia.com (allocationMode All): that cannot be counted from the spec"},
		},
		"the definition says why claims are not counted": {
			shared:       "[{name: spec.x, roles: [], uncounted: 'its filter names no child', spec: " + twoGPUSpec + "}]",
			wantWarnings: []string{"spec.x: its filter names no child: its GPUs are not counted"},
		},
		"claims no role uses": {
			shared:       "[{name: spec.x, roles: [z], spec: " + twoGPUSpec + "}]",
			wantWarnings: []string{"spec.x: no role of the workload uses these claims (roles: z): their GPUs are not counted"},
		},
		"claims of a role without pods hold no devices": {
			shared: "[{name: spec.x, roles: [c], spec: " + twoGPUSpec + "}]",
		},
		"no claims hold no devices": {
			shared: "[{name: spec.x, roles: [a], claims: 0, spec: " + twoGPUSpec + "}]",
		},
		"a device class that is no GPU says so when nothing counts": {
			shared:       "[{name: spec.x, roles: [a], spec: {devices: {requests: [{name: ch, exactly: {deviceClassName: compute-domain-default-channel.nvidia.com}}]}}}]",
			wantWarnings: []string{"spec.x asks for devices of class compute-domain-default-channel.nvidia.com, none of a GPU device class (gpu.nvidia.com): no GPUs are counted from it"},
		},
		"a device class that is no GPU beside GPUs says nothing": {
			shared:   "[{name: spec.x, roles: [a], spec: {devices: {requests: [{name: ch, exactly: {deviceClassName: compute-domain-default-channel.nvidia.com}}]}}}, {name: spec.y, roles: [a], spec: " + twoGPUSpec + "}]",
			wantGPUs: 2,
		},
		"a name given as a path": {
			shared:       "[{name: [spec.groups, 1, sharing, 0], roles: [a], resourceClaimTemplateName: missing}]",
			wantWarnings: []string{"spec.groups[1].sharing[0]: ResourceClaimTemplate missing not found: its GPUs are not counted"},
		},
		"an entry without a name": {
			shared:       "[{roles: [a], spec: " + twoGPUSpec + "}]",
			wantWarnings: []string{"sharedClaims[0]: name: want {name: string or path list, roles: [string], claims: int, spec: {devices: {requests: [...]}} or resourceClaimTemplateName: string[, namespace: string][, uncounted: string]}, got map[roles:[a] spec:map[devices:map[requests:[map[exactly:map[count:2 deviceClassName:gpu.nvidia.com] name:g]]]]]"},
		},
		"claims that are no whole number": {
			shared:       "[{name: spec.x, roles: [a], claims: 1.5, spec: {}}]",
			wantWarnings: []string{"sharedClaims[0]: claims: want {name: string or path list, roles: [string], claims: int, spec: {devices: {requests: [...]}} or resourceClaimTemplateName: string[, namespace: string][, uncounted: string]}, got map[claims:1.5 name:spec.x roles:[a] spec:map[]]"},
		},
		"neither a spec nor a template": {
			shared:       "[{name: spec.x, roles: [a]}]",
			wantWarnings: []string{"sharedClaims[0]: resourceClaimTemplateName: want {name: string or path list, roles: [string], claims: int, spec: {devices: {requests: [...]}} or resourceClaimTemplateName: string[, namespace: string][, uncounted: string]}, got map[name:spec.x roles:[a]]"},
		},
	}
	claims := definitions.ClaimsIn([]*unstructured.Unstructured{object(t, claimTemplateV1), object(t, `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: shared}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}}
`)}, "ml")
	def := compile(t, sharedClaimsDef)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := object(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ml}\nspec:\n"+indent(parts+"shared: "+tc.shared, "  "))
			opts := definitions.ExpandOptions{Claims: claims}
			if tc.noLookup {
				opts = definitions.ExpandOptions{}
			}
			w, err := def.ExpandWith(obj, nil, opts)
			require.NoError(t, err)
			require.Equal(t, tc.wantWarnings, w.Warnings)
			require.Equal(t, tc.wantGPUs, w.Totals.GPUs)
			if tc.wantRoles != nil {
				got := map[string]float64{}
				for _, r := range w.Roles {
					got[r.Name] = r.GPUs
				}
				if diff := cmp.Diff(tc.wantRoles, got); diff != "" {
					t.Errorf("GPUs per role (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestSharedClaimsUnreadable: an expression that fails on the object is a warning, not 0
// GPUs without a word, and the rest of the workload is still counted.
func TestSharedClaimsUnreadable(t *testing.T) {
	def := compile(t, thingDef(`
roles:
- name: part
  podTemplate: spec.parts[*].template
  replicas: item.replicas
sharedClaims: self.spec.shared
`))
	w, err := def.Expand(object(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ml}\nspec:\n"+indent(parts, "  ")))
	require.NoError(t, err)
	require.Equal(t, int64(5), w.Totals.Pods)
	require.Len(t, w.Warnings, 1)
	require.Contains(t, w.Warnings[0], "sharedClaims: ")
	require.Contains(t, w.Warnings[0], "the GPUs of claims its pods share are not counted")
}

// TestSharedClaimsNotLive: the claims come from the spec, never from live children or pods.
func TestSharedClaimsNotLive(t *testing.T) {
	_, err := definitions.Compile(decodeOne(t, thingDef(`
roles:
- name: part
  podTemplate: spec.parts[*].template
sharedClaims: "pods.map(p, {'name': 'x', 'roles': [], 'spec': {}})"
`)), definitions.CompileOptions{})
	require.ErrorContains(t, err, "spec.sharedClaims: Invalid value")
	require.ErrorContains(t, err, "must not use children or pods")
}

// TestResourceClaimByNameCountsOnce: a ResourceClaim pod templates name (not a template) is one
// object every pod naming it shares: its devices count once in each role that names it and
// once in the workload, not once per pod.
func TestResourceClaimByNameCountsOnce(t *testing.T) {
	claims := definitions.ClaimsIn([]*unstructured.Unstructured{object(t, `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpus, namespace: ml}
spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.nvidia.com, count: 4}}]}}
`), object(t, claimTemplateV1)}, "ml")
	withClaims := func(claims string) string {
		return "{spec: {containers: [{name: main, image: i}], resourceClaims: " + claims + "}}"
	}
	obj := object(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ml}\nspec:\n  parts:\n"+
		"  - {name: a, replicas: 2, template: "+withClaims("[{name: shared, resourceClaimName: shared-gpus}, {name: own, resourceClaimTemplateName: two-gpus}]")+"}\n"+
		"  - {name: b, replicas: 3, template: "+withClaims("[{name: shared, resourceClaimName: shared-gpus}]")+"}\n")
	w, err := compile(t, sharedClaimsDef).ExpandWith(obj, nil, definitions.ExpandOptions{Claims: claims})
	require.NoError(t, err)
	require.Empty(t, w.Warnings)
	// a: the shared claim's 4 + its own template's 2 per pod × 2; b: the shared claim's 4.
	require.Equal(t, []float64{8, 4}, []float64{w.Roles[0].GPUs, w.Roles[1].GPUs})
	// The shared claim once (4) + a's own claims (2 × 2).
	require.Equal(t, 8.0, w.Totals.GPUs)
	require.Equal(t, map[string]float64{"dra:gpu.nvidia.com": 8}, w.Totals.GPUSources)
}
