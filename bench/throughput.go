package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/e2e/harness"
)

// Scheduler is one side of the comparison.
type Scheduler string

// The schedulers compared: A, plain kube-scheduler with the default profile and
// no gangs; B, workmap-scheduler with gangs; D, the same kube-scheduler binary with
// Kubernetes' own gang scheduling turned on and native PodGroups made by workmap-webhook; E,
// workmap-scheduler with workmap-webhook labelling its pods at creation; O, optionally, any
// other kube-scheduler-compatible scheduler the user puts beside them (OtherScheduler).
const (
	Plain       Scheduler = "kube-scheduler"
	Gang        Scheduler = "workmap-scheduler"
	Native      Scheduler = "kube-scheduler-native-gangs"
	GangWebhook Scheduler = "workmap-scheduler-with-webhook"
	Other       Scheduler = "other"
)

// Letter is the scheduler's short name in the report: A, B, D, E or O.
func (s Scheduler) Letter() string {
	switch s {
	case Plain:
		return "A"
	case Gang:
		return "B"
	case Native:
		return "D"
	case GangWebhook:
		return "E"
	}
	return "O"
}

// UsesWebhook reports whether the pods of s's runs go through workmap-webhook: their
// namespace carries WebhookNamespaceLabel.
func (s Scheduler) UsesWebhook() bool { return s == Native || s == GangWebhook }

// WebhookNamespaceLabel marks the namespaces whose pods workmap-webhook sees in the bench
// (its namespaceSelector): only D's and E's, so A, B and O run as without it.
const WebhookNamespaceLabel = "bench.workmap.dev/webhook"

// Mode is how pods meet the scheduler.
type Mode string

// The two modes.
const (
	// Running: the scheduler runs, then the pods are created; measured from the first pod
	// seen to the last bound, with create-to-bound latency per pod.
	Running Mode = "running"
	// Backlog: every pod exists before the scheduler starts; measured from the scheduler
	// answering its health check to the last pod bound (pure drain rate).
	Backlog Mode = "backlog"
)

// ThroughputOptions size the comparison.
type ThroughputOptions struct {
	Gangs, PodsPerGang int
	Pairs              int
	Modes              []Mode
	// QPS and Burst are both schedulers' client rate limits (clientConnection).
	QPS   float32
	Burst int32
	// CreateWorkers create gangs in parallel through Creator, the bench's own client.
	CreateWorkers int
	Creator       kubernetes.Interface
	// Timeout bounds one run.
	Timeout time.Duration
	Log     io.Writer
	// Namespace prefixes the runs' namespaces (default "tp").
	Namespace string
	// Profiles, when set, is a directory where each run records its scheduler's CPU profile
	// over ProfileFor from the scheduler's start (<namespace>.pprof).
	Profiles   string
	ProfileFor time.Duration
	// Schedulers alternate in each pair, in this order (default A then B).
	Schedulers []Scheduler
	// Bare runs bare pods (no owner, no gang; Gangs.Bare) instead of gangs.
	Bare bool
	// Other is how to start O (with Other among Schedulers); its pods get PodGroups through
	// PodGroupCreator when Other.PodGroups is set.
	Other           *OtherScheduler
	PodGroupCreator dynamic.Interface
	// Quiet is how each run waits for the machine to settle before its window (the zero
	// value: it does not wait).
	Quiet Quiet
	// Topology, when set, makes each run's pods the topology step's (TopologyGangs) instead
	// of Jobs, B's workmap-scheduler with the step's topology levels and D's kube-scheduler
	// with native topology, and records where each gang's pods landed.
	Topology *TopologyRun
}

func (o ThroughputOptions) schedulers() []Scheduler {
	if len(o.Schedulers) == 0 {
		return []Scheduler{Plain, Gang}
	}
	return o.Schedulers
}

// Run is one measured run.
type Run struct {
	Mode      Mode      `json:"mode"`
	Scheduler Scheduler `json:"scheduler"`
	Pair      int       `json:"pair"`
	Pods      int       `json:"pods"`
	// Seconds is the measured window; PodsPerSecond = Pods / Seconds.
	Seconds       float64 `json:"seconds"`
	PodsPerSecond float64 `json:"pods_per_second"`
	// P50Ms and P99Ms are create-to-bound latencies (running mode).
	P50Ms float64 `json:"p50_ms,omitempty"`
	P99Ms float64 `json:"p99_ms,omitempty"`
	// AssemblyP50Ms and AssemblyP99Ms are, per pod of a gang, from its creation to its gang's
	// last member's (running mode): the part of its create-to-bound that no scheduler binding
	// gangs whole can avoid. GangP50Ms and GangP99Ms are per gang, from its first member's
	// creation to its last member bound: when the whole job can run.
	AssemblyP50Ms float64 `json:"assembly_p50_ms,omitempty"`
	AssemblyP99Ms float64 `json:"assembly_p99_ms,omitempty"`
	GangP50Ms     float64 `json:"gang_p50_ms,omitempty"`
	GangP99Ms     float64 `json:"gang_p99_ms,omitempty"`
	// CreateSeconds is from the first to the last pod seen (running mode), StartupSeconds
	// from starting the scheduler to its health check answering (backlog mode).
	CreateSeconds  float64 `json:"create_seconds,omitempty"`
	StartupSeconds float64 `json:"startup_seconds,omitempty"`
	// PrepareSeconds is how long the backlog took to create (backlog mode), CleanupSeconds
	// how long the run's namespace took to be deleted after it: outside the window, they
	// are the run's cost in wall time beyond it.
	PrepareSeconds float64 `json:"prepare_seconds,omitempty"`
	CleanupSeconds float64 `json:"cleanup_seconds,omitempty"`
	// QuietSeconds is how long the run waited for the machine to settle before its window,
	// BusyAtStart the share of the machine's CPU time busy in the last second of that wait
	// (see Quiet; -1: not read).
	QuietSeconds float64 `json:"quiet_seconds,omitempty"`
	BusyAtStart  float64 `json:"busy_at_start,omitempty"`
	// GroupedSeconds is when the last pod got its PodGroup label, from the window start (B).
	GroupedSeconds float64 `json:"grouped_seconds,omitempty"`
	// TotalCPUSeconds is the scheduler process's CPU time from its start to the end of the
	// window (Client.CPUSeconds is the window's alone).
	TotalCPUSeconds float64 `json:"total_cpu_seconds,omitempty"`
	// Client is what the scheduler process did through its API clients in the window,
	// Server what the API server did (for every client) in it.
	Client ClientStats `json:"client"`
	Server ServerStats `json:"server"`
	// BoundBy says what limited the run.
	BoundBy string `json:"bound_by"`
	// Gangs is the number of gangs of a topology run; Placement where they landed (also for
	// a run that failed waiting for its pods: the gangs placed by then).
	Gangs     int        `json:"gangs,omitempty"`
	Placement *Placement `json:"placement,omitempty"`
	// Curve holds, for each pod in bind order, seconds since the window started.
	Curve []float64 `json:"curve,omitempty"`
	Error string    `json:"error,omitempty"`
}

// schedulerProcess is a running scheduler of either kind.
type schedulerProcess interface {
	Stop()
	URL() string
	LogPath() string
	CPUProfile(ctx context.Context, d time.Duration) ([]byte, error)
}

// RunThroughput runs, for each mode, Pairs pairs of runs alternating A (plain) and B (gang),
// and O when configured, on the same cluster, nodes, pods and client rate limits. A failed
// run is recorded with its error and the comparison goes on.
func RunThroughput(ctx context.Context, r *Runner, c *harness.Cluster, o ThroughputOptions) []Run {
	var runs []Run
	for _, mode := range o.Modes {
		for pair := 1; pair <= o.Pairs; pair++ {
			for _, s := range o.schedulers() {
				runs = append(runs, o.runOne(ctx, r, c, Run{Mode: mode, Scheduler: s, Pair: pair, Pods: o.Gangs * o.PodsPerGang}))
			}
		}
	}
	return runs
}

// RunTopology runs the topology step: for each batch size, Pairs pairs of runs of the
// schedulers (A B D by default) in backlog mode, on the same cluster, nodes and client
// limits. Pairs are numbered across the batches.
func RunTopology(ctx context.Context, r *Runner, c *harness.Cluster, o ThroughputOptions, t TopologyRun) []Run {
	var runs []Run
	pair := 0
	for _, small := range t.Setup.Batches {
		for range t.Setup.Pairs {
			pair++
			for _, s := range o.schedulers() {
				batch := t
				batch.Small = small
				o.Topology = &batch
				runs = append(runs, o.runOne(ctx, r, c, Run{Mode: Backlog, Scheduler: s, Pair: pair, Pods: t.Setup.RunPods(small), Gangs: small + t.Setup.LargeGangs}))
			}
		}
	}
	return runs
}

// runOne measures one run, recording a failure as its error.
func (o ThroughputOptions) runOne(ctx context.Context, r *Runner, c *harness.Cluster, run Run) Run {
	err := r.Step(func() error { return o.run(ctx, c, &run) })
	if err != nil {
		run.Error = err.Error()
	}
	fmt.Fprintf(o.Log, "  %-7s %-17s pair %d: %s (backlog created in %.1fs%s, cleaned up in %.1fs)\n", run.Mode, run.Scheduler, run.Pair, run.summary(), run.PrepareSeconds, o.Quiet.waited(run), run.CleanupSeconds)
	return run
}

func (run Run) summary() string {
	if run.Error != "" {
		return "FAILED: " + run.Error
	}
	s := fmt.Sprintf("%d pods in %.2fs = %.1f pods/s", run.Pods, run.Seconds, run.PodsPerSecond)
	if run.Mode == Running {
		s += fmt.Sprintf(", create-to-bound p50 %.0f ms p99 %.0f ms", run.P50Ms, run.P99Ms)
	}
	if p := run.Placement; p != nil {
		s += fmt.Sprintf(", %d of %d gangs in one rack (most racks for one gang: %d)", p.OneRack, p.Gangs, p.MaxRacks)
	}
	return s + fmt.Sprintf(", %.0f API requests, %.0f throttled; bound by %s", run.Client.TotalRequests(), run.Client.TotalLimiter().Throttled, run.BoundBy)
}

func (o ThroughputOptions) start(c *harness.Cluster, s Scheduler) schedulerProcess {
	switch s {
	case Plain:
		return c.StartKubeScheduler(harness.KubeSchedulerOptions{QPS: o.QPS, Burst: o.Burst, Args: []string{harness.OpenEndpointsFlag}})
	case Native:
		gates := c.Release().NativeGangGates
		if o.Topology != nil {
			gates = o.Topology.Setup.Gates()
		}
		return c.StartKubeScheduler(harness.KubeSchedulerOptions{QPS: o.QPS, Burst: o.Burst, FeatureGates: gates, Args: []string{harness.OpenEndpointsFlag}})
	case Other:
		return c.StartSchedulerBinary(harness.BinaryOptions{Name: "other-scheduler", Binary: o.Other.Binary, Config: o.Other.Config,
			QPS: o.QPS, Burst: o.Burst, Args: []string{harness.OpenEndpointsFlag}})
	}
	opts := harness.SchedulerOptions{QPS: o.QPS, Burst: o.Burst, Args: []string{harness.OpenEndpointsFlag}}
	if o.Topology != nil {
		opts.TopologyLevels = o.Topology.Setup.Levels()
	}
	return c.StartWorkmapScheduler(opts)
}

// schedulerName is what the pods of a run of s ask for.
func (o ThroughputOptions) schedulerName(s Scheduler) string {
	switch s {
	case Plain, Native:
		return corev1.DefaultSchedulerName
	case Other:
		return o.Other.Name
	}
	return harness.SchedulerName
}

func (o ThroughputOptions) run(ctx context.Context, c *harness.Cluster, run *Run) (err error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	prefix := o.Namespace
	if prefix == "" {
		prefix = "tp"
	}
	if run.Scheduler == Other && o.Other == nil {
		return fmt.Errorf("no other scheduler configured")
	}
	ns := fmt.Sprintf("%s-%s-%d-%s", prefix, run.Mode, run.Pair, strings.ToLower(run.Scheduler.Letter()))
	var labels map[string]string
	if run.Scheduler.UsesWebhook() && o.Topology == nil { // the topology step has no webhook
		labels = map[string]string{WebhookNamespaceLabel: "true"}
	}
	if err := CreateNamespace(ctx, c.Kube, ns, labels); err != nil {
		return err
	}
	defer func() {
		cleanup, cancel := context.WithTimeout(context.Background(), max(2*time.Minute, o.Timeout)) // as long as a run may take: a scale row's pods go slowly
		defer cancel()
		began := time.Now()
		if o.Topology != nil {
			if err := o.Topology.Clear(cleanup, c.Kube, ns, 4*max(o.CreateWorkers, 1)); err != nil {
				fmt.Fprintf(o.Log, "  clearing %s: %v\n", ns, err)
			}
		}
		if cleanupErr := DeleteGangs(cleanup, c.Kube, ns); cleanupErr != nil && err == nil {
			// What is left holds nodes the next runs would count on: this run fails, so that
			// no figure after it is taken as measured on an empty cluster.
			err = fmt.Errorf("cleaning up %s: %w", ns, cleanupErr)
		}
		run.CleanupSeconds = round(time.Since(began).Seconds(), 1)
	}()
	var gangs workload
	if o.Topology != nil {
		gangs = o.Topology.gangs(ns, run.Scheduler, o.schedulerName(run.Scheduler))
	} else {
		jobs := Gangs{Namespace: ns, Count: o.Gangs, PodsPerGang: o.PodsPerGang, SchedulerName: o.schedulerName(run.Scheduler), GPUsPerPod: 1, Bare: o.Bare}
		if run.Scheduler == Other && o.Other.PodGroups {
			if o.PodGroupCreator == nil {
				return fmt.Errorf("the other scheduler's pods need PodGroups, but no client makes them")
			}
			jobs.PodGroups = o.PodGroupCreator
		}
		gangs = jobs
	}
	w, err := WatchPods(ctx, c.Kube, ns, gangs.Pods())
	if err != nil {
		return err
	}
	defer w.Stop()

	var s schedulerProcess
	var start time.Time
	if run.Mode == Backlog {
		began := time.Now()
		if err := gangs.Create(ctx, o.Creator, o.CreateWorkers); err != nil {
			return err
		}
		if err := w.WaitAdded(ctx); err != nil {
			return err
		}
		if err := o.settle(ctx, run); err != nil {
			return err
		}
		exec := time.Now()
		run.PrepareSeconds = round(exec.Sub(began).Seconds(), 1)
		s = o.start(c, run.Scheduler)
		start = time.Now()
		run.StartupSeconds = start.Sub(exec).Seconds()
	} else {
		if err := o.settle(ctx, run); err != nil {
			return err
		}
		s = o.start(c, run.Scheduler)
		if err := waitReady(ctx, s.URL()); err != nil {
			s.Stop()
			return err
		}
	}
	defer s.Stop()
	profiled := func() error { return nil }
	if o.Profiles != "" {
		profiled = (&Profile{Path: filepath.Join(o.Profiles, ns+".pprof"), Record: s.CPUProfile, Seconds: o.ProfileFor}).start(ctx)
	}
	before, err := Scrape(ctx, s.URL())
	if err != nil {
		return err
	}
	serverBefore, err := scrapeServer(ctx, c.Kube)
	if err != nil {
		return err
	}
	if run.Mode == Running {
		if err := gangs.Create(ctx, o.Creator, o.CreateWorkers); err != nil {
			return err
		}
	}
	if err := w.WaitBound(ctx); err != nil {
		if o.Topology != nil { // where the gangs placed by then landed
			read, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if p, perr := o.Topology.Placement(read, c.Kube, ns); perr == nil {
				run.Placement = &p
			}
		}
		return fmt.Errorf("%w (scheduler log %s)", err, s.LogPath())
	}
	after, err := Scrape(ctx, s.URL())
	if err != nil {
		return err
	}
	serverAfter, err := scrapeServer(ctx, c.Kube)
	if err != nil {
		return err
	}
	run.Client, run.Server = after.Sub(before), serverAfter.Sub(serverBefore)
	if err := profiled(); err != nil {
		return err
	}
	run.TotalCPUSeconds = round(after.CPUSeconds, 2)
	run.measure(w.Times(), start)
	run.BoundBy = run.boundBy(o)
	if o.Topology != nil {
		run.GroupedSeconds = 0 // B's pods carry their PodGroup's label from creation
		p, err := o.Topology.Placement(ctx, c.Kube, ns)
		if err != nil {
			return err
		}
		run.Placement = &p
	}
	return nil
}

// settle waits for the machine to be quiet (o.Quiet) and records the wait in run.
func (o ThroughputOptions) settle(ctx context.Context, run *Run) error {
	waited, busy, err := o.Quiet.Wait(ctx)
	run.QuietSeconds, run.BusyAtStart = round(waited.Seconds(), 1), round(busy, 2)
	return err
}

// workload is the pods of a run: Jobs (Gangs) or the topology step's gangs.
type workload interface {
	Pods() int
	Create(ctx context.Context, kube kubernetes.Interface, workers int) error
}

// scrapeServer reads the API server's /metrics.
func scrapeServer(ctx context.Context, kube kubernetes.Interface) (ServerStats, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return ServerStats{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return ParseServerStats(bytes.NewReader(raw))
}

// waitReady waits until the scheduler's /readyz answers (its informers are synced).
func waitReady(ctx context.Context, base string) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := insecure.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scheduler not ready: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// boundBy names what limited the run: pod creation (running mode, when the last pod bound
// soon after the last was created), the client rate limit (when more than a quarter of the
// requests of one verb, among those the run made at least one per five pods of, waited for
// it), else the scheduler's own work on the shared CPUs.
func (run *Run) boundBy(o ThroughputOptions) string {
	cores := 0.0
	if run.Seconds > 0 {
		cores = run.Client.CPUSeconds / run.Seconds
	}
	if run.Mode == Running && run.Seconds > 0 && (run.Seconds-run.CreateSeconds) < 0.1*run.Seconds {
		return fmt.Sprintf("pod creation (the last pod bound %.2fs after the last was created)", run.Seconds-run.CreateSeconds)
	}
	if verb, l := run.Client.MostThrottled(0.2 * float64(run.Pods)); verb != "" && l.Throttled > 0.25*l.Waits {
		return fmt.Sprintf("the client rate limit (qps %g, burst %d): %.0f%% of its %s requests waited for it, %.1fs in all", o.QPS, o.Burst, 100*l.Throttled/l.Waits, verb, l.Seconds)
	}
	server := 0.0
	if run.Seconds > 0 {
		server = run.Server.CPUSeconds / run.Seconds
	}
	return fmt.Sprintf("the shared CPUs, not the client limit (no verb throttled for more than a quarter of its requests; the scheduler used %.2f cores, the API server %.2f)", cores, server)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
