package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// micro runs the testing.B benchmarks, and profiles the per-pod decision when it misses its
// target.
func micro(ctx context.Context, c config, r *bench.Report) bool {
	step("Micro-benchmarks")
	// Every benchmark of definitions and grouper; of plugin, the placement of a gang that asks
	// for a rack (its other benchmarks are the scheduler's own path, measured end to end by
	// the throughput runs).
	sets := []bench.MicroOptions{
		{Dir: ".", Packages: []string{"./definitions/...", "./grouper/..."}, Count: c.microCount, Benchtime: c.microBenchtime},
		{Dir: ".", Packages: []string{"./plugin"}, Bench: "^(" + bench.PlacementBenchmark + "|" + bench.PreemptionBenchmark + ")$", Count: c.microCount, Benchtime: c.microBenchtime},
	}
	var raw []byte
	var err error
	for _, o := range sets {
		r.Commands = append(r.Commands, "go "+strings.Join(o.Args(), " "))
		out, res, rerr := bench.RunMicro(ctx, o, os.Stdout)
		raw = append(raw, out...)
		r.Micro = append(r.Micro, res...)
		if rerr != nil && err == nil {
			err = rerr
		}
	}
	if werr := os.WriteFile(c.microOut, raw, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		r.MicroErr = err.Error()
		return false
	}
	if d, ok := bench.Find(r.Micro, bench.DecisionBenchmark); ok && d.NsPerOp > bench.TargetDecisionNs {
		step("Profiling %s (above its target)", bench.DecisionBenchmark)
		prof, err := bench.TopAllocations(ctx, ".", "./grouper", bench.DecisionBenchmark, 12)
		if err != nil {
			fmt.Println("   ", err)
		}
		r.DecisionProfile = prof
	}
	return true
}

// onCluster starts the control plane and runs the chosen steps on it.
func onCluster(ctx context.Context, c config, r *bench.Report) bool {
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var cl *harness.Cluster
	gates := ""
	if c.native {
		gates = " (native gang scheduling on: " + harness.NativeGangGates + ")"
	}
	step("Starting a local control plane%s: %d kwok nodes × %d GPUs, JobSet controller, no scheduler", gates, c.nodes, c.gpus)
	err := runner.Step(func() error {
		nodes := make([]harness.Node, c.nodes)
		for i := range nodes {
			nodes[i] = harness.Node{Name: fmt.Sprintf("bench-node-%d", i), GPUs: int64(c.gpus)}
		}
		cl = harness.Start(runner, harness.Options{JobSet: true, NoScheduler: true, NativeGangs: c.native, Nodes: nodes})
		return nil
	})
	if err != nil {
		r.ThroughputErr, r.CLIErr, r.MemoryErr = err.Error(), err.Error(), err.Error()
		return false
	}
	if v, err := cl.Kube.Discovery().ServerVersion(); err == nil {
		r.Versions.Kubernetes = v.GitVersion
	}
	r.Versions.KubeScheduler = bench.BinaryVersion(filepath.Join(harness.BinDir(runner), "kube-scheduler"))
	creator := kubernetes.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))
	ok := true
	if c.steps["throughput"] && !throughput(ctx, c, r, runner, cl, creator) {
		ok = false
	}
	if c.steps["bare"] && !bare(ctx, c, r, runner, cl, creator) {
		ok = false
	}
	if c.steps["cli"] && !cli(ctx, c, r, runner, cl) {
		ok = false
	}
	if c.steps["memory"] && !memory(ctx, c, r, runner, cl, creator) {
		ok = false
	}
	step("Tearing down the control plane")
	return ok
}

// schedulers are the schedulers that alternate in the gang comparisons: A, B, D and E
// (with -native), and O when configured.
func schedulers(c config) []bench.Scheduler {
	out := []bench.Scheduler{bench.Plain, bench.Gang}
	if c.native {
		out = append(out, bench.Native, bench.GangWebhook)
	}
	if c.other != nil {
		out = append(out, bench.Other)
	}
	return out
}

// scaleSchedulers are the schedulers of the scale row: A, B, and O when configured. Its
// control plane has neither the native gang gates nor workmap-webhook, so D and E do not run
// there.
func scaleSchedulers(c config) []bench.Scheduler {
	return slices.DeleteFunc(schedulers(c), bench.Scheduler.UsesWebhook)
}

// podGroupCreator is the bench's client for O's PodGroups (nil when O needs none).
func podGroupCreator(c config, cl *harness.Cluster) dynamic.Interface {
	if c.other == nil || !c.other.PodGroups {
		return nil
	}
	return dynamic.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))
}

// throughput compares the schedulers, then repeats the headline mode at higher limits.
func throughput(ctx context.Context, c config, r *bench.Report, runner *bench.Runner, cl *harness.Cluster, creator kubernetes.Interface) bool {
	step("Scheduler throughput: %d gangs × %d pods, %d pairs per mode %v, %v at qps %g burst %d", c.gangs, c.podsPerGang, c.pairs, r.Throughput.Modes, schedulers(c), c.qps, c.burst)
	if c.native {
		if err := runner.Step(func() error { return startWebhook(ctx, c, cl) }); err != nil {
			r.ThroughputErr = err.Error()
			return false
		}
	}
	pgs := podGroupCreator(c, cl)
	r.Runs = bench.RunThroughput(ctx, runner, cl, bench.ThroughputOptions{
		Gangs: c.gangs, PodsPerGang: c.podsPerGang, Pairs: c.pairs, Modes: r.Throughput.Modes,
		QPS: float32(c.qps), Burst: int32(c.burst), CreateWorkers: c.createWorkers, Creator: creator,
		Timeout: c.runTimeout, Log: os.Stdout, Quiet: c.quiet, Schedulers: schedulers(c), Other: c.other, PodGroupCreator: pgs,
	})
	if c.highPairs > 0 {
		mode := r.HeadlineMode()
		step("Throughput again in %s mode at qps %g burst %d: %d gangs × %d pods, %d pairs", mode, c.highQPS, c.highBurst, c.highGangs, c.podsPerGang, c.highPairs)
		r.HighRuns = bench.RunThroughput(ctx, runner, cl, bench.ThroughputOptions{
			Gangs: c.highGangs, PodsPerGang: c.podsPerGang, Pairs: c.highPairs, Modes: []bench.Mode{mode},
			QPS: float32(c.highQPS), Burst: int32(c.highBurst), CreateWorkers: c.createWorkers, Creator: creator,
			Timeout: c.runTimeout, Log: os.Stdout, Quiet: c.quiet, Namespace: "hi", Schedulers: schedulers(c), Other: c.other, PodGroupCreator: pgs,
			Profiles: c.cpuProfiles, ProfileFor: c.cpuProfileFor,
		})
	}
	if err := firstError(append(r.Runs, r.HighRuns...)); err != "" {
		r.ThroughputErr = err
		return false
	}
	return true
}

// bare is row C: workmap-scheduler against kube-scheduler on bare pods (no owner, no gang).
func bare(ctx context.Context, c config, r *bench.Report, runner *bench.Runner, cl *harness.Cluster, creator kubernetes.Interface) bool {
	t := r.Throughput
	step("Row C: %d bare pods (no owner, no gang), %d pairs per mode %v, kube-scheduler and workmap-scheduler at qps %g burst %d", c.gangs*c.podsPerGang, t.BarePairs, t.BareModes, c.qps, c.burst)
	r.BareRuns = bench.RunThroughput(ctx, runner, cl, bench.ThroughputOptions{
		Gangs: c.gangs, PodsPerGang: c.podsPerGang, Pairs: t.BarePairs, Modes: t.BareModes,
		QPS: float32(c.qps), Burst: int32(c.burst), CreateWorkers: c.createWorkers, Creator: creator,
		Timeout: c.runTimeout, Log: os.Stdout, Quiet: c.quiet, Namespace: "bare", Bare: true,
	})
	if err := firstError(r.BareRuns); err != "" {
		r.BareErr = err
		return false
	}
	return true
}

// firstError says which run failed first ("" when none did).
func firstError(runs []bench.Run) string {
	for _, run := range runs {
		if run.Error != "" {
			return fmt.Sprintf("a run failed (%s, %s, pair %d): %s", run.Mode, run.Scheduler, run.Pair, run.Error)
		}
	}
	return ""
}

// cli measures `workmap tree` on one large workload.
func cli(ctx context.Context, c config, r *bench.Report, runner *bench.Runner, cl *harness.Cluster) bool {
	step("CLI: workmap tree on a JobSet of %d × %d pods", c.cliJobs, c.cliPodsPerJob)
	err := runner.Step(func() error {
		res, err := bench.MeasureCLI(ctx, cl, bench.CLIOptions{Workmap: c.workmap, Jobs: c.cliJobs, PodsPerJob: c.cliPodsPerJob, Runs: c.cliRuns, Timeout: 15 * time.Minute, Log: os.Stdout})
		if err == nil {
			r.CLI = &res
			fmt.Printf("  %d requests, %.0f ms (median of %v)\n", res.Requests, res.Ms, res.RunsMs)
		}
		return err
	})
	if err != nil {
		r.CLIErr = err.Error()
		return false
	}
	return true
}

// memory measures the grouper's heap per tracked pod.
func memory(ctx context.Context, c config, r *bench.Report, runner *bench.Runner, cl *harness.Cluster, creator kubernetes.Interface) bool {
	step("Grouper memory: %d pods in gangs of %d", c.memoryPods, c.memoryGang)
	err := runner.Step(func() error {
		res, err := bench.MeasureGrouperMemory(ctx, cl, bench.MemoryOptions{Pods: c.memoryPods, PodsPerGang: c.memoryGang, QPS: 1000, Burst: 1000,
			CreateWorkers: c.createWorkers, Creator: creator, Timeout: 15 * time.Minute, Log: os.Stdout})
		if err == nil {
			r.Memory = &res
			fmt.Printf("  %.0f bytes per pod (heap %d → %d, filled in %.0fs)\n", res.BytesPerPod, res.HeapBefore, res.HeapAfter, res.FillSeconds)
		}
		return err
	})
	if err != nil {
		r.MemoryErr = err.Error()
		return false
	}
	return true
}
