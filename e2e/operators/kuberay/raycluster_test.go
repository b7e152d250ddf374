package kuberay

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// TestRayCluster applies upstream RayCluster samples, lets KubeRay create the head and worker
// pods and kwok run them, and checks workmap's tree and state against them; then suspends and
// resumes one cluster. The operator runs with its RayMultiHostIndexing feature gate, so worker
// pods carry their replica index and the tree is checked down to each replica (the other tests
// run KubeRay's defaults, where it is off).
func TestRayCluster(t *testing.T) {
	c := harness.Start(t, harness.Options{})
	ctx := context.Background()
	StartWith(ctx, t, c, Options{FeatureGates: "RayMultiHostIndexing=true"})
	addTPUSlice(ctx, t, c)
	def := livecheck.Definition(t, RayClusterKind)

	tests := map[string]struct {
		file string
		// pods is what the sample asks for: the head plus replicas × numOfHosts per worker group.
		pods int
	}{
		"head and one worker":                        {file: "ray-cluster.sample.yaml", pods: 2},
		"head and one worker with volumes and ports": {file: "ray-cluster.complete.yaml", pods: 2},
		"a head of 4 GPUs and no workers":            {file: "ray-cluster.verl.yaml", pods: 1},
		"a TPU worker group of one 2-host replica":   {file: "ray-cluster.tpu-v4-multihost.yaml", pods: 3},
	}
	t.Run("samples", func(t *testing.T) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cluster := root(t, create(ctx, t, c, livecheck.Sample(t, "raycluster", tc.file)...), "RayCluster")
				o := newObserver(t, c, def, RayClusterResource, cluster.GetName(), rayClusterState)
				o.resolve(ctx)
				o.waitFor(ctx, v1alpha1.StateRunning)
				requireProgress(t, o.seen, v1alpha1.StatePending, v1alpha1.StateInitializing, v1alpha1.StateRunning)

				res := o.resolve(ctx)
				pods := clusterPods(ctx, t, c, cluster.GetName())
				require.Len(t, pods, tc.pods, "pods KubeRay made for %s", tc.file)
				livecheck.RequireTree(t, res, pods)
			})
		}
	})

	t.Run("suspended and resumed", func(t *testing.T) {
		const name = "raycluster-kuberay" // ray-cluster.sample.yaml, Running above
		o := newObserver(t, c, def, RayClusterResource, name, rayClusterState)
		o.waitFor(ctx, v1alpha1.StateRunning)

		setSuspend(ctx, t, c, RayClusterResource, name, true)
		suspended := o.waitFor(ctx, v1alpha1.StateSuspended)
		waitPodsGone(ctx, t, c, "ray.io/cluster="+name)
		require.Eventually(t, func() bool {
			return o.resolve(ctx).Workload.Status.Reason == "suspended: all pods deleted"
		}, stateTimeout, pollInterval, "the reason follows the operator's RayClusterSuspended condition")
		require.Zero(t, suspended.Workload.Totals.Pods, "a suspended cluster expects no pods")

		setSuspend(ctx, t, c, RayClusterResource, name, false)
		o.waitFor(ctx, v1alpha1.StateRunning)
		requireProgress(t, o.seen, v1alpha1.StateRunning, v1alpha1.StateSuspended, v1alpha1.StateInitializing, v1alpha1.StateRunning)
		livecheck.RequireTree(t, o.resolve(ctx), clusterPods(ctx, t, c, name))
	})
}

// addTPUSlice adds the two nodes of a TPU v4 2x2x2 slice that ray-cluster.tpu-v4-multihost.yaml
// selects (GKE's node labels, 4 google.com/tpu each) with the ephemeral storage its pods ask
// for, so that sample runs unchanged.
func addTPUSlice(ctx context.Context, t *testing.T, c *harness.Cluster) {
	t.Helper()
	for i := range 2 {
		name := fmt.Sprintf("tpu-node-%d", i)
		c.AddNode(ctx, harness.Node{Name: name})
		labels := `{"metadata":{"labels":{"cloud.google.com/gke-tpu-accelerator":"tpu-v4-podslice","cloud.google.com/gke-tpu-topology":"2x2x2"}}}`
		_, err := c.Kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(labels), metav1.PatchOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			node, err := c.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			if _, ok := node.Status.Allocatable["google.com/tpu"]; ok {
				return true
			}
			for _, l := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
				l["google.com/tpu"] = resource.MustParse("4")
				l[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
			}
			_, err = c.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
			return false
		}, stateTimeout, pollInterval, "node %s has TPUs", name)
	}
}

// setSuspend sets spec.suspend of a KubeRay object.
func setSuspend(ctx context.Context, t *testing.T, c *harness.Cluster, gvr schema.GroupVersionResource, name string, suspend bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	_, err := c.Dynamic.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// requireProgress checks that the states seen are the given path in order, some states of it
// possibly skipped between two observations (an operator can move on between two reads), and
// that the last one was reached.
func requireProgress(t *testing.T, seen []v1alpha1.State, path ...v1alpha1.State) {
	t.Helper()
	require.NotEmpty(t, seen)
	require.Equal(t, path[len(path)-1], seen[len(seen)-1], "states seen %v end in %s", seen, path[len(path)-1])
	i := 0
	for _, s := range seen {
		for i < len(path) && path[i] != s {
			i++
		}
		require.Less(t, i, len(path), "states seen %v follow %v", seen, path)
	}
}
