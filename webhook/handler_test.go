package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/grouper"
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
			require.Equal(t, uint64(1), admissions(t, metrics, webhook.OutcomeNative))
		})
	}
}

// admissions is how many admissions of an outcome the metrics counted.
func admissions(t *testing.T, m *webhook.Metrics, o webhook.Outcome) uint64 {
	t.Helper()
	var out dto.Metric
	h, err := m.Duration.GetMetricWithLabelValues(string(o))
	require.NoError(t, err)
	require.NoError(t, h.(prometheus.Histogram).Write(&out))
	return out.GetHistogram().GetSampleCount()
}

// TestHandlerMetrics: every outcome is exported from the start, at zero, so that an alert on
// pods admitted without a gang (outcome error) has a series before the first one; a pod the
// webhook cannot read counts as one.
func TestHandlerMetrics(t *testing.T) {
	m, _ := newMutator(t)
	reg := prometheus.NewPedanticRegistry()
	metrics := webhook.NewMetrics(reg)
	require.Equal(t, len(webhook.Outcomes), testutil.CollectAndCount(metrics.Duration), "a series per outcome")
	for _, o := range webhook.Outcomes {
		require.Zero(t, admissions(t, metrics, o), "outcome %s", o)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Operation: admissionv1.Create, Namespace: "ml", Object: runtime.RawExtension{Raw: []byte(`{"spec": 1}`)}},
	})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	(&webhook.Handler{Mutator: m, Metrics: metrics}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate-pods", bytes.NewReader(body)))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, uint64(1), admissions(t, metrics, webhook.OutcomeError))
}

// problemOwners resolves every pod to itself, with a problem.
type problemOwners struct{ problem error }

func (p problemOwners) TopOwner(_ context.Context, obj metav1.Object, apiVersion, kind string) (grouper.Owner, error) {
	return grouper.Owner{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}, p.problem
}

// TestHandlerCountsGroupingErrors: a pod admitted without the gang its workload would give it
// is counted by why; a pod grouped as it should be is not.
func TestHandlerCountsGroupingErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		problem error
		want    string
	}{
		"grouped":            {},
		"an owner not found": {fmt.Errorf("%w: job train", grouper.ErrOwnerNotFound), grouper.ProblemOwnerNotFound},
		"an ownership cycle": {fmt.Errorf("%w: job a", grouper.ErrOwnerCycle), grouper.ProblemOwnerCycle},
		"a kind not served":  {&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Nonexistent"}}, grouper.ProblemOwnerKindUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			m, _ := newMutator(t)
			if tc.problem != nil {
				m.Hub.Owners = problemOwners{tc.problem}
			}
			metrics := webhook.NewMetrics(prometheus.NewPedanticRegistry())
			require.Equal(t, len(grouper.ProblemReasons), testutil.CollectAndCount(metrics.GroupingErrors), "a series per reason from the start")
			podRaw, err := json.Marshal(jobPod("train", "", nil))
			require.NoError(t, err)
			body, err := json.Marshal(admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
					Operation: admissionv1.Create, Namespace: "ml", Object: runtime.RawExtension{Raw: podRaw}},
			})
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			(&webhook.Handler{Mutator: m, Metrics: metrics}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate-pods", bytes.NewReader(body)))
			require.Equal(t, http.StatusOK, rec.Code)
			for _, reason := range grouper.ProblemReasons {
				want := 0.0
				if reason == tc.want {
					want = 1
				}
				require.Equal(t, want, testutil.ToFloat64(metrics.GroupingErrors.WithLabelValues(reason)), reason)
			}
		})
	}
}
