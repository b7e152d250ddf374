//go:build soak

package soak

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/e2e/harness"
)

var podGroups = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// gangState is what the monitor follows of one gang.
type gangState struct {
	w   *workload
	key string
	min int
	// whole: every member was bound at once at some point (after that, members that fail and
	// are made again are not a partial gang).
	whole        bool
	partialSince time.Time
	// fitsSince is when the gang started to fit without a break while not bound.
	fitsSince time.Time
	// dipped: a member of the whole gang went away; recovered counts it coming back.
	dipped bool
	// partialReported and fitReported: the violation is counted once per gang.
	partialReported, fitReported bool
}

// monitor observes the cluster every tick and keeps each invariant's worst value.
type monitor struct {
	c     *harness.Cluster
	d     *driver
	gangs map[string]*gangState

	ticks, failedTicks int
	// worst values.
	partialWorst   time.Duration
	partialGangs   int // gangs seen partly bound longer than partialGrace
	fitWorst       time.Duration
	fitWorstGang   string
	fitViolations  int
	gcWorst        time.Duration
	gcViolations   int
	gcReported     map[string]bool
	bindTimes      []time.Duration // creation to whole, every gang
	waitedLong     int             // gangs that waited over 30 s to be whole (too big for a while)
	recovered      int             // gangs whole again after a member failed or lost its node
	pendingFitting int             // pods pending while their gang fits, at the last tick
	violations     []string

	// evicted counts, by gang, the bound members the node churn deleted. A gang bound whole
	// that loses members to a deleted node before the next tick looks partly bound to that
	// tick; with these it is known to have been whole.
	evictedMu sync.Mutex
	evicted   map[string]int
}

func newMonitor(c *harness.Cluster, d *driver) *monitor {
	return &monitor{c: c, d: d, gangs: map[string]*gangState{}, gcReported: map[string]bool{}, evicted: map[string]int{}}
}

// evictedBound records that a fault deleted a bound member of a gang.
func (m *monitor) evictedBound(p *corev1.Pod) {
	for _, w := range m.d.all() {
		if w.name == p.Labels[workloadLabel] {
			m.evictedMu.Lock()
			m.evicted[gangID(w, gangKey(w, p))]++
			m.evictedMu.Unlock()
			return
		}
	}
}

// evictedOf is how many bound members of gang id a fault deleted.
func (m *monitor) evictedOf(id string) int {
	m.evictedMu.Lock()
	defer m.evictedMu.Unlock()
	return m.evicted[id]
}

func (m *monitor) violate(format string, args ...any) {
	if len(m.violations) < 50 {
		m.violations = append(m.violations, time.Now().Format(time.TimeOnly)+" "+fmt.Sprintf(format, args...))
	}
}

// run ticks every 2 s until ctx ends.
func (m *monitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := m.tick(ctx); err != nil {
			m.failedTicks++ // kube-apiserver restarting
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// tick reads pods, nodes and PodGroups once and updates every invariant.
func (m *monitor) tick(ctx context.Context) error {
	pods, err := m.c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes, err := m.c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pgs, err := m.c.Dynamic.Resource(podGroups).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	m.ticks++
	now := time.Now()

	// Room, in nodes: every pod takes a whole node.
	busy := map[string]bool{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			busy[p.Spec.NodeName] = true
		}
	}
	free := 0
	for _, n := range nodes.Items {
		if !busy[n.Name] && n.DeletionTimestamp == nil {
			free++
		}
	}

	byName := map[string]*workload{}
	for _, w := range m.d.all() {
		byName[w.name] = w
	}
	type members struct{ bound, pending int }
	count := map[string]*members{}
	for i := range pods.Items {
		p := &pods.Items[i]
		w := byName[p.Labels[workloadLabel]]
		if w == nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		id := gangID(w, gangKey(w, p))
		if count[id] == nil {
			count[id] = &members{}
		}
		if p.Spec.NodeName != "" {
			count[id].bound++
		} else if len(p.Spec.SchedulingGates) == 0 {
			count[id].pending++
		}
	}

	// Gangs in the order their workloads were created: the first that fit take the room.
	var order []*gangState
	for _, w := range m.d.all() {
		keys := make([]string, 0, len(w.gangs))
		for k := range w.gangs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			id := gangID(w, k)
			g := m.gangs[id]
			if g == nil {
				g = &gangState{w: w, key: k, min: w.gangs[k]}
				m.gangs[id] = g
			}
			order = append(order, g)
		}
	}
	room := free
	pendingFitting := 0
	allWhole := map[*workload]bool{}
	for _, g := range order {
		m.d.mu.Lock()
		deleted, victim := !g.w.deleted.IsZero(), g.w.victim
		m.d.mu.Unlock()
		if deleted {
			continue
		}
		id := gangID(g.w, g.key)
		n := count[id]
		if n == nil {
			n = &members{}
		}
		if _, seen := allWhole[g.w]; !seen {
			allWhole[g.w] = true
		}
		// Partly bound before it was ever whole.
		if !g.whole {
			if n.bound+m.evictedOf(id) >= g.min {
				g.whole = true
				g.partialSince, g.fitsSince = time.Time{}, time.Time{}
				m.bindTimes = append(m.bindTimes, now.Sub(g.w.created))
				if now.Sub(g.w.created) > 30*time.Second {
					m.waitedLong++
				}
			} else if n.bound > 0 {
				if g.partialSince.IsZero() {
					g.partialSince = now
				}
				d := now.Sub(g.partialSince)
				if d > m.partialWorst {
					m.partialWorst = d
				}
				if d > partialGrace && !g.partialReported {
					g.partialReported = true
					m.partialGangs++
					m.violate("gang %s: %d of %d bound for %s", id, n.bound, g.min, d.Round(time.Second))
				}
			} else {
				g.partialSince = time.Time{}
			}
		} else if n.bound < g.min {
			g.dipped = true
		} else if g.dipped {
			g.dipped = false
			m.recovered++
		}
		if !g.whole {
			allWhole[g.w] = false
		}
		// Time waited while it fits: the members still to bind (a gang not yet whole needs
		// room for all its missing members; a whole one, for its pending replacements).
		need := n.pending
		if !g.whole {
			need = g.min - n.bound
		}
		if victim || need == 0 {
			g.fitsSince = time.Time{}
			continue
		}
		if need > room {
			g.fitsSince = time.Time{}
			continue
		}
		room -= need
		pendingFitting += n.pending
		if g.fitsSince.IsZero() {
			g.fitsSince = now
		}
		d := now.Sub(g.fitsSince)
		if d > m.fitWorst {
			m.fitWorst, m.fitWorstGang = d, id
		}
		if d > fitBound && !g.fitReported {
			g.fitReported = true
			m.fitViolations++
			m.violate("gang %s fits (%d free nodes) but is not bound after %s", id, need+room, d.Round(time.Second))
		}
	}
	m.pendingFitting = pendingFitting
	m.d.mu.Lock()
	for w, whole := range allWhole {
		if whole && w.wholeAt.IsZero() {
			w.wholeAt = now
		}
	}
	m.d.mu.Unlock()

	// PodGroups of deleted workloads.
	deletedAt := map[types.UID]time.Time{}
	m.d.mu.Lock()
	for _, w := range m.d.workloads {
		if !w.deleted.IsZero() {
			deletedAt[w.uid] = w.deleted
		}
	}
	m.d.mu.Unlock()
	for _, pg := range pgs.Items {
		for _, ref := range pg.GetOwnerReferences() {
			at, gone := deletedAt[ref.UID]
			if !gone {
				continue
			}
			d := now.Sub(at)
			if d > m.gcWorst {
				m.gcWorst = d
			}
			if d > gcGrace && !m.gcReported[pg.GetName()] {
				m.gcReported[pg.GetName()] = true
				m.gcViolations++
				m.violate("PodGroup %s outlives its %s by %s", pg.GetName(), ref.Kind, d.Round(time.Second))
			}
		}
	}
	return nil
}
