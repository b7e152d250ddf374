package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/webhook"
)

// topology is the topology step, on a control plane of its own with Kubernetes' own gang and
// topology gates on (started after the others are torn down, so that its many nodes weigh on
// no other row): racks of kwok nodes created in parallel, then A, B and D drain the same
// backlog of gangs that each ask for one rack, in alternating runs, per batch size.
func topology(ctx context.Context, c config, r *bench.Report) bool {
	t := r.Topology
	if t.Pairs == 0 || len(t.Batches) == 0 {
		return true
	}
	scheds := topologySchedulers(c)
	step("Topology: %d kwok nodes in %d racks of %d (%d racks a block) × %d GPUs (a control plane of its own, %s), backlog mode; batches of %v gangs of %d + %d gangs of %d, %d pair(s) each, %v at qps %g burst %d",
		t.Nodes(), t.Racks, t.NodesPerRack, t.RacksPerBlock, t.GPUsPerNode, t.Gates(), t.Batches, t.GangSize, t.LargeGangs, t.LargeGangSize, t.Pairs, scheds, t.QPS, t.Burst)
	start := time.Now()
	defer func() { r.TopologySeconds = time.Since(start).Round(100 * time.Millisecond).Seconds() }()
	runner := &bench.Runner{Log: os.Stderr}
	defer runner.Close()
	var cl *harness.Cluster
	err := runner.Step(func() error {
		opts := harness.Options{NoScheduler: true, Nodes: []harness.Node{}}
		if t.Native {
			opts.NativeGangs, opts.FeatureGates = true, harness.NativeTopologyGates
		}
		cl = harness.Start(runner, opts)
		return nil
	})
	if err != nil {
		r.TopologyErr = err.Error()
		return false
	}
	if v, err := cl.Kube.Discovery().ServerVersion(); err == nil && r.Versions.Kubernetes == "" {
		r.Versions.Kubernetes = v.GitVersion
	}
	if r.Versions.KubeScheduler == "" {
		r.Versions.KubeScheduler = bench.BinaryVersion(filepath.Join(harness.BinDir(runner), "kube-scheduler"))
	}
	nodes := t.NodeList()
	nodesCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	created := time.Now()
	if err := bench.AddNodes(nodesCtx, runner, cl, nodes, c.scaleNodeWorkers); err != nil {
		r.TopologyErr = "creating the nodes: " + err.Error()
		return false
	}
	if err := bench.WaitNodesReady(nodesCtx, cl.Kube, len(nodes), c.scaleNodeWorkers); err != nil {
		r.TopologyErr = err.Error()
		return false
	}
	r.TopologyNodesSeconds = time.Since(created).Round(100 * time.Millisecond).Seconds()
	fmt.Printf("  %d nodes Ready and untainted %.1fs after the first was created\n", len(nodes), r.TopologyNodesSeconds)
	run := bench.TopologyRun{Setup: t, PodGroups: dynamic.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))}
	run.RackOf, run.BlockOf = t.Domains(nodes)
	if t.Native {
		gvr, ok, err := webhook.ServedNativePodGroups(cl.Kube.Discovery())
		if err == nil && !ok {
			err = fmt.Errorf("the control plane serves no native PodGroups")
		}
		if err != nil {
			r.TopologyErr = err.Error()
			return false
		}
		run.Native = gvr
	}
	creator := kubernetes.NewForConfigOrDie(withLimits(cl.Config, float32(c.createQPS), int(c.createQPS)))
	r.TopologyRuns = bench.RunTopology(ctx, runner, cl, bench.ThroughputOptions{
		QPS: t.QPS, Burst: t.Burst, CreateWorkers: c.createWorkers, Creator: creator,
		Timeout: c.topologyTimeout, Log: os.Stdout, Quiet: c.quiet, Namespace: "topo", Schedulers: scheds,
	}, run)
	step("Tearing down the topology control plane")
	if err := firstError(r.TopologyRuns); err != "" {
		r.TopologyErr = err
		return false
	}
	return true
}

// topologySchedulers are the schedulers of the topology step: A, B, and D with -native. E
// would be B again (no webhook runs there), and O has no topology of its own to ask for.
func topologySchedulers(c config) []bench.Scheduler {
	return slices.DeleteFunc(schedulers(c), func(s bench.Scheduler) bool { return s == bench.GangWebhook || s == bench.Other })
}
