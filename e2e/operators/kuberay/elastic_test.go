package kuberay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// TestElasticRayCluster scales the worker group of KubeRay's sample RayCluster (replicas 1,
// minReplicas 1, maxReplicas 5; 1 CPU per pod) within its bounds: its gang is the head plus
// minReplicas workers, so workers beyond that bind as room comes, one by one, and the
// PodGroup's minMember follows minReplicas as soon as the RayCluster changes.
func TestElasticRayCluster(t *testing.T) {
	// 3 CPUs: the head, the first worker and one more.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "ray-node-0", CPU: "3"}}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(gangSchedulerOptions)
	g := c.NewGangs(t, ns)

	def := livecheck.Definition(t, RayClusterKind)
	objs := livecheck.Sample(t, "raycluster", "ray-cluster.sample.yaml")
	cluster := root(t, objs, "RayCluster")
	livecheck.SetSchedulerName(t, def, cluster, harness.SchedulerName)
	name := root(t, create(ctx, t, c, objs...), "RayCluster").GetName()
	pods, pgName := "ray.io/cluster="+name, name+"-cluster"
	workers := pods + ",ray.io/node-type=worker"
	patch := func(t *testing.T, ops string) {
		t.Helper()
		_, err := c.Dynamic.Resource(RayClusterResource).Namespace(ns).Patch(ctx, name, types.JSONPatchType, []byte(ops), metav1.PatchOptions{})
		require.NoError(t, err)
	}

	g.WaitBound(pods, 2, 60*time.Second)
	g.WaitMinMember(pgName, 2, "the head and minReplicas 1")

	t.Run("scaled up to 3 workers: the one that fits binds, without waiting for the other", func(t *testing.T) {
		patch(t, `[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]`)
		g.WaitCreated(workers, 3)
		require.Eventually(t, func() bool { return harness.Bound(g.Pods(workers)) == 2 }, 30*time.Second, 100*time.Millisecond,
			"a worker beyond minReplicas binds as soon as it fits")
		time.Sleep(2 * time.Second)
		require.Equal(t, 2, harness.Bound(g.Pods(workers)), "the third waits for room")
		g.WaitMinMember(pgName, 2, "minReplicas is still 1")
	})

	t.Run("minReplicas raised to 3: the PodGroup follows at once, and the last worker completes it", func(t *testing.T) {
		patch(t, `[{"op":"replace","path":"/spec/workerGroupSpecs/0/minReplicas","value":3}]`)
		g.WaitMinMember(pgName, 4, "the head and minReplicas 3, with no new pod")
		c.AddNode(ctx, harness.Node{Name: "ray-node-1", CPU: "1"})
		g.WaitBound(pods, 4, 60*time.Second)
		g.WaitRunning(pgName)
	})

	t.Run("scaled down to 1 worker: the PodGroup follows, the gang runs on", func(t *testing.T) {
		patch(t, fmt.Sprintf(`[{"op":"replace","path":"/spec/workerGroupSpecs/0/minReplicas","value":%d},{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":%d}]`, 1, 1))
		g.WaitMinMember(pgName, 2, "the head and minReplicas 1")
		require.Eventually(t, func() bool { return len(g.Pods(workers)) == 1 }, 60*time.Second, 200*time.Millisecond, "KubeRay deletes 2 workers")
		g.WaitRunning(pgName)
	})
}
