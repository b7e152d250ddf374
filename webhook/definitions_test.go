package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/webhook"
)

// widgetDefinition makes all the pods of a Widget one gang.
const widgetDefinition = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: widgets.example.com}
spec:
  workload: {group: example.com, kind: Widget, versions: [v1]}
  roles:
  - name: worker
    podTemplate: spec.template
    replicas: "self.spec.replicas"
  gang:
    groups: [{name: all, members: [worker]}]
`

// A CEL typo (an unknown function) in the replicas of the only role.
var typoDefinition = bytes.Replace([]byte(widgetDefinition), []byte(`"self.spec.replicas"`), []byte(`"sise(self.spec.replicas)"`), 1)

func TestDefinitionValidator(t *testing.T) {
	raw := func(y []byte) []byte {
		j, err := yaml.YAMLToJSON(y)
		require.NoError(t, err)
		return j
	}
	withLabel := bytes.Replace(typoDefinition, []byte("metadata: {name: widgets.example.com}"), []byte("metadata: {name: widgets.example.com, labels: {team: ml}}"), 1)
	tests := map[string]struct {
		op          admissionv1.Operation
		kind        metav1.GroupVersionKind
		object, old []byte
		// wantDenied is the field path the refusal names ("": allowed).
		wantDenied string
	}{
		"a valid definition created":        {op: admissionv1.Create, object: raw([]byte(widgetDefinition))},
		"a definition with a CEL typo":      {op: admissionv1.Create, object: raw(typoDefinition), wantDenied: "spec.roles[0].replicas"},
		"a valid definition made invalid":   {op: admissionv1.Update, object: raw(typoDefinition), old: raw([]byte(widgetDefinition)), wantDenied: "spec.roles[0].replicas"},
		"an invalid definition's label set": {op: admissionv1.Update, object: raw(withLabel), old: raw(typoDefinition)},
		"an invalid definition deleted":     {op: admissionv1.Delete, old: raw(typoDefinition)},
		"another kind":                      {op: admissionv1.Create, kind: metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, object: raw(typoDefinition)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kind := tc.kind
			if kind.Kind == "" {
				kind = metav1.GroupVersionKind{Group: "workmap.dev", Version: "v1alpha1", Kind: "WorkloadDefinition"}
			}
			body, err := json.Marshal(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{UID: "req-1", Kind: kind, Operation: tc.op, Name: "widgets.example.com",
					Object: runtime.RawExtension{Raw: tc.object}, OldObject: runtime.RawExtension{Raw: tc.old}},
			})
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			webhook.DefinitionValidator{}.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate-workloaddefinitions", bytes.NewReader(body)))
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var out admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			require.NotNil(t, out.Response)
			assert.Equal(t, "req-1", string(out.Response.UID))
			if tc.wantDenied == "" {
				assert.True(t, out.Response.Allowed, "%+v", out.Response.Result)
				return
			}
			require.False(t, out.Response.Allowed)
			require.NotNil(t, out.Response.Result)
			assert.Equal(t, metav1.StatusReasonInvalid, out.Response.Result.Reason)
			assert.EqualValues(t, http.StatusUnprocessableEntity, out.Response.Result.Code)
			assert.Contains(t, out.Response.Result.Message, `WorkloadDefinition.workmap.dev "widgets.example.com" is invalid: `+tc.wantDenied+":")
			require.NotNil(t, out.Response.Result.Details)
			require.NotEmpty(t, out.Response.Result.Details.Causes)
			assert.Equal(t, tc.wantDenied, out.Response.Result.Details.Causes[0].Field)
		})
	}
}
