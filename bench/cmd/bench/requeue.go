package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// requeue is the requeue step, on a control plane of its own: how soon gangs backed off after
// failed attempts are bound once the pods that blocked them are deleted.
func requeue(ctx context.Context, c config, r *bench.Report) bool {
	s := bench.RequeueSetup{Gangs: c.requeueGangs, GPUsPerNode: 8, SpacingSeconds: c.requeueSpacing.Seconds()}
	step("Retry when room appears: %d gangs backed off on %d full nodes (a control plane of its own), their blocking pods deleted one every %s", s.Gangs, s.Gangs, c.requeueSpacing)
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var res *bench.RequeueResult
	err := runner.Step(func() error {
		nodes := make([]harness.Node, s.Gangs)
		for i := range nodes {
			nodes[i] = harness.Node{Name: bench.RequeueNode(i), GPUs: int64(s.GPUsPerNode)}
		}
		cl := harness.Start(runner, harness.Options{NoScheduler: true, Nodes: nodes})
		sched := cl.StartWorkmapScheduler(harness.SchedulerOptions{QPS: float32(c.highQPS), Burst: int32(c.highBurst)})
		defer sched.Stop()
		clients := withLimits(cl.Config, float32(c.createQPS), int(c.createQPS))
		var err error
		res, err = bench.MeasureRequeue(ctx, bench.RequeueOptions{
			RequeueSetup: s, Namespace: "requeue", Timeout: 3 * time.Minute,
			Kube: kubernetes.NewForConfigOrDie(clients), PodGroups: dynamic.NewForConfigOrDie(clients),
		})
		return err
	})
	if err != nil {
		r.RequeueErr = err.Error()
		return false
	}
	r.Requeue = res
	fmt.Printf("  free to bound: p50 %.0f ms, p99 %.0f ms over %d gangs\n", res.P50Ms, res.P99Ms, len(res.FreeToBoundMs))
	return true
}
