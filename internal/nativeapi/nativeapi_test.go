package nativeapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/internal/nativeapi"
)

// podGroupDoc is an OpenAPI v3 document of a native version in the shape kube-apiserver
// serves: references through allOf, lists through items.
const podGroupDoc = `{"components": {"schemas": {
  "io.k8s.api.scheduling.v1beta1.PodGroup": {"properties": {
    "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.scheduling.v1beta1.PodGroupSpec"}]},
    "status": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.scheduling.v1beta1.PodGroupStatus"}]}}},
  "io.k8s.api.scheduling.v1beta1.PodGroupSpec": {"properties": {
    "schedulingPolicy": {"properties": {"gang": {"properties": {"minCount": {"type": "integer"}}}}},
    "schedulingConstraints": {"properties": {"topology": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.scheduling.v1beta1.TopologyConstraint"}}}}}},
  "io.k8s.api.scheduling.v1beta1.TopologyConstraint": {"properties": {"key": {"type": "string"}}},
  "io.k8s.api.scheduling.v1beta1.PodGroupStatus": {"properties": {
    "conditions": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Condition"}]}}}},
  "io.k8s.apimachinery.pkg.apis.meta.v1.Condition": {"properties": {"type": {"type": "string"}, "message": {"type": "string"}}}
}}}`

func TestCheckSchema(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want []string
	}{
		"every field workmap uses": {doc: podGroupDoc},
		"minCount renamed upstream": {
			doc:  strings.Replace(podGroupDoc, `"minCount"`, `"minMembers"`, 1),
			want: []string{"scheduling.k8s.io/v1beta1 PodGroup has no field spec.schedulingPolicy.gang.minCount (in spec.schedulingPolicy.gang.minCount): workmap-webhook writes the gang's minMember; workmap reads it"},
		},
		"a list's items without the field": {
			doc:  strings.Replace(podGroupDoc, `{"properties": {"key": {"type": "string"}}}`, `{"properties": {"nodeLabel": {"type": "string"}}}`, 1),
			want: []string{"scheduling.k8s.io/v1beta1 PodGroup has no field spec.schedulingConstraints.topology[].key (in spec.schedulingConstraints.topology[].key): workmap-webhook writes the node label of the gang's required topology level"},
		},
		"a reference to a schema the document lacks": {
			doc: strings.Replace(podGroupDoc, `"io.k8s.api.scheduling.v1beta1.PodGroupStatus": {`, `"io.k8s.api.scheduling.v1beta1.Renamed": {`, 1),
			want: []string{
				"scheduling.k8s.io/v1beta1 PodGroup has no field status (in status.conditions[].type): workmap reads whether the gang was scheduled",
				"scheduling.k8s.io/v1beta1 PodGroup has no field status (in status.conditions[].message): workmap reads why the gang waits",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			found, err := nativeapi.CheckSchema([]byte(tc.doc), "PodGroup", "v1beta1")
			require.NoError(t, err)
			var got []string
			for _, f := range found {
				got = append(got, f.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := nativeapi.CheckSchema([]byte(podGroupDoc), "PodGroup", "v1alpha2")
	require.ErrorContains(t, err, "has no schema io.k8s.api.scheduling.v1alpha2.PodGroup")
}

// TestCheckServed: the API server of each release the tests run, native gangs on, serves
// every native field workmap uses, in the newest version workmap knows of it; with native
// gangs off (as Kubernetes ships) it serves no native PodGroups, and the Pod's field is still
// checked.
func TestCheckServed(t *testing.T) {
	for _, r := range harness.Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) {
			for _, native := range []bool{true, false} {
				c := harness.Start(t, harness.Options{NativeGangs: native, Release: r, NoScheduler: true, Nodes: []harness.Node{}})
				v, served, problems, err := nativeapi.Check(c.Kube.Discovery())
				require.NoError(t, err)
				assert.Empty(t, problems)
				assert.Equal(t, native, served, "native gangs on: %v", native)
				if native {
					assert.Equal(t, r.Native, v)
				}
			}
		})
	}
}
