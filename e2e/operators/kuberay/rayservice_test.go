package kuberay

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// The states of a RayService that kwok can drive, read from KubeRay v1.5.0's RayService
// controller: no status → Ready=False/Initializing, set while the head pod of its RayCluster
// is not ready yet; and Ready=False/InitializingTimeout (Failed) when the
// ray.io/initializing-timeout annotation passes before the head pod is ready (see the gang
// test). Once the head pod is ready the operator asks the Ray dashboard on it for the Serve
// applications over HTTP, which does not exist on kwok: every reconcile then ends with that
// error before the status is written, so the RayService stays Initializing. Ready=True
// (Running: serve endpoints), ZeroServeEndpoints (Degraded) and upgrades are not reachable.

// TestRayService applies upstream RayService samples, lets KubeRay create their RayCluster and
// kwok run its pods, and checks workmap's tree and state.
func TestRayService(t *testing.T) {
	c := harness.Start(t, harness.Options{})
	ctx := context.Background()
	Start(ctx, t, c)
	def := livecheck.Definition(t, RayServiceKind)

	tests := map[string]struct {
		file string
		// pods is the head plus the worker group's replicas of the sample.
		pods int
	}{
		"a head and one CPU worker":   {file: "ray-service.sample.yaml", pods: 2},
		"a head and one 4-GPU worker": {file: "ray-service.llm-serve.yaml", pods: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			svc := root(t, create(ctx, t, c, livecheck.Sample(t, "rayservice", tc.file)...), "RayService")
			o := newObserver(t, c, def, RayServiceResource, svc.GetName(), rayServiceState)
			o.resolve(ctx)
			o.waitFor(ctx, v1alpha1.StateInitializing)

			var cluster string
			var pods []corev1.Pod
			require.Eventually(t, func() bool {
				cluster = clusterOf(ctx, t, c, "RayService", svc.GetName())
				pods = clusterPods(ctx, t, c, cluster)
				return cluster != "" && len(pods) == tc.pods && allReady(pods)
			}, stateTimeout, pollInterval, "the pods of the RayCluster of %s run", svc.GetName())
			livecheck.RequireTree(t, o.resolve(ctx), pods)

			// With its pods ready the service waits for the Ray dashboard: it stays Initializing.
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(pollInterval) {
				require.Equal(t, v1alpha1.StateInitializing, o.resolve(ctx).Workload.Status.State)
			}
			requireProgress(t, o.seen, v1alpha1.StatePending, v1alpha1.StateInitializing)
		})
	}
}

// rayServiceState is the state a RayService's Ready condition stands for.
func rayServiceState(obj *unstructured.Unstructured) v1alpha1.State {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, r := range raw {
		cond, _ := r.(map[string]any)
		if cond["type"] != "Ready" {
			continue
		}
		switch {
		case cond["status"] == string(metav1.ConditionTrue):
			return v1alpha1.StateRunning
		case cond["reason"] == "InitializingTimeout" || cond["reason"] == "ValidationFailed":
			return v1alpha1.StateFailed
		case cond["reason"] == "ZeroServeEndpoints":
			return v1alpha1.StateDegraded
		}
		return v1alpha1.StateInitializing
	}
	return v1alpha1.StatePending
}

// clusterOf is the name of the RayCluster a RayJob or RayService made ("" before it has one).
func clusterOf(ctx context.Context, t *testing.T, c *harness.Cluster, crd, name string) string {
	t.Helper()
	list, err := c.Dynamic.Resource(RayClusterResource).Namespace(ns).List(ctx, metav1.ListOptions{
		LabelSelector: "ray.io/originated-from-crd=" + crd + ",ray.io/originated-from-cr-name=" + name,
	})
	require.NoError(t, err)
	require.LessOrEqual(t, len(list.Items), 1, "RayClusters of %s %s", crd, name)
	if len(list.Items) == 0 {
		return ""
	}
	return list.Items[0].GetName()
}

// allReady reports whether every pod is Ready.
func allReady(pods []corev1.Pod) bool {
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			return false
		}
	}
	return true
}
