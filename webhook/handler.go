package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/grouper"
)

// DefaultTimeout bounds one admission decision: well under the API server's webhook timeout,
// so a slow decision admits the pod as it came rather than failing its creation.
const DefaultTimeout = 2 * time.Second

// maxReviewBytes bounds a request body (an AdmissionReview of one object, or two on an update).
const maxReviewBytes = 3 << 20

// Handler serves AdmissionReviews (admission.k8s.io/v1) of pod CREATE. It always allows the
// pod; what it decides is a JSON patch, and what it could not decide a warning.
type Handler struct {
	Mutator *Mutator
	// Timeout bounds each decision (DefaultTimeout when zero).
	Timeout time.Duration
	Metrics *Metrics
}

// Metrics are the webhook's Prometheus metrics.
type Metrics struct {
	// Duration is how long admission decisions took, by outcome.
	Duration *prometheus.HistogramVec
	// GroupingErrors counts the pods admitted without the gang their workload would give them,
	// or with the gang of the last owner found, by reason (see grouper.ProblemReason).
	GroupingErrors *prometheus.CounterVec
}

// NewMetrics registers the webhook's metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "workmap_webhook_admission_duration_seconds",
		Help:    "How long workmap-webhook took to decide a pod's gang at admission, by outcome (native, labelled, no-gang, skipped, unserved, error: the pod was admitted as it came).",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
	}, []string{"outcome"}),
		GroupingErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "workmap_webhook_grouping_errors_total",
			Help: "Pods admitted without the gang their workload would give them (or grouped by the last owner found), by reason (owner_not_found, ownership_cycle, ...).",
		}, []string{"reason"}),
	}
	// Every outcome and reason is exported from the start, at zero until it happens: an alert
	// on errors tells "none yet" from "not exported".
	for _, o := range Outcomes {
		m.Duration.WithLabelValues(string(o))
	}
	for _, reason := range grouper.ProblemReasons {
		m.GroupingErrors.WithLabelValues(reason)
	}
	if reg != nil {
		reg.MustRegister(m.Duration, m.GroupingErrors)
	}
	return m
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, h.review)
}

// serveReview reads one AdmissionReview (admission.k8s.io/v1) from r, and answers it with
// what decide says.
func serveReview(w http.ResponseWriter, r *http.Request, decide func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	review.Response = decide(r.Context(), review.Request)
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// review decides one admission request.
func (h *Handler) review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create || req.SubResource != "" {
		return resp
	}
	start := time.Now()
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		h.observe(OutcomeError, start)
		resp.Warnings = []string{"workmap-webhook: could not read the pod: " + err.Error()}
		return resp
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	timeout := h.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := h.Mutator.Mutate(ctx, &pod, ptr.Deref(req.DryRun, false))
	h.observe(m.Outcome, start)
	h.countProblem(err, m.Problem)
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "pod admitted without a gang", "pod", klog.KRef(pod.Namespace, name))
		resp.Warnings = []string{fmt.Sprintf("workmap-webhook: pod admitted without a gang: %v", err)}
		return resp
	}
	klog.FromContext(ctx).V(4).Info("pod admitted", "pod", klog.KRef(pod.Namespace, name), "outcome", m.Outcome, "detail", m.Detail)
	if len(m.Patch) > 0 {
		patch, err := json.Marshal(m.Patch)
		if err != nil {
			resp.Warnings = []string{"workmap-webhook: " + err.Error()}
			return resp
		}
		jsonPatch := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &jsonPatch
	}
	return resp
}

// countProblem counts why a pod was not grouped as its workload would be: the decision's error,
// else its problem.
func (h *Handler) countProblem(err, problem error) {
	if err == nil {
		err = problem
	}
	if reason := grouper.ProblemReason(err); reason != "" && h.Metrics != nil && h.Metrics.GroupingErrors != nil {
		h.Metrics.GroupingErrors.WithLabelValues(reason).Inc()
	}
}

func (h *Handler) observe(o Outcome, start time.Time) {
	if h.Metrics != nil {
		h.Metrics.Duration.WithLabelValues(string(o)).Observe(time.Since(start).Seconds())
	}
}
