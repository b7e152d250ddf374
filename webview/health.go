package webview

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/grouper"
)

// health is whether workmap serve reaches its cluster, and since when, and the lists and
// watches that failed, as metrics: something an alert can be written on, also while the
// cluster cannot be reached and no workload is known.
type health struct {
	mu        sync.Mutex
	reached   bool
	reachable prometheus.Gauge
	since     prometheus.Gauge
	// watchErrors counts failed lists and watches by resource and reason, as workmap-scheduler
	// and workmap-webhook count theirs.
	watchErrors *grouper.WatchErrors
}

// newHealth starts as not reached (nothing was read yet) since now.
func newHealth(now time.Time) *health {
	h := &health{
		reachable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "workmap_cluster_reachable",
			Help: "Whether workmap serve reaches the cluster's API server (1) or not (0: not yet, or not any more).",
		}),
		since: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "workmap_cluster_reachable_changed_timestamp_seconds",
			Help: "When workmap_cluster_reachable took its value (Unix time; the start of the process until the cluster is first reached).",
		}),
		watchErrors: grouper.NewWatchErrors(nil),
	}
	h.since.Set(float64(now.UnixNano()) / 1e9)
	return h
}

// collectors are the metrics to register.
func (h *health) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.reachable, h.since, h.watchErrors.Counter()}
}

// set records whether the cluster was reached, at now; the time changes only with the value.
func (h *health) set(reached bool, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reached == reached {
		return
	}
	h.reached = reached
	if reached {
		h.reachable.Set(1)
	} else {
		h.reachable.Set(0)
	}
	h.since.Set(float64(now.UnixNano()) / 1e9)
}

// watchFailed counts a failed list or watch of a resource.
func (h *health) watchFailed(gvr schema.GroupVersionResource, err error) {
	h.watchErrors.Count(gvr.GroupResource(), err)
}
