package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/webhook"
)

// TestNativePodGroupTopology: a gang's required topology level becomes its native PodGroup's
// topology constraint, as a node label.
func TestNativePodGroupTopology(t *testing.T) {
	levels := map[string]string{"rack": "example.com/rack"}
	tests := map[string]struct {
		required  string
		wantKey   string // "" for no constraint
		wantError string
	}{
		"no topology: no constraint":                     {},
		"a level by name: its node label":                {required: "rack", wantKey: "example.com/rack"},
		"a node label: as it is":                         {required: "topology.kubernetes.io/zone", wantKey: "topology.kubernetes.io/zone"},
		"an unknown level name: an error, no constraint": {required: "row", wantError: `topology level "row" is not one of --topology-levels nor a node label`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 3}}
			if tc.required != "" {
				pg.Annotations = map[string]string{grouper.TopologyRequiredAnnotation: tc.required}
			}
			out, err := webhook.NativePodGroup(schema.GroupVersion{Group: webhook.NativeGroup, Version: "v1alpha2"}, pg, levels)
			if tc.wantError != "" {
				require.ErrorContains(t, err, tc.wantError)
			} else {
				require.NoError(t, err)
			}
			minCount, _, _ := unstructured.NestedInt64(out.Object, "spec", "schedulingPolicy", "gang", "minCount")
			require.EqualValues(t, 3, minCount)
			topology, found, _ := unstructured.NestedSlice(out.Object, "spec", "schedulingConstraints", "topology")
			if tc.wantKey == "" {
				require.False(t, found)
				return
			}
			require.Equal(t, []any{map[string]any{"key": tc.wantKey}}, topology)
			require.Equal(t, tc.required, out.GetAnnotations()[grouper.TopologyRequiredAnnotation], "the annotation says what the gang asked for")
		})
	}
}

func TestParseLevels(t *testing.T) {
	levels, err := webhook.ParseLevels("block=example.com/block, rack=example.com/rack")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"block": "example.com/block", "rack": "example.com/rack"}, levels)
	_, err = webhook.ParseLevels("rack")
	require.ErrorContains(t, err, `topology level "rack": want name=node-label`)
}
