//go:build soak

package soak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/workmap/workmap/e2e/harness"
)

// replicas are the two workmap-scheduler replicas, started again whenever one exits (as a
// Deployment would), and the memory and goroutine samples of every process.
type replicas struct {
	c    *harness.Cluster
	opts harness.SchedulerOptions

	mu    sync.Mutex
	procs [2]*life
	lives []*life
	// unplanned counts the exits nobody asked for (a leader that lost its lease while
	// kube-apiserver restarted exits, as kube-scheduler does).
	unplanned int
}

// life is one process: a scheduler replica's or the webhook's.
type life struct {
	name    string
	s       *harness.WorkmapScheduler // nil for the webhook
	started time.Time
	// planned: it was stopped on purpose.
	planned bool
	samples []sample
	// read reads the process's metrics and profiles.
	read profiled
	// warmSavedFor is when the role began whose warm-up its profiles were saved at the end
	// of (zero: none saved yet).
	warmSavedFor time.Time
	// unmeasurable: a metric the samples need is missing from its /metrics.
	unmeasurable error
}

// profiled is a process whose metrics and profiles can be read: a scheduler replica or the
// webhook.
type profiled interface {
	// Metrics reads /metrics, by family name.
	Metrics(context.Context) (map[string]*dto.MetricFamily, error)
	// HeapProfile reads the heap profile after a garbage collection.
	HeapProfile(context.Context) ([]byte, error)
	// Goroutines reads the goroutines, grouped by stack, as text.
	Goroutines(context.Context) ([]byte, error)
	// ResidentMemory reads what Linux counts in the process's resident memory.
	ResidentMemory() (harness.ResidentMemory, error)
}

func newReplicas(c *harness.Cluster, opts harness.SchedulerOptions) *replicas {
	r := &replicas{c: c, opts: opts}
	for i := range r.procs {
		r.start(i)
	}
	return r
}

func (r *replicas) start(i int) {
	s := r.c.StartWorkmapScheduler(r.opts)
	l := &life{name: fmt.Sprintf("workmap-scheduler #%d", len(r.lives)+1), s: s, started: time.Now(), read: s}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs[i] = l
	r.lives = append(r.lives, l)
}

// supervise starts again every replica that exited; call it from the test's goroutine.
func (r *replicas) supervise() {
	for i := range r.procs {
		r.mu.Lock()
		l := r.procs[i]
		r.mu.Unlock()
		if !l.s.Exited() {
			continue
		}
		if !l.planned {
			r.mu.Lock()
			r.unplanned++
			r.mu.Unlock()
		}
		r.start(i)
	}
}

// leader returns the replica that leads (its index), or -1.
func (r *replicas) leader(ctx context.Context) int {
	for i := range r.procs {
		r.mu.Lock()
		l := r.procs[i]
		r.mu.Unlock()
		if l.s.Exited() {
			continue
		}
		families, err := l.s.Metrics(ctx)
		if err != nil {
			continue
		}
		if v, err := harness.CounterOf(families, "leader_election_master_status", nil); err == nil && v == 1 {
			return i
		}
	}
	return -1
}

// waitLeader waits until a replica other than not (-1: any) leads, and returns it and how
// long that took.
func (r *replicas) waitLeader(ctx context.Context, not int) (int, time.Duration, error) {
	start := time.Now()
	for deadline := start.Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r.supervise()
		if i := r.leader(ctx); i >= 0 && i != not {
			return i, time.Since(start), nil
		}
	}
	return -1, time.Since(start), fmt.Errorf("no replica took the lead within 2 minutes")
}

// running are the replicas whose process runs.
func (r *replicas) running() []*life {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*life
	for _, l := range r.procs {
		if !l.s.Exited() {
			out = append(out, l)
		}
	}
	return out
}

// saveProfiles writes the process's heap profile and goroutines into dir as NAME-PHASE.pb.gz
// and NAME-PHASE-goroutines.txt (workmap-scheduler-9-warm.pb.gz), for
// `go tool pprof -diff_base` and diff.
func (l *life) saveProfiles(ctx context.Context, dir, phase string) error {
	heap, err := l.read.HeapProfile(ctx)
	if err != nil {
		return fmt.Errorf("%s: heap profile: %w", l.name, err)
	}
	goroutines, err := l.read.Goroutines(ctx)
	if err != nil {
		return fmt.Errorf("%s: goroutines: %w", l.name, err)
	}
	name := filepath.Join(dir, strings.NewReplacer(" #", "-", " ", "-").Replace(l.name)+"-"+phase)
	return errors.Join(os.WriteFile(name+".pb.gz", heap, 0o644), os.WriteFile(name+"-goroutines.txt", goroutines, 0o644))
}

// sampleAll records the memory and goroutines of every running replica.
func (r *replicas) sampleAll(ctx context.Context) {
	for _, l := range r.running() {
		l.sample(ctx)
	}
}

// sample records the process's memory, live heap and goroutines; nothing when a read fails
// (the process is exiting, or kube-apiserver is away and its metrics wait). The heap profile
// is read first: it collects garbage, so the resident memory read next is comparable from one
// sample to the next, not wherever the heap happened to be between two collections.
func (l *life) sample(ctx context.Context) {
	profile, err := l.read.HeapProfile(ctx)
	if err != nil {
		return
	}
	heap, events, err := heapShares(profile)
	if err != nil {
		return
	}
	families, err := l.read.Metrics(ctx)
	if err != nil {
		return
	}
	gauge := func(name string) float64 {
		v, e := harness.CounterOf(families, name, nil)
		err = errors.Join(err, e)
		return v
	}
	s := sample{at: time.Now(), rss: gauge("process_resident_memory_bytes"), goroutines: gauge("go_goroutines"),
		freeHeap: gauge("go_memstats_heap_idle_bytes") - gauge("go_memstats_heap_released_bytes"), heap: heap, events: events,
		heapSpans: gauge("go_memstats_heap_inuse_bytes"), stacks: gauge("go_memstats_stack_inuse_bytes"),
		runtime: gauge("go_memstats_gc_sys_bytes") + gauge("go_memstats_buck_hash_sys_bytes") + gauge("go_memstats_other_sys_bytes") +
			gauge("go_memstats_mspan_inuse_bytes") + gauge("go_memstats_mcache_inuse_bytes")}
	if resident, rerr := l.read.ResidentMemory(); rerr == nil {
		s.anon, s.file = resident.Anon, resident.File
	}
	if err != nil {
		l.unmeasurable = err // the scrape worked, so the metric is not exported
		return
	}
	leads, err := harness.CounterOf(families, "leader_election_master_status", nil)
	s.leads = err == nil && leads == 1
	l.samples = append(l.samples, s)
}

// roleBegan is when the process's current role began: its start, or the first sample that
// saw it lead or stand by after the other.
func (l *life) roleBegan() time.Time {
	for i := len(l.samples) - 1; i > 0; i-- {
		if l.samples[i-1].leads != l.samples[i].leads {
			return l.samples[i].at
		}
	}
	return l.started
}

// growth is what the process's samples say: its memory from its memory warm-up (a leader's
// is longer), its goroutines from the warm-up; nil when no stretch was long enough.
func (l *life) growth(cfg config) (memory, goroutines *growth) {
	if g, ok := growthOf(l.samples, l.started, cfg.memoryWarmUp); ok {
		memory = &g
	}
	if g, ok := growthOf(l.samples, l.started, always(cfg.warmUp)); ok {
		goroutines = &g
	}
	return memory, goroutines
}

// leads: the last sample saw the process lead.
func (l *life) leads() bool { return len(l.samples) > 0 && l.samples[len(l.samples)-1].leads }

// goroutinesGrew: more goroutines at the end than maxGrowth and goroutineSlack allow.
func (g growth) goroutinesGrew() bool {
	return g.to.goroutines > g.from.goroutines*(1+maxGrowth)+goroutineSlack
}
