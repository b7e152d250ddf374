package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// scale is the scale row, on a control plane of its own (started after the main one is
// torn down, so that its many nodes and their heartbeats weigh on no other row): the nodes
// are created in parallel, then A and B (and O) drain the same backlog in alternating runs.
func scale(ctx context.Context, c config, r *bench.Report) bool {
	sc := r.Throughput.Scale
	if sc.Pairs == 0 {
		return true
	}
	step("Scale: %d pods in gangs of %d on %d kwok nodes × %d GPUs (a control plane of its own), backlog mode, %d pair(s), %v at qps %g burst %d",
		sc.Pods, sc.PodsPerGang, sc.Nodes, sc.GPUsPerNode, sc.Pairs, scaleSchedulers(c), c.qps, c.burst)
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var cl *harness.Cluster
	err := runner.Step(func() error {
		cl = harness.Start(runner, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
		return nil
	})
	if err != nil {
		r.ScaleErr = err.Error()
		return false
	}
	start := time.Now()
	nodesCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := bench.AddNodes(nodesCtx, runner, cl, bench.ScaleNodes(sc.Nodes, int64(sc.GPUsPerNode)), c.scaleNodeWorkers); err != nil {
		r.ScaleErr = "creating the nodes: " + err.Error()
		return false
	}
	created := time.Since(start)
	if err := bench.WaitNodesReady(nodesCtx, cl.Kube, sc.Nodes, c.scaleNodeWorkers); err != nil {
		r.ScaleErr = err.Error()
		return false
	}
	r.ScaleNodesSeconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	fmt.Printf("  %d nodes created in %.1fs, all Ready and untainted %.1fs after the start\n", sc.Nodes, created.Seconds(), r.ScaleNodesSeconds)
	creator := kubernetes.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))
	r.ScaleRuns = bench.RunThroughput(ctx, runner, cl, bench.ThroughputOptions{
		Gangs: sc.Pods / sc.PodsPerGang, PodsPerGang: sc.PodsPerGang, Pairs: sc.Pairs, Modes: []bench.Mode{bench.Backlog},
		QPS: float32(c.qps), Burst: int32(c.burst), CreateWorkers: c.createWorkers, Creator: creator,
		Timeout: c.scaleTimeout, Log: os.Stdout, Namespace: "scale", Schedulers: scaleSchedulers(c), Other: c.other, PodGroupCreator: podGroupCreator(c, cl),
	})
	step("Tearing down the scale control plane")
	if err := firstError(r.ScaleRuns); err != "" {
		r.ScaleErr = err
		return false
	}
	return true
}
