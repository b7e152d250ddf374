// Command bench is `make bench`: it runs workmap's micro-benchmarks, then starts a local
// control plane (harness: etcd, kube-apiserver, kube-controller-manager, kwok GPU nodes, the
// JobSet controller) and measures scheduler throughput (plain kube-scheduler against
// workmap-scheduler, alternating runs, optionally with a third scheduler of the user's beside
// them), workmap-scheduler on pods without a gang, `workmap tree` on 1,000 pods and the
// grouper's memory per pod; then, on a control plane of its own with many nodes, the scale
// row. It writes bench/results.json, bench/micro.txt, docs/benchmarks.md and
// docs/benchmarks-throughput.svg. Every number is measured by the run; it exits 1 when a step
// failed (the files are written anyway, with what was measured).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

type config struct {
	steps                            map[string]bool
	microCount                       int
	microBenchtime                   string
	gangs, podsPerGang, nodes, gpus  int
	pairs                            int
	modes                            string
	qps, highQPS                     float64
	burst, highBurst, highPairs      int
	highGangs                        int
	createQPS                        float64
	createWorkers                    int
	runTimeout                       time.Duration
	cliJobs, cliPodsPerJob, cliRuns  int
	memoryPods, memoryGang           int
	workmap                          string
	results, microOut, report, chart string
	raw, render                      string
	barePairs                        int
	bareModes                        string
	scalePods, scalePodsPerGang      int
	scaleNodes, scaleGPUs            int
	scalePairs, scaleNodeWorkers     int
	scaleTimeout                     time.Duration
	scale20kPods, scale20kNodes      int
	scale20kPairs                    int
	otherBinary, otherConfig         string
	otherName                        string
	otherPodGroups                   bool
	other                            *bench.OtherScheduler
	native                           bool
	webhook                          string
	topology                         bench.TopologySetup
	topologyBatches                  string
	topologyTimeout                  time.Duration
	topologyQPS                      float64
	topologyBurst                    int
	requeueGangs                     int
	requeueSpacing                   time.Duration
	preemption                       bench.PreemptionSetup
	preemptionTimeout                time.Duration
	cpuProfiles                      string
	cpuProfileFor                    time.Duration
	// quiet is how each run waits for the machine to settle before its window.
	quiet bench.Quiet
	keep  bool
}

// allSteps are the steps in the order they run.
var allSteps = bench.Steps

func main() {
	var c config
	steps := flag.String("steps", strings.Join(allSteps, ","), "what to measure: micro (testing.B); on a local control plane throughput, bare (row C: workmap-scheduler on pods without a gang), cli, memory; then native137 (A, B and D again on Kubernetes 1.37's control plane, with -native), on a control plane of its own; then scale, on a control plane of its own; then scale20k (the same at -scale20k-pods on -scale20k-nodes), on a control plane of its own; then topology (gangs that each ask for one rack: A, B and D), on a control plane of its own; then requeue (backed-off gangs bound once room is freed), on a control plane of its own; then preemption (high-priority gangs preempting low-priority ones), on a control plane of its own")
	flag.IntVar(&c.microCount, "micro-count", 5, "go test -count for the micro-benchmarks")
	flag.StringVar(&c.microBenchtime, "micro-benchtime", "", "go test -benchtime for the micro-benchmarks (default go test's)")
	flag.IntVar(&c.gangs, "gangs", 48, "throughput: gangs (Jobs) per run")
	flag.IntVar(&c.podsPerGang, "pods-per-gang", 8, "throughput: pods per gang")
	flag.IntVar(&c.nodes, "nodes", 0, "throughput: kwok nodes (default: enough for every pod of the largest run, the main ones or the high-qps repeat's)")
	flag.IntVar(&c.gpus, "gpus-per-node", 16, "throughput: GPUs per kwok node (each pod asks for one)")
	flag.IntVar(&c.pairs, "pairs", 3, "throughput: A/B pairs of runs per mode")
	flag.StringVar(&c.modes, "modes", "running,backlog", "throughput modes: running (pods created while the scheduler runs), backlog (pods first, then the scheduler)")
	flag.Float64Var(&c.qps, "qps", 50, "both schedulers' clientConnection.qps")
	flag.IntVar(&c.burst, "burst", 100, "both schedulers' clientConnection.burst")
	flag.Float64Var(&c.highQPS, "high-qps", 500, "throughput: then repeat the headline mode with both schedulers at this qps, to see whether the limits bound the runs")
	flag.IntVar(&c.highBurst, "high-burst", 1000, "throughput: burst of the repeat at -high-qps")
	flag.IntVar(&c.highPairs, "high-pairs", 5, "throughput: pairs of the repeat at -high-qps (0: no repeat)")
	flag.IntVar(&c.highGangs, "high-gangs", 250, "throughput: gangs per run of the repeat at -high-qps (at a few hundred pods/s, -gangs' runs last about a second)")
	flag.Float64Var(&c.createQPS, "create-qps", 1000, "qps (and burst) of the bench's own client that creates pods")
	flag.IntVar(&c.createWorkers, "create-workers", 8, "gangs created in parallel")
	flag.DurationVar(&c.runTimeout, "run-timeout", 5*time.Minute, "limit of one throughput run")
	flag.IntVar(&c.cliJobs, "cli-jobs", 10, "CLI: Jobs of the JobSet")
	flag.IntVar(&c.cliPodsPerJob, "cli-pods-per-job", 100, "CLI: pods per Job")
	flag.IntVar(&c.cliRuns, "cli-runs", 5, "CLI: timed runs of workmap tree")
	flag.IntVar(&c.memoryPods, "memory-pods", 10000, "grouper memory: pods in the informers")
	flag.IntVar(&c.memoryGang, "memory-gang", 8, "grouper memory: pods per gang")
	flag.StringVar(&c.workmap, "workmap", "bin/workmap", "the workmap CLI binary")
	flag.BoolVar(&c.native, "native", true, "throughput: also run D (kube-scheduler with Kubernetes' own gang scheduling, native PodGroups from workmap-webhook) and E (workmap-scheduler with workmap-webhook) in every pair")
	flag.StringVar(&c.webhook, "webhook", "bin/workmap-webhook", "the workmap-webhook binary (D and E)")
	flag.StringVar(&c.results, "results", "bench/results.json", "where the results go")
	flag.StringVar(&c.microOut, "micro-out", "bench/micro.txt", "where the raw go test -bench output goes")
	flag.StringVar(&c.report, "report", "docs/benchmarks.md", "the Markdown report")
	flag.StringVar(&c.chart, "chart", "docs/benchmarks-throughput.svg", "the throughput chart")
	flag.StringVar(&c.raw, "raw", "bench/raw.json", "where everything measured goes (the report's input)")
	flag.StringVar(&c.render, "render", "", "measure nothing: render the results, report and chart again from this raw file")
	flag.IntVar(&c.barePairs, "bare-pairs", 3, "bare: A/C pairs of runs per mode, with -gangs × -pods-per-gang bare pods a run")
	flag.StringVar(&c.bareModes, "bare-modes", "backlog", "bare: modes (running, backlog)")
	flag.IntVar(&c.scalePods, "scale-pods", 5000, "scale: pods per run")
	flag.IntVar(&c.scalePodsPerGang, "scale-pods-per-gang", 8, "scale: pods per gang")
	flag.IntVar(&c.scaleNodes, "scale-nodes", 500, "scale: kwok nodes")
	flag.IntVar(&c.scaleGPUs, "scale-gpus-per-node", 16, "scale: GPUs per kwok node")
	flag.IntVar(&c.scalePairs, "scale-pairs", 1, "scale: A/B pairs of runs (backlog mode)")
	flag.IntVar(&c.scaleNodeWorkers, "scale-node-workers", 16, "scale: nodes created in parallel")
	flag.DurationVar(&c.scaleTimeout, "scale-timeout", 20*time.Minute, "scale: limit of one run")
	flag.IntVar(&c.scale20kPods, "scale20k-pods", 20000, "scale20k (the large scale row, gangs and GPUs per node as -scale-*): pods per run")
	flag.IntVar(&c.scale20kNodes, "scale20k-nodes", 2000, "scale20k: kwok nodes")
	flag.IntVar(&c.scale20kPairs, "scale20k-pairs", 1, "scale20k: A/B pairs of runs (backlog mode)")
	flag.StringVar(&c.otherBinary, "other-scheduler-binary", "", "a third, kube-scheduler-compatible scheduler (O) run beside A and B in the same alternating runs (throughput, its high-qps repeat, scale)")
	flag.StringVar(&c.otherConfig, "other-scheduler-config", "", "O's KubeSchedulerConfiguration (the bench sets clientConnection kubeconfig, qps, burst, and turns leader election off)")
	flag.StringVar(&c.otherName, "other-scheduler-name", "", "the schedulerName of O's profile that its pods ask for (default: its configuration's first profile's)")
	t := &c.topology
	flag.IntVar(&t.Racks, "topology-racks", 10, "topology: racks")
	flag.IntVar(&t.NodesPerRack, "topology-nodes-per-rack", 100, "topology: kwok nodes per rack")
	flag.IntVar(&t.RacksPerBlock, "topology-racks-per-block", 5, "topology: racks per block")
	flag.IntVar(&t.GPUsPerNode, "topology-gpus-per-node", 8, "topology: GPUs per kwok node")
	flag.StringVar(&c.topologyBatches, "topology-batches", "150,450", "topology: the numbers of small gangs of a run, one batch size after the other")
	flag.IntVar(&t.GangSize, "topology-gang-size", 4, "topology: pods per small gang")
	flag.Int64Var(&t.GPUsPerPod, "topology-gpus-per-pod", 2, "topology: GPUs per pod of a small gang")
	flag.IntVar(&t.LargeGangs, "topology-large-gangs", 3, "topology: large gangs in every run")
	flag.IntVar(&t.LargeGangSize, "topology-large-gang-size", 200, "topology: pods per large gang")
	flag.Int64Var(&t.LargeGPUsPerPod, "topology-large-gpus-per-pod", 2, "topology: GPUs per pod of a large gang")
	flag.IntVar(&t.Pairs, "topology-pairs", 1, "topology: pairs of runs (A B D, backlog mode) per batch size")
	flag.StringVar(&t.RackLabel, "topology-rack-label", bench.DefaultRackLabel, "topology: the node label of the racks")
	flag.StringVar(&t.BlockLabel, "topology-block-label", bench.DefaultBlockLabel, "topology: the node label of the blocks")
	flag.Float64Var(&c.topologyQPS, "topology-qps", 0, "topology: every scheduler's clientConnection.qps (default -high-qps: at -qps the client budget bounds A and B alike, and the step would take minutes longer)")
	flag.IntVar(&c.topologyBurst, "topology-burst", 0, "topology: every scheduler's clientConnection.burst (default -high-burst)")
	flag.DurationVar(&c.topologyTimeout, "topology-timeout", 4*time.Minute, "topology: limit of one run")
	flag.IntVar(&c.requeueGangs, "requeue-gangs", 20, "requeue: gangs (and nodes)")
	flag.DurationVar(&c.requeueSpacing, "requeue-spacing", time.Second, "requeue: time between two blocking pods' deletions")
	p := &c.preemption
	flag.IntVar(&p.Nodes, "preemption-nodes", 1000, "preemption: kwok nodes, each filled by one low-priority gang")
	flag.IntVar(&p.GPUsPerNode, "preemption-gpus-per-node", 8, "preemption: GPUs per kwok node")
	flag.IntVar(&p.LowGangSize, "preemption-low-gang-size", 2, "preemption: pods per low-priority gang (together a node's GPUs)")
	flag.IntVar(&p.HighGangs, "preemption-high-gangs", 20, "preemption: high-priority gangs")
	flag.IntVar(&p.HighGangSize, "preemption-high-gang-size", 4, "preemption: pods per high-priority gang (each a whole node)")
	flag.DurationVar(&c.preemptionTimeout, "preemption-timeout", 4*time.Minute, "preemption: limit of each wait (the fill, the preemptions)")
	flag.StringVar(&c.cpuProfiles, "cpu-profiles", "", "write schedulers' CPU profiles to this directory, for go tool pprof: preemption, each scheduler's over the high-priority gangs' phase (preemption-B.pprof, preemption-D.pprof); throughput, each run's of the repeat at -high-qps over -cpu-profile-for from its start (hi-<mode>-<pair>-<row>.pprof)")
	flag.Float64Var(&c.quiet.MaxBusy, "quiet-busy", bench.DefaultQuiet.MaxBusy, "throughput, scale, topology: before each run's window, wait until the machine's CPUs were at most this share busy (0 to 1, all cores) for -quiet-seconds in a row")
	flag.IntVar(&c.quiet.Seconds, "quiet-seconds", bench.DefaultQuiet.Seconds, "quiet seconds in a row that end the wait before a run (0: no wait)")
	flag.DurationVar(&c.quiet.Limit, "quiet-limit", bench.DefaultQuiet.Limit, "the longest wait for a quiet machine before a run (it then starts anyway)")
	flag.DurationVar(&c.cpuProfileFor, "cpu-profile-for", 3*time.Second, "throughput: how long each run's CPU profile records from the scheduler's start (the run waits for it)")
	flag.BoolVar(&c.keep, "keep", true, "steps not run keep their numbers from the earlier report in -raw (false: they are left empty)")
	flag.BoolVar(&c.otherPodGroups, "other-scheduler-podgroups", false, "O's pods carry the scheduling.x-k8s.io/pod-group label from creation and each gang gets a scheduling.x-k8s.io/v1alpha1 PodGroup (minMember = gang size) first, as for scheduler-plugins' Coscheduling")
	flag.Parse()
	c.steps = map[string]bool{}
	for _, s := range strings.Split(*steps, ",") {
		switch s = strings.TrimSpace(s); {
		case slices.Contains(allSteps, s):
			c.steps[s] = true
		case s == "":
		default:
			fmt.Fprintf(os.Stderr, "bench: unknown step %q (want %s)\n", s, strings.Join(allSteps, ", "))
			os.Exit(2)
		}
	}
	if c.nodes == 0 {
		c.nodes = (c.mostGangs()*c.podsPerGang + c.gpus - 1) / c.gpus
	}
	for _, b := range strings.Split(c.topologyBatches, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		n, err := strconv.Atoi(b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: -topology-batches: %v\n", err)
			os.Exit(2)
		}
		c.topology.Batches = append(c.topology.Batches, n)
	}
	if c.topologyQPS == 0 {
		c.topologyQPS, c.topologyBurst = c.highQPS, c.highBurst
	}
	c.topology.QPS, c.topology.Burst, c.topology.Native = float32(c.topologyQPS), int32(c.topologyBurst), c.native
	ctrllog.SetLogger(klog.NewKlogr()) // envtest and the grouper's client log through controller-runtime
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	for _, path := range []*string{&c.render, &c.otherBinary, &c.otherConfig, &c.webhook} { // before the chdir below
		if *path == "" {
			continue
		}
		abs, err := filepath.Abs(*path)
		if err != nil {
			return err
		}
		*path = abs
	}
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	modes, err := parseModes(c.modes)
	if err != nil {
		return err
	}
	bareModes, err := parseModes(c.bareModes)
	if err != nil {
		return err
	}
	if most := c.mostGangs() * c.podsPerGang; c.nodes*c.gpus < most {
		return fmt.Errorf("%d nodes × %d GPUs cannot hold the %d pods of a run at once", c.nodes, c.gpus, most)
	}
	if c.scalePodsPerGang < 1 || c.scalePods < c.scalePodsPerGang || c.scalePods%c.scalePodsPerGang != 0 {
		return fmt.Errorf("-scale-pods %d must be a positive multiple of -scale-pods-per-gang %d", c.scalePods, c.scalePodsPerGang)
	}
	if c.scaleNodes*c.scaleGPUs < c.scalePods || c.scaleNodes*110 < c.scalePods {
		return fmt.Errorf("%d scale nodes × %d GPUs (110 pods each) cannot hold the %d pods of a scale run at once", c.scaleNodes, c.scaleGPUs, c.scalePods)
	}
	if c.steps["scale20k"] && (c.scale20kPods < c.scalePodsPerGang || c.scale20kPods%c.scalePodsPerGang != 0 ||
		c.scale20kNodes*c.scaleGPUs < c.scale20kPods || c.scale20kNodes*110 < c.scale20kPods) {
		return fmt.Errorf("-scale20k-pods %d must be a multiple of -scale-pods-per-gang %d that %d nodes × %d GPUs (110 pods each) hold at once", c.scale20kPods, c.scalePodsPerGang, c.scale20kNodes, c.scaleGPUs)
	}
	if c.steps["topology"] {
		if err := c.topology.Check(); err != nil {
			return err
		}
	}
	if c.otherBinary != "" && c.render == "" {
		if c.other, err = bench.LoadOtherScheduler(c.otherBinary, c.otherConfig, c.otherName, c.otherPodGroups); err != nil {
			return err
		}
		c.other.ConfigPath = inRepo(root, c.other.ConfigPath)
	} else if c.otherConfig != "" || c.otherName != "" || c.otherPodGroups {
		return fmt.Errorf("-other-scheduler-config, -name and -podgroups need -other-scheduler-binary")
	}
	for _, f := range []string{c.results, c.microOut, c.report, c.chart, c.raw} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
	}
	if c.render != "" {
		r, err := bench.ReadReport(c.render)
		if err != nil {
			return err
		}
		return write(c, r)
	}
	pins := bench.PinnedVersions("hack/versions.mk")
	r := &bench.Report{
		Started: time.Now(), Machine: bench.ReadMachine(),
		Versions: bench.Versions{Go: runtime.Version(), Workmap: bench.GitCommit(root, outputsInRepo(root, c.results, c.microOut, c.report, c.chart, c.raw)...), Kwok: pins["KWOK_VERSION"], JobSet: pins["JOBSET_VERSION"]},
		Commands: []string{"make bench", strings.TrimSpace("go run ./bench/cmd/bench " + strings.Join(os.Args[1:], " "))},
		Throughput: bench.ThroughputSetup{Gangs: c.gangs, PodsPerGang: c.podsPerGang, Nodes: c.nodes, GPUsPerNode: c.gpus, Pairs: c.pairs,
			Modes: modes, QPS: float32(c.qps), Burst: int32(c.burst), CreateQPS: float32(c.createQPS), CreateWorkers: c.createWorkers,
			HighQPS: float32(c.highQPS), HighBurst: int32(c.highBurst), HighPairs: c.highPairs, HighGangs: c.highGangs,
			Other: c.other, BarePairs: c.barePairs, BareModes: bareModes, Quiet: c.quiet,
			Scale: bench.ScaleSetup{Pods: c.scalePods, PodsPerGang: c.scalePodsPerGang, Nodes: c.scaleNodes, GPUsPerNode: c.scaleGPUs, Pairs: c.scalePairs}},
		Topology: c.topology,
	}
	if c.other != nil {
		r.Versions.Other = bench.BinaryVersion(c.other.Binary)
	}
	ctx := context.Background()
	failed := false
	if c.steps["micro"] {
		failed = !micro(ctx, c, r) || failed
	}
	if c.steps["throughput"] || c.steps["bare"] || c.steps["cli"] || c.steps["memory"] {
		failed = !onCluster(ctx, c, r) || failed
	}
	if c.steps["native137"] {
		failed = !native137(ctx, c, r) || failed
	}
	if c.steps["scale"] {
		failed = !scale(ctx, c, r) || failed
	}
	if c.steps["scale20k"] {
		failed = !scale20k(ctx, c, r) || failed
	}
	if c.steps["topology"] {
		failed = !topology(ctx, c, r) || failed
	}
	if c.steps["requeue"] {
		failed = !requeue(ctx, c, r) || failed
	}
	if c.steps["preemption"] {
		failed = !preemption(ctx, c, r) || failed
	}
	r.Finished = time.Now()
	r.Machine.LoadAfter = bench.LoadAverage()
	var ran []string
	for _, s := range allSteps {
		if c.steps[s] {
			ran = append(ran, s)
		}
	}
	r.Stamp(ran)
	if c.keep && len(ran) < len(allSteps) {
		if prev, err := bench.ReadReport(c.raw); err == nil {
			step("Keeping the numbers of the steps not run from %s", c.raw)
			r.CarryOver(prev, ran)
		} else if !os.IsNotExist(err) {
			return fmt.Errorf("keeping the steps not run: %w (-keep=false leaves them empty)", err)
		}
	}
	if err := write(c, r); err != nil {
		return err
	}
	if failed {
		return fmt.Errorf("a step failed; see %s", c.report)
	}
	return nil
}

func write(c config, r *bench.Report) error {
	step("Writing %s, %s, %s, %s", c.results, c.report, c.chart, c.raw)
	if err := bench.WriteJSON(c.results, r.Results()); err != nil {
		return err
	}
	if c.render == "" {
		if err := bench.WriteJSON(c.raw, r); err != nil {
			return err
		}
	}
	chartRel, err := filepath.Rel(filepath.Dir(c.report), c.chart)
	if err != nil {
		return err
	}
	t := r.Throughput
	other := ""
	if t.Other != nil {
		other = t.Other.Name
	}
	svg := bench.ThroughputSVG(r.Runs, t.Modes, fmt.Sprintf("Pods bound over time: %d gangs × %d pods, qps %g burst %d, every run", t.Gangs, t.PodsPerGang, t.QPS, t.Burst), other)
	if err := os.WriteFile(c.chart, svg, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.report, []byte(r.Markdown(chartRel)), 0o644); err != nil {
		return err
	}
	data, err := os.ReadFile(c.results)
	if err == nil {
		fmt.Printf("%s", data)
	}
	return err
}

// outputsInRepo are the bench's output files that lie inside the repository, relative to its
// root: what a run writes does not make the next run's checkout dirty.
func outputsInRepo(root string, files ...string) []string {
	var out []string
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			continue
		}
		if rel := inRepo(root, abs); !filepath.IsAbs(rel) {
			out = append(out, rel)
		}
	}
	return out
}

// inRepo shows a path inside the repository relative to its root (for the report).
func inRepo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func withLimits(cfg *rest.Config, qps float32, burst int) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	return cfg
}

func parseModes(s string) ([]bench.Mode, error) {
	var out []bench.Mode
	for _, m := range strings.Split(s, ",") {
		switch mode := bench.Mode(strings.TrimSpace(m)); mode {
		case bench.Running, bench.Backlog:
			out = append(out, mode)
		case "":
		default:
			return nil, fmt.Errorf("unknown mode %q (want running, backlog)", m)
		}
	}
	return out, nil
}

func step(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

// mostGangs is the most gangs a throughput run has: the main runs' or the high-qps repeat's.
func (c config) mostGangs() int {
	if c.highPairs > 0 {
		return max(c.gangs, c.highGangs)
	}
	return c.gangs
}
