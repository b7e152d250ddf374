package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// preemption is the preemption step, on a control plane of its own: a cluster full of
// low-priority gangs, then high-priority gangs that can only fit by preempting them.
func preemption(ctx context.Context, c config, r *bench.Report) bool {
	s := c.preemption
	s.QPS, s.Burst = float32(c.highQPS), int32(c.highBurst)
	step("Gang preemption: %d kwok nodes × %d GPUs filled by as many low-priority gangs of %d, then %d high-priority gangs of %d whole-node pods (a control plane of its own), workmap-scheduler at qps %g burst %d",
		s.Nodes, s.GPUsPerNode, s.LowGangSize, s.HighGangs, s.HighGangSize, s.QPS, s.Burst)
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var res *bench.PreemptionResult
	err := runner.Step(func() error {
		cl := harness.Start(runner, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
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
		sched := cl.StartWorkmapScheduler(harness.SchedulerOptions{QPS: s.QPS, Burst: s.Burst, Args: []string{harness.OpenMetricsFlag}})
		defer sched.Stop()
		clients := withLimits(cl.Config, float32(c.createQPS), int(c.createQPS))
		var err error
		res, err = bench.MeasurePreemption(ctx, bench.PreemptionOptions{
			PreemptionSetup: s, Namespace: "preempt", Timeout: c.preemptionTimeout, Metrics: sched.Metrics,
			Kube: kubernetes.NewForConfigOrDie(clients), PodGroups: dynamic.NewForConfigOrDie(clients),
		})
		return err
	})
	r.Preemption = res
	if err != nil {
		r.PreemptionErr = err.Error()
		return false
	}
	fmt.Printf("  PostFilter p50 %.2f ms, p99 %.2f ms over %.0f cycles; %d preemptions took %d pods (%d whole gangs), %.2f per gang; futile %d, victim gangs left in part %d\n",
		res.AttemptP50Ms, res.AttemptP99Ms, res.Attempts, res.Preemptions, res.VictimPods, res.VictimGangs, res.VictimsPerGang, res.Futile, res.PartialVictimGangs)
	return true
}
