package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// preemption is the preemption step, on a control plane of its own: a cluster full of
// low-priority gangs, then high-priority gangs that can only fit by preempting them. With
// -native the control plane is Kubernetes 1.37's with native gangs on, and after
// workmap-scheduler (B) the same runs again as row D: kube-scheduler with native PodGroups and
// Kubernetes' own workload-aware preemption.
func preemption(ctx context.Context, c config, r *bench.Report) bool {
	s := c.preemption
	s.QPS, s.Burst = float32(c.highQPS), int32(c.highBurst)
	release, schedulers := harness.Release136, "workmap-scheduler"
	if c.native {
		release, schedulers = harness.Release137, "workmap-scheduler then kube-scheduler with native gangs"
	}
	step("Gang preemption: %d kwok nodes × %d GPUs filled by as many low-priority gangs of %d, then %d high-priority gangs of %d whole-node pods (a control plane of its own, Kubernetes %s), %s at qps %g burst %d",
		s.Nodes, s.GPUsPerNode, s.LowGangSize, s.HighGangs, s.HighGangSize, release.Version, schedulers, s.QPS, s.Burst)
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	err := runner.Step(func() error {
		cl := harness.Start(runner, harness.Options{NoScheduler: true, NativeGangs: c.native, Release: release, Nodes: []harness.Node{}})
		if v, err := cl.Kube.Discovery().ServerVersion(); err == nil && c.native {
			r.Versions.Kubernetes137 = v.GitVersion
		}
		nodes := make([]harness.Node, s.Nodes)
		for i := range nodes {
			nodes[i] = harness.Node{Name: fmt.Sprintf("preempt-node-%d", i), GPUs: int64(s.GPUsPerNode)}
		}
		if err := bench.AddNodes(ctx, runner, cl, nodes, c.scaleNodeWorkers); err != nil {
			return fmt.Errorf("creating the nodes: %w", err)
		}
		if err := bench.WaitNodesReady(ctx, cl.Kube, len(nodes), c.scaleNodeWorkers); err != nil {
			return err
		}
		clients := withLimits(cl.Config, float32(c.createQPS), int(c.createQPS))
		opts := bench.PreemptionOptions{PreemptionSetup: s, Namespace: "preempt", Timeout: c.preemptionTimeout,
			Kube: kubernetes.NewForConfigOrDie(clients), PodGroups: dynamic.NewForConfigOrDie(clients)}

		sched := cl.StartWorkmapScheduler(harness.SchedulerOptions{QPS: s.QPS, Burst: s.Burst, Args: []string{harness.OpenEndpointsFlag}})
		opts.Metrics = sched.Metrics
		opts.Profile = profileTo(c.cpuProfiles, "B", sched.CPUProfile)
		res, err := bench.MeasurePreemption(ctx, opts)
		sched.Stop()
		r.Preemption = res
		if err != nil || !c.native {
			return err
		}
		printPreemption("B", res)
		step("Deleting B's gangs; the same with Kubernetes' own gangs and workload-aware preemption (D)")
		if err := bench.DeleteGangs(ctx, opts.Kube, opts.Namespace); err != nil {
			return err
		}
		native := cl.StartKubeScheduler(harness.KubeSchedulerOptions{QPS: s.QPS, Burst: s.Burst, FeatureGates: release.NativeGangGates, Args: []string{harness.OpenEndpointsFlag}})
		defer native.Stop()
		opts.Metrics, opts.Namespace, opts.Native = native.Metrics, "preempt-native", release.NativePodGroups()
		opts.Profile = profileTo(c.cpuProfiles, "D", native.CPUProfile)
		r.PreemptionNative, err = bench.MeasurePreemption(ctx, opts)
		if r.PreemptionNative != nil {
			printPreemption("D", r.PreemptionNative)
		}
		return err
	})
	if err != nil {
		r.PreemptionErr = err.Error()
		return false
	}
	if !c.native {
		printPreemption("B", r.Preemption)
	}
	return true
}

// printPreemption prints what one scheduler's preemption run measured.
func printPreemption(row string, res *bench.PreemptionResult) {
	fmt.Printf("  %s: preemption attempts p50 %.2f ms, p99 %.2f ms over %.0f; %d preemptions took %d pods (%d whole gangs), %.2f per gang; futile %d, victim gangs left in part %d\n",
		row, res.AttemptP50Ms, res.AttemptP99Ms, res.Attempts, res.Preemptions, res.VictimPods, res.VictimGangs, res.VictimsPerGang, res.Futile, res.PartialVictimGangs)
}

// profileTo is how the preemption step records a scheduler's CPU profile into dir (nil: dir
// is empty, no profile is recorded).
func profileTo(dir, row string, record func(context.Context, time.Duration) ([]byte, error)) *bench.Profile {
	if dir == "" {
		return nil
	}
	return &bench.Profile{Path: filepath.Join(dir, "preemption-"+row+".pprof"), Record: record}
}
