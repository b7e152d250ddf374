package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// native137 is row D again on Kubernetes 1.37: a control plane of its own running 1.37's API
// server, controller manager and kube-scheduler (native gangs are scheduling.k8s.io/v1beta1
// behind GenericWorkload there), the same nodes and gangs as the throughput step, and A, B and
// D alternating in the headline mode. B is workmap-scheduler on its 1.36 framework against
// that API server, one minor newer.
func native137(ctx context.Context, c config, r *bench.Report) bool {
	if !c.native {
		return true
	}
	mode := r.HeadlineMode()
	scheds := []bench.Scheduler{bench.Plain, bench.Gang, bench.Native}
	step("Row D on Kubernetes %s (a control plane of its own, native gang scheduling on: %s): %d kwok nodes × %d GPUs, %d gangs × %d pods, %d pairs in %s mode, %v at qps %g burst %d",
		harness.Release137.Version, harness.Release137.NativeGangGates, c.nodes, c.gpus, c.gangs, c.podsPerGang, c.pairs, mode, scheds, c.qps, c.burst)
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var cl *harness.Cluster
	err := runner.Step(func() error {
		nodes := make([]harness.Node, c.nodes)
		for i := range nodes {
			nodes[i] = harness.Node{Name: fmt.Sprintf("bench-node-%d", i), GPUs: int64(c.gpus)}
		}
		cl = harness.Start(runner, harness.Options{NoScheduler: true, NativeGangs: true, Release: harness.Release137, Nodes: nodes})
		return nil
	})
	if err != nil {
		r.Native137Err = err.Error()
		return false
	}
	if v, err := cl.Kube.Discovery().ServerVersion(); err == nil {
		r.Versions.Kubernetes137 = v.GitVersion
	}
	if err := runner.Step(func() error { return startWebhook(ctx, c, cl) }); err != nil {
		r.Native137Err = err.Error()
		return false
	}
	creator := kubernetes.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))
	r.Native137Runs = bench.RunThroughput(ctx, runner, cl, bench.ThroughputOptions{
		Gangs: c.gangs, PodsPerGang: c.podsPerGang, Pairs: c.pairs, Modes: []bench.Mode{mode},
		QPS: float32(c.qps), Burst: int32(c.burst), CreateWorkers: c.createWorkers, Creator: creator,
		Timeout: c.runTimeout, Log: os.Stdout, Quiet: c.quiet, Namespace: "v137", Schedulers: scheds,
	})
	step("Tearing down the Kubernetes %s control plane", harness.Release137.Version)
	if err := firstError(r.Native137Runs); err != "" {
		r.Native137Err = err
		return false
	}
	return true
}
