package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workmap/workmap/webhook"
)

func TestHandler(t *testing.T) {
	podRaw, err := json.Marshal(jobPod("train", "", nil))
	require.NoError(t, err)
	review := func(op admissionv1.Operation, kind string) []byte {
		b, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: kind},
				Operation: op, Namespace: "ml", Object: runtime.RawExtension{Raw: podRaw}},
		})
		require.NoError(t, err)
		return b
	}
	tests := map[string]struct {
		body       []byte
		wantStatus int
		wantPatch  bool
	}{
		"a pod created: patched":  {body: review(admissionv1.Create, "Pod"), wantStatus: http.StatusOK, wantPatch: true},
		"a pod updated: as it is": {body: review(admissionv1.Update, "Pod"), wantStatus: http.StatusOK},
		"not a pod: as it is":     {body: review(admissionv1.Create, "Service"), wantStatus: http.StatusOK},
		"not a review":            {body: []byte(`{"kind":"Pod"}`), wantStatus: http.StatusBadRequest},
		"not JSON":                {body: []byte(`nope`), wantStatus: http.StatusBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, _ := newMutator(t)
			metrics := webhook.NewMetrics(prometheus.NewRegistry())
			h := &webhook.Handler{Mutator: m, Metrics: metrics}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate-pods", bytes.NewReader(tc.body)))
			require.Equal(t, tc.wantStatus, rec.Code, rec.Body.String())
			if tc.wantStatus != http.StatusOK {
				return
			}
			var out admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			require.NotNil(t, out.Response)
			require.Equal(t, "req-1", string(out.Response.UID))
			require.True(t, out.Response.Allowed, "the webhook never refuses a pod")
			if !tc.wantPatch {
				require.Empty(t, out.Response.Patch)
				return
			}
			require.Equal(t, admissionv1.PatchTypeJSONPatch, *out.Response.PatchType)
			require.JSONEq(t, `[{"op":"add","path":"/spec/schedulingGroup","value":{"podGroupName":"train-job"}}]`, string(out.Response.Patch))
			require.Equal(t, 1, testutil.CollectAndCount(metrics.Duration))
		})
	}
}
