package grouper

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the grouper's Prometheus metrics. Register them with the registry of the process
// that runs the grouper (no global registration).
type Metrics struct {
	// GroupingLatency is the time from a pod's creation to its grouping decision.
	GroupingLatency prometheus.Histogram
	// Decisions counts grouping decisions by source (skip, existing, native, definition, none).
	Decisions *prometheus.CounterVec
	// Errors counts failed decisions and writes by stage.
	Errors *prometheus.CounterVec
	// Writes counts the API writes made by kind: a standby makes none.
	Writes *prometheus.CounterVec
	// GroupingErrors counts the pods not grouped as their workload would be, by reason (see
	// ProblemReason): each also gets a Warning event saying why.
	GroupingErrors *prometheus.CounterVec
	// WatchErrors counts the failed lists and watches of the grouper's caches.
	WatchErrors *WatchErrors
}

// NewMetrics creates the metrics and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		GroupingLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "workmap", Subsystem: "grouper", Name: "pod_grouping_latency_seconds",
			Help:    "Time from pod creation to the pod's grouping decision.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "workmap", Subsystem: "grouper", Name: "decisions_total",
			Help: "Grouping decisions by source.",
		}, []string{"source"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "workmap", Subsystem: "grouper", Name: "errors_total",
			Help: "Failed decisions and writes by stage (decide, podgroup, status, label).",
		}, []string{"stage"}),
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "workmap", Subsystem: "grouper", Name: "writes_total",
			Help: "API writes by kind (podgroup, status, label, event, domain). Only the leader writes.",
		}, []string{"kind"}),
		GroupingErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "workmap", Subsystem: "grouper", Name: "grouping_errors_total",
			Help: "Pods not grouped as their workload would be, by reason (owner_not_found, ownership_cycle, definition_invalid, ...); each gets a Warning event.",
		}, []string{"reason"}),
		WatchErrors: NewWatchErrors(reg),
	}
	// Every kind and stage is exported from the start, at zero until it happens: a reader
	// tells "none yet" from "not exported".
	for _, kind := range []string{"podgroup", "status", "label", "event", "domain"} {
		m.Writes.WithLabelValues(kind)
	}
	for _, stage := range []string{"decide", string(writePodGroup), string(writeStatus), string(writeLabel)} {
		m.Errors.WithLabelValues(stage)
	}
	for _, reason := range ProblemReasons {
		m.GroupingErrors.WithLabelValues(reason)
	}
	if reg != nil {
		reg.MustRegister(m.GroupingLatency, m.Decisions, m.Errors, m.Writes, m.GroupingErrors)
	}
	return m
}
