package plugin

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
)

// preemptions are the preemptions of gangs whose victims may still hold nodes: until they are
// gone, the gang preempts no more (their room is on its way).
type preemptions struct {
	mu       sync.Mutex
	inFlight map[string]*preemption
}

// forget drops the preemption of a gang that was admitted.
func (p *preemptions) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inFlight, key)
}

// record keeps a gang's preemption until its victims are gone; the preemptions of gangs that
// are gone (exists says) are dropped.
func (p *preemptions) record(key string, pre *preemption, exists func(string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight == nil {
		p.inFlight = map[string]*preemption{}
	}
	for k := range p.inFlight {
		if !exists(k) {
			delete(p.inFlight, k)
		}
	}
	p.inFlight[key] = pre
}

// waitingFor counts a gang's victims still on their nodes in the snapshot, forgetting its
// preemption once none is, and says the node planned for a pod of the gang ("" for none).
func (p *preemptions) waitingFor(key string, uid types.UID, lister fwk.SharedLister) (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pre := p.inFlight[key]
	if pre == nil {
		return 0, ""
	}
	n := 0
	for _, u := range pre.victims {
		for _, e := range u.pods {
			if stillOn(lister, e) {
				n++
			}
		}
	}
	if n == 0 {
		delete(p.inFlight, key)
	}
	return n, pre.plan[uid]
}

// stillOn says whether a victim is still on its node in the snapshot (a victim does not move:
// a pod made again in its place is another pod).
func stillOn(lister fwk.SharedLister, e evictee) bool {
	node, err := lister.NodeInfos().Get(e.node.Node().Name)
	if err != nil {
		return false
	}
	victim := e.pod.GetPod().UID
	for _, info := range node.GetPods() {
		if info.GetPod().UID == victim {
			return true
		}
	}
	return false
}

// The results of a gang's look for victims (workmap_preemptions_total's result label).
const (
	// preemptionPreempted: victims were taken.
	preemptionPreempted = "preempted"
	// preemptionWouldNotFit: the gang would not fit even with every lower-priority pod gone,
	// so none was taken.
	preemptionWouldNotFit = "would_not_fit"
	// preemptionNoVictims: no pod of lower priority holds a node.
	preemptionNoVictims = "no_victims"
)

// preemptionMetrics are the metrics of gangs' preemptions.
type preemptionMetrics struct {
	// Preemptions counts a gang's looks for victims by result.
	Preemptions *prometheus.CounterVec
	// VictimPods is the number of pods each preemption took.
	VictimPods prometheus.Histogram
	// EvaluationSeconds is how long each look for victims took, up to the choice (the
	// victims' deletion left out), as kube-scheduler's own
	// scheduler_preemption_evaluation_duration_seconds measures its workload-aware
	// preemption, with the same buckets.
	EvaluationSeconds prometheus.Histogram
}

// newPreemptionMetrics creates the metrics and registers them with reg (when not nil).
func newPreemptionMetrics(reg prometheus.Registerer) *preemptionMetrics {
	m := &preemptionMetrics{
		Preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "workmap", Name: "preemptions_total",
			Help: "A gang's looks for lower-priority victims that would let it fit whole, by result (preempted, would_not_fit, no_victims).",
		}, []string{"result"}),
		VictimPods: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "workmap", Name: "preemption_victim_pods",
			Help:    "Pods taken by each preemption of a gang (whole victim gangs and pods in no gang).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		EvaluationSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "workmap", Name: "preemption_evaluation_duration_seconds",
			Help:    "How long a gang's look for lower-priority victims took, up to their choice (their deletion left out).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
	for _, result := range []string{preemptionPreempted, preemptionWouldNotFit, preemptionNoVictims} {
		m.Preemptions.WithLabelValues(result)
	}
	if reg != nil {
		reg.MustRegister(m.Preemptions, m.VictimPods, m.EvaluationSeconds)
	}
	return m
}
