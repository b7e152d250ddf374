package plugin

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// preemptions are the gangs' preemptions that hold room for them: from the choice of victims
// until the gang is admitted, and, once its victims are gone, until the gang is tried again.
// Meanwhile the gang preempts no more (its room is on its way) and its pods stay nominated to
// the nodes planned for them, so that no pod of its priority or lower takes the room.
type preemptions struct {
	mu       sync.Mutex
	inFlight map[string]*heldRoom
}

// heldRoom is a gang's preemption and, once its victims were all seen gone, the gang's count
// of failures then: a failure after that is the gang's next attempt.
type heldRoom struct {
	preemption *preemption
	gone       bool
	failures   int
}

// preemptionStanding is how a gang's preemption stands for one of its pods.
type preemptionStanding struct {
	// victims are the victims still on their nodes.
	victims int
	// node is the node planned for the pod ("" for none).
	node string
	// holds says that the preemption still holds the gang's room.
	holds bool
}

// forget drops the preemption of a gang that was admitted.
func (p *preemptions) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inFlight, key)
}

// record keeps a gang's preemption until the gang is admitted or, its victims gone, is tried
// again; the preemptions of gangs that are gone (exists says) are dropped.
func (p *preemptions) record(key string, pre *preemption, exists func(string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight == nil {
		p.inFlight = map[string]*heldRoom{}
	}
	for k := range p.inFlight {
		if !exists(k) {
			delete(p.inFlight, k)
		}
	}
	p.inFlight[key] = &heldRoom{preemption: pre}
}

// standing says how a gang's preemption stands for one of its pods, from the snapshot and the
// gang's state. While a victim is on its node, the preemption holds. Once all are gone, it
// holds until the gang is tried again: while the backoff that was running then still runs
// (its pods' attempts meanwhile stop at it); a new failure, or an attempt outside that
// backoff, is the gang's own, and the preemption is forgotten.
func (p *preemptions) standing(group grouper.GroupView, uid types.UID, now time.Time, lister fwk.SharedLister) preemptionStanding {
	p.mu.Lock()
	defer p.mu.Unlock()
	held := p.inFlight[group.Key]
	if held == nil {
		return preemptionStanding{}
	}
	n := 0
	for _, u := range held.preemption.victims {
		for _, e := range u.pods {
			if stillOn(lister, e) {
				n++
			}
		}
	}
	if n == 0 && !held.gone {
		held.gone, held.failures = true, group.Failures
	}
	if n == 0 && (group.Failures != held.failures || !now.Before(group.BackoffUntil)) {
		delete(p.inFlight, group.Key)
		return preemptionStanding{}
	}
	return preemptionStanding{victims: n, node: held.preemption.plan[uid], holds: true}
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
