// Command bench is `make bench`: it runs workmap's micro-benchmarks, then starts a local
// control plane (harness: etcd, kube-apiserver, kube-controller-manager, kwok GPU nodes, the
// JobSet controller) and measures scheduler throughput (plain kube-scheduler against
// workmap-scheduler, alternating runs), `workmap tree` on 1,000 pods and the grouper's memory
// per pod. It writes bench/results.json, bench/micro.txt, docs/benchmarks.md and
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
	createQPS                        float64
	createWorkers                    int
	runTimeout                       time.Duration
	cliJobs, cliPodsPerJob, cliRuns  int
	memoryPods, memoryGang           int
	workmap                          string
	results, microOut, report, chart string
	raw, render                      string
}

func main() {
	var c config
	steps := flag.String("steps", "micro,throughput,cli,memory", "what to measure: micro (testing.B), and on a local control plane throughput, cli, memory")
	flag.IntVar(&c.microCount, "micro-count", 5, "go test -count for the micro-benchmarks")
	flag.StringVar(&c.microBenchtime, "micro-benchtime", "", "go test -benchtime for the micro-benchmarks (default go test's)")
	flag.IntVar(&c.gangs, "gangs", 48, "throughput: gangs (Jobs) per run")
	flag.IntVar(&c.podsPerGang, "pods-per-gang", 8, "throughput: pods per gang")
	flag.IntVar(&c.nodes, "nodes", 0, "throughput: kwok nodes (default: enough for every pod of a run)")
	flag.IntVar(&c.gpus, "gpus-per-node", 16, "throughput: GPUs per kwok node (each pod asks for one)")
	flag.IntVar(&c.pairs, "pairs", 3, "throughput: A/B pairs of runs per mode")
	flag.StringVar(&c.modes, "modes", "running,backlog", "throughput modes: running (pods created while the scheduler runs), backlog (pods first, then the scheduler)")
	flag.Float64Var(&c.qps, "qps", 50, "both schedulers' clientConnection.qps")
	flag.IntVar(&c.burst, "burst", 100, "both schedulers' clientConnection.burst")
	flag.Float64Var(&c.highQPS, "high-qps", 500, "throughput: then repeat the headline mode with both schedulers at this qps, to see whether the limits bound the runs")
	flag.IntVar(&c.highBurst, "high-burst", 1000, "throughput: burst of the repeat at -high-qps")
	flag.IntVar(&c.highPairs, "high-pairs", 1, "throughput: pairs of the repeat at -high-qps (0: no repeat)")
	flag.Float64Var(&c.createQPS, "create-qps", 1000, "qps (and burst) of the bench's own client that creates pods")
	flag.IntVar(&c.createWorkers, "create-workers", 8, "gangs created in parallel")
	flag.DurationVar(&c.runTimeout, "run-timeout", 5*time.Minute, "limit of one throughput run")
	flag.IntVar(&c.cliJobs, "cli-jobs", 10, "CLI: Jobs of the JobSet")
	flag.IntVar(&c.cliPodsPerJob, "cli-pods-per-job", 100, "CLI: pods per Job")
	flag.IntVar(&c.cliRuns, "cli-runs", 5, "CLI: timed runs of workmap tree")
	flag.IntVar(&c.memoryPods, "memory-pods", 10000, "grouper memory: pods in the informers")
	flag.IntVar(&c.memoryGang, "memory-gang", 8, "grouper memory: pods per gang")
	flag.StringVar(&c.workmap, "workmap", "bin/workmap", "the workmap CLI binary")
	flag.StringVar(&c.results, "results", "bench/results.json", "where the results go")
	flag.StringVar(&c.microOut, "micro-out", "bench/micro.txt", "where the raw go test -bench output goes")
	flag.StringVar(&c.report, "report", "docs/benchmarks.md", "the Markdown report")
	flag.StringVar(&c.chart, "chart", "docs/benchmarks-throughput.svg", "the throughput chart")
	flag.StringVar(&c.raw, "raw", "bench/raw.json", "where everything measured goes (the report's input)")
	flag.StringVar(&c.render, "render", "", "measure nothing: render the results, report and chart again from this raw file")
	flag.Parse()
	c.steps = map[string]bool{}
	for _, s := range strings.Split(*steps, ",") {
		switch s = strings.TrimSpace(s); s {
		case "micro", "throughput", "cli", "memory":
			c.steps[s] = true
		case "":
		default:
			fmt.Fprintf(os.Stderr, "bench: unknown step %q (want micro, throughput, cli, memory)\n", s)
			os.Exit(2)
		}
	}
	if c.nodes == 0 {
		c.nodes = (c.gangs*c.podsPerGang + c.gpus - 1) / c.gpus
	}
	ctrllog.SetLogger(klog.NewKlogr()) // envtest and the grouper's client log through controller-runtime
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.render != "" {
		abs, err := filepath.Abs(c.render)
		if err != nil {
			return err
		}
		c.render = abs
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
	if c.nodes*c.gpus < c.gangs*c.podsPerGang {
		return fmt.Errorf("%d nodes × %d GPUs cannot hold the %d pods of a run at once", c.nodes, c.gpus, c.gangs*c.podsPerGang)
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
		Versions: bench.Versions{Go: runtime.Version(), Workmap: bench.GitCommit(root), Kwok: pins["KWOK_VERSION"], JobSet: pins["JOBSET_VERSION"]},
		Commands: []string{"make bench", strings.TrimSpace("go run ./bench/cmd/bench " + strings.Join(os.Args[1:], " "))},
		Throughput: bench.ThroughputSetup{Gangs: c.gangs, PodsPerGang: c.podsPerGang, Nodes: c.nodes, GPUsPerNode: c.gpus, Pairs: c.pairs,
			Modes: modes, QPS: float32(c.qps), Burst: int32(c.burst), CreateQPS: float32(c.createQPS), CreateWorkers: c.createWorkers,
			HighQPS: float32(c.highQPS), HighBurst: int32(c.highBurst), HighPairs: c.highPairs},
	}
	ctx := context.Background()
	failed := false
	if c.steps["micro"] {
		failed = !micro(ctx, c, r) || failed
	}
	if c.steps["throughput"] || c.steps["cli"] || c.steps["memory"] {
		failed = !onCluster(ctx, c, r) || failed
	}
	r.Finished = time.Now()
	r.Machine.LoadAfter = bench.LoadAverage()
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
	svg := bench.ThroughputSVG(r.Runs, t.Modes, fmt.Sprintf("Pods bound over time: %d gangs × %d pods, qps %g burst %d, every run", t.Gangs, t.PodsPerGang, t.QPS, t.Burst))
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
