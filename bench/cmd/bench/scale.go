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

// scale is the scale row (its numbers stay in the report's original scale fields).
func scale(ctx context.Context, c config, r *bench.Report) bool {
	row := scaleRow(ctx, c, "Scale", "scale", r.Throughput.Scale)
	r.ScaleRuns, r.ScaleErr, r.ScaleNodesSeconds = row.Runs, row.Err, row.NodesSeconds
	return row.Err == ""
}

// scale20k is the large scale row.
func scale20k(ctx context.Context, c config, r *bench.Report) bool {
	sc := bench.ScaleSetup{Pods: c.scale20kPods, PodsPerGang: c.scalePodsPerGang, Nodes: c.scale20kNodes, GPUsPerNode: c.scaleGPUs, Pairs: c.scale20kPairs}
	row := scaleRow(ctx, c, "Large scale", "scale20k", sc)
	r.Scale20k = &row
	return row.Err == ""
}

// scaleRow runs a scale row on a control plane of its own (started after the one before it
// is torn down, so that its many nodes and their heartbeats weigh on no other row): the
// nodes are created in parallel, then A and B (and O) drain the same backlog in alternating
// runs. Where the machine cannot hold the row, its error says what broke.
func scaleRow(ctx context.Context, c config, title, namespace string, sc bench.ScaleSetup) bench.ScaleRow {
	row := bench.ScaleRow{Setup: sc}
	if sc.Pairs == 0 {
		return row
	}
	step("%s: %d pods in gangs of %d on %d kwok nodes × %d GPUs (a control plane of its own), backlog mode, %d pair(s), %v at qps %g burst %d",
		title, sc.Pods, sc.PodsPerGang, sc.Nodes, sc.GPUsPerNode, sc.Pairs, scaleSchedulers(c), c.qps, c.burst)
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var cl *harness.Cluster
	err := runner.Step(func() error {
		cl = harness.Start(runner, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
		return nil
	})
	if err != nil {
		row.Err = err.Error()
		return row
	}
	start := time.Now()
	nodesCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := bench.AddNodes(nodesCtx, runner, cl, bench.ScaleNodes(sc.Nodes, int64(sc.GPUsPerNode)), c.scaleNodeWorkers); err != nil {
		row.Err = "creating the nodes: " + err.Error()
		return row
	}
	created := time.Since(start)
	if err := bench.WaitNodesReady(nodesCtx, cl.Kube, sc.Nodes, c.scaleNodeWorkers); err != nil {
		row.Err = err.Error()
		return row
	}
	row.NodesSeconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	fmt.Printf("  %d nodes created in %.1fs, all Ready and untainted %.1fs after the start\n", sc.Nodes, created.Seconds(), row.NodesSeconds)
	creator := kubernetes.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))
	row.Runs = bench.RunThroughput(ctx, runner, cl, bench.ThroughputOptions{
		Gangs: sc.Pods / sc.PodsPerGang, PodsPerGang: sc.PodsPerGang, Pairs: sc.Pairs, Modes: []bench.Mode{bench.Backlog},
		QPS: float32(c.qps), Burst: int32(c.burst), CreateWorkers: c.createWorkers, Creator: creator,
		Timeout: c.scaleTimeout, Log: os.Stdout, Quiet: c.quiet, Namespace: namespace, Schedulers: scaleSchedulers(c), Other: c.other, PodGroupCreator: podGroupCreator(c, cl),
	})
	step("Tearing down the %s control plane", namespace)
	row.Err = firstError(row.Runs)
	return row
}
