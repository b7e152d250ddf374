package webview

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// collector exports one series per workload and metric from the current snapshot: nothing is
// read from the cluster at scrape time.
type collector struct {
	snapshot func() *Snapshot

	gpus, extended, expected, ready, phase, state, kind *prometheus.Desc
}

var workloadLabels = []string{"kind", "namespace", "name"}

// podPhases are the phases every workload reports (0 when it has no pod in one), so a query
// over a phase never finds a hole.
var podPhaseNames = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}

func newCollector(snapshot func() *Snapshot) *collector {
	return &collector{
		snapshot: snapshot,
		gpus:     prometheus.NewDesc("workmap_workload_gpus", "GPUs the workload requests, summed over its expected pods.", workloadLabels, nil),
		extended: prometheus.NewDesc("workmap_workload_extended_resource", "Extended resources other than GPUs the workload requests, summed over its expected pods.", append(workloadLabels, "resource"), nil),
		expected: prometheus.NewDesc("workmap_workload_pods_expected", "Pods the workload's definition expects.", workloadLabels, nil),
		ready:    prometheus.NewDesc("workmap_workload_pods_ready", "Pods of the workload that are ready.", workloadLabels, nil),
		phase:    prometheus.NewDesc("workmap_workload_pods", "Pods of the workload found, by phase.", append(workloadLabels, "phase"), nil),
		state:    prometheus.NewDesc("workmap_workload_state", "The workload's state (value 1; the state is a label).", append(workloadLabels, "state"), nil),
		kind:     prometheus.NewDesc("workmap_kind_access", "Whether workmap serve can watch a workload kind (value 1; the access is a label).", []string{"kind", "group", "access"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.gpus, c.extended, c.expected, c.ready, c.phase, c.state, c.kind} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.snapshot()
	kindLabel := kindLabels(snap)
	for _, e := range snap.Entries {
		l := []string{kindLabel[e.Key], e.Key.Namespace, e.Key.Name}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, 1, append(l, e.State())...)
		w := e.Workload
		if w == nil {
			continue
		}
		ready, expected := e.Pods()
		ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, w.Totals.GPUs, l...)
		ch <- prometheus.MustNewConstMetric(c.expected, prometheus.GaugeValue, float64(expected), l...)
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(ready), l...)
		for _, r := range e.Extended {
			ch <- prometheus.MustNewConstMetric(c.extended, prometheus.GaugeValue, r.Value, append(l, r.Name)...)
		}
		for _, p := range podPhaseNames {
			n := 0
			if w.Live != nil {
				n = w.Live.Phases[string(p)]
			}
			ch <- prometheus.MustNewConstMetric(c.phase, prometheus.GaugeValue, float64(n), append(l, string(p))...)
		}
	}
	for _, k := range snap.Kinds {
		ch <- prometheus.MustNewConstMetric(c.kind, prometheus.GaugeValue, 1, k.Kind, k.Group, string(k.Access))
	}
}

// kindLabels gives each workload its kind label: the kind's name, or kind.group when two
// definitions share a name (so their series stay distinct).
func kindLabels(snap *Snapshot) map[Key]string {
	groups := map[string]map[string]bool{}
	for _, e := range snap.Entries {
		if groups[e.Key.Kind] == nil {
			groups[e.Key.Kind] = map[string]bool{}
		}
		groups[e.Key.Kind][e.Key.Group] = true
	}
	out := make(map[Key]string, len(snap.Entries))
	for _, e := range snap.Entries {
		out[e.Key] = e.Key.Kind
		if len(groups[e.Key.Kind]) > 1 {
			out[e.Key] = e.Key.Kind + "." + e.Key.Group
		}
	}
	return out
}
