package kuberay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	"github.com/workmap/workmap/grouper"
	schedv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// gangSchedulerOptions retry a gang that did not fit soon after a node is added.
var gangSchedulerOptions = harness.SchedulerOptions{PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: 2}

// smallNode fits one pod of each sample's gang but not both (1 CPU: the samples' heads ask for
// 1 or 2 CPUs, their workers for 200m to 1). bigNode holds a whole gang: the scheduler places a
// gang's pods one by one without going back, so with a 2-CPU node the RayService's worker, if
// placed first, takes the only node its 2-CPU head would fit on. No node has GPUs.
var (
	smallNode = harness.Node{Name: "small-node", CPU: "1"}
	bigNode   = harness.Node{Name: "big-node", CPU: "3"}
)

// TestGangScheduling runs workmap-scheduler beside KubeRay (without a batch scheduler, as it is
// installed by default): the pods KubeRay makes for each kind's sample are gang-scheduled with
// minMember = the head + the minReplicas (1) of the worker group, all or nothing.
func TestGangScheduling(t *testing.T) {
	// Mostly waiting on the operator's and the scheduler's timers: beside the other tests.
	t.Parallel()
	// No nodes yet: each sample brings its own small node, then its big one, and cordons both
	// when it is done (its pods may take a while to go), so the next one has exactly its own.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(gangSchedulerOptions)

	tests := map[string]struct {
		kind      schema.GroupKind
		gvr       schema.GroupVersionResource
		framework string
		file      string
		// minMember is the head plus the worker group's minReplicas × numOfHosts.
		minMember int32
		// running is what the workload shows once its gang runs.
		running v1alpha1.State
	}{
		"RayCluster ray-cluster.sample.yaml": {kind: RayClusterKind, gvr: RayClusterResource, framework: "raycluster", file: "ray-cluster.sample.yaml", minMember: 2, running: v1alpha1.StateRunning},
		// The submitter pod comes only once the cluster is ready and is not a member.
		"RayJob ray-job.sample.yaml": {kind: RayJobKind, gvr: RayJobResource, framework: "rayjob", file: "ray-job.sample.yaml", minMember: 2, running: v1alpha1.StateRunning},
		// Initializing: the Ray dashboard never answers on kwok (see TestRayService).
		"RayService ray-service.sample.yaml": {kind: RayServiceKind, gvr: RayServiceResource, framework: "rayservice", file: "ray-service.sample.yaml", minMember: 2, running: v1alpha1.StateInitializing},
	}
	// The samples one after the other, each on its own nodes; the RayService that never fits
	// beside them.
	t.Run("samples", func(t *testing.T) {
		t.Parallel()
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				g := c.NewGangs(t, ns)
				small, big := smallNode, bigNode
				small.Name += "-" + strings.ToLower(tc.kind.Kind)
				big.Name += "-" + strings.ToLower(tc.kind.Kind)
				c.AddNode(ctx, small)
				def := livecheck.Definition(t, tc.kind)
				objs := livecheck.Sample(t, tc.framework, tc.file)
				top := root(t, objs, tc.kind.Kind)
				livecheck.SetSchedulerName(t, def, top, harness.SchedulerName)
				top = root(t, create(ctx, t, c, objs...), tc.kind.Kind)

				cluster := top.GetName()
				if tc.kind != RayClusterKind {
					require.Eventually(t, func() bool {
						cluster = clusterOf(ctx, t, c, tc.kind.Kind, top.GetName())
						return cluster != ""
					}, stateTimeout, pollInterval, "the RayCluster of %s", top.GetName())
				}
				gang := "ray.io/cluster=" + cluster
				g.WaitCreated(gang, int(tc.minMember))

				// workmap's PodGroup, owned by the top owner (the RayJob or RayService, not the
				// RayCluster between them and the pods).
				pgName := top.GetName() + "-cluster"
				var pg *schedv1alpha1.PodGroup
				require.Eventually(t, func() bool {
					var err error
					pg, err = g.PodGroup(pgName)
					return err == nil
				}, stateTimeout, pollInterval, "PodGroup %s", pgName)
				require.Equal(t, tc.minMember, pg.Spec.MinMember)
				require.Equal(t, grouper.ManagedByValue, pg.Labels[grouper.ManagedByLabel])
				require.Len(t, pg.OwnerReferences, 1)
				require.Equal(t, tc.kind.Kind, pg.OwnerReferences[0].Kind)
				require.Equal(t, top.GetUID(), pg.OwnerReferences[0].UID)
				g.NeverPartial(4*time.Second, map[string]int{gang: int(tc.minMember)})
				require.Zero(t, harness.Bound(g.Pods(gang)), "no pod bound while the gang cannot fit")
				g.WaitPhase(pgName, 0, schedv1alpha1.PodGroupPending)

				c.AddNode(ctx, big)
				g.WaitBound(gang, int(tc.minMember), 60*time.Second)
				require.Len(t, g.Pods(schedv1alpha1.PodGroupLabel+"="+pgName), int(tc.minMember), "the bound gang carries its PodGroup label")
				g.WaitPhase(pgName, tc.minMember, schedv1alpha1.PodGroupScheduled, schedv1alpha1.PodGroupRunning)
				newObserver(t, c, def, tc.gvr, top.GetName(), operatorState(tc.kind)).waitFor(ctx, tc.running)
				if tc.kind == RayJobKind {
					// The submitter, created now that the cluster is ready, schedules on its own.
					submitter := "batch.kubernetes.io/job-name=" + top.GetName()
					g.WaitBound(submitter, 1, 60*time.Second)
					require.Empty(t, g.Pods(submitter)[0].Labels[schedv1alpha1.PodGroupLabel], "the submitter is no gang member")
				}

				require.NoError(t, c.Dynamic.Resource(tc.gvr).Namespace(ns).Delete(ctx, top.GetName(), metav1.DeleteOptions{}))
				cordon(ctx, t, c, small.Name, big.Name)
			})
		}
	})

	t.Run("a RayService whose gang never fits fails at its initializing timeout", func(t *testing.T) {
		t.Parallel()
		g := c.NewGangs(t, ns)
		def := livecheck.Definition(t, RayServiceKind)
		objs := livecheck.Sample(t, "rayservice", "ray-service.deepseek.yaml")
		svc := root(t, objs, "RayService")
		livecheck.SetSchedulerName(t, def, svc, harness.SchedulerName)
		// The user's bound on initialization (KubeRay's ray.io/initializing-timeout): its
		// 2 workers of 8 GPUs can never be placed on these GPU-less nodes, so the head is held too.
		svc.SetAnnotations(map[string]string{"ray.io/initializing-timeout": "10s"})
		svc = root(t, create(ctx, t, c, objs...), "RayService")

		o := newObserver(t, c, def, RayServiceResource, svc.GetName(), rayServiceState)
		o.waitFor(ctx, v1alpha1.StateInitializing)
		var cluster string
		require.Eventually(t, func() bool {
			cluster = clusterOf(ctx, t, c, "RayService", svc.GetName())
			return cluster != ""
		}, stateTimeout, pollInterval, "the RayCluster of %s", svc.GetName())
		g.WaitCreated("ray.io/cluster="+cluster, 3)
		failed := o.waitFor(ctx, v1alpha1.StateFailed)
		require.Contains(t, failed.Workload.Status.Reason, "InitializingTimeout")
		requireProgress(t, o.seen, v1alpha1.StatePending, v1alpha1.StateInitializing, v1alpha1.StateFailed)
		// (The operator deletes the cluster later, after its RayCluster deletion delay of 60 s.)
		require.Zero(t, harness.Bound(g.Pods("ray.io/cluster="+cluster)), "no pod of the gang was bound")
	})
}

// TestOperatorPodGroups runs KubeRay with --batch-scheduler=scheduler-plugins, so it makes the
// PodGroup of a RayCluster labelled ray.io/gang-scheduling-enabled and sends its pods to
// scheduler-plugins' scheduler, whose place workmap-scheduler takes here (same PodGroup API,
// profile named scheduler-plugins-scheduler): it gang-schedules with the operator's PodGroup
// and makes none of its own.
func TestOperatorPodGroups(t *testing.T) {
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{smallNode}})
	ctx := context.Background()
	StartWith(ctx, t, c, Options{BatchScheduler: "scheduler-plugins"})
	startAsSchedulerPlugins(t, c)
	g := c.NewGangs(t, ns)

	objs := livecheck.Sample(t, "raycluster", "ray-cluster.sample.yaml")
	cluster := root(t, objs, "RayCluster")
	// KubeRay's opt-in to gang scheduling with scheduler-plugins.
	cluster.SetLabels(map[string]string{"ray.io/gang-scheduling-enabled": "true"})
	create(ctx, t, c, objs...)
	name := cluster.GetName()
	gang := "ray.io/cluster=" + name

	g.WaitCreated(gang, 2)
	for _, p := range g.Pods(gang) {
		require.Equal(t, "scheduler-plugins-scheduler", p.Spec.SchedulerName, "KubeRay points its pods at scheduler-plugins")
		require.Equal(t, name, p.Labels[schedv1alpha1.PodGroupLabel], "KubeRay labels its pods with its PodGroup")
	}
	pg, err := g.PodGroup(name)
	require.NoError(t, err, "KubeRay's PodGroup, named after the RayCluster")
	require.EqualValues(t, 2, pg.Spec.MinMember, "KubeRay's minMember: the head and the desired worker")

	g.NeverPartial(4*time.Second, map[string]int{gang: 2})
	require.Zero(t, harness.Bound(g.Pods(gang)), "no pod bound while the operator's gang cannot fit")
	c.AddNode(ctx, bigNode)
	g.WaitBound(gang, 2, 60*time.Second)
	g.WaitPhase(name, 2, schedv1alpha1.PodGroupScheduled, schedv1alpha1.PodGroupRunning)

	groups := g.PodGroups()
	require.Len(t, groups, 1, "workmap makes no PodGroup of its own beside the operator's")
	require.NotEqual(t, grouper.ManagedByValue, groups[0].Labels[grouper.ManagedByLabel], "the operator's PodGroup stays the operator's")
	require.EqualValues(t, 2, groups[0].Spec.MinMember)
}

// cordon marks nodes unschedulable.
func cordon(ctx context.Context, t *testing.T, c *harness.Cluster, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		_, err := c.Kube.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
}

// operatorState is the operator-side state of a kind.
func operatorState(gk schema.GroupKind) func(*unstructured.Unstructured) v1alpha1.State {
	switch gk {
	case RayJobKind:
		return rayJobState
	case RayServiceKind:
		return rayServiceState
	}
	return rayClusterState
}

// startAsSchedulerPlugins runs workmap-scheduler with its profile named as scheduler-plugins'
// scheduler, which KubeRay's scheduler-plugins integration sets on the pods it labels.
func startAsSchedulerPlugins(t *testing.T, c *harness.Cluster) {
	t.Helper()
	raw, err := c.SchedulerConfig(gangSchedulerOptions)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	profiles, _ := cfg["profiles"].([]any)
	require.Len(t, profiles, 1)
	profiles[0].(map[string]any)["schedulerName"] = "scheduler-plugins-scheduler"
	out, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(c.Dir, "scheduler-plugins-scheduler.yaml")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	// kube-scheduler takes the last --config given.
	c.StartWorkmapScheduler(harness.SchedulerOptions{Args: []string{"--config=" + path}})
}
