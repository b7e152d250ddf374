package pytorchjob

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/kubeflow"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// TestElasticJob scales the workers of the elastic sample (4 CPUs each) within its
// elasticPolicy, set here to minReplicas 2 and maxReplicas 4 (without the sample's metrics:
// no HPA resizes it behind the test's back). Its gang is minReplicas workers; workers beyond
// them bind as room comes, and the PodGroup follows minReplicas as soon as the job changes.
func TestElasticJob(t *testing.T) {
	// 12 CPUs: room for 3 workers.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "node-0", CPU: "12"}}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(kubeflow.SchedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	obj := kubeflow.Sample(t, framework, def, "elastic-imagenet.yaml")
	unstructured.RemoveNestedField(obj.Object, "spec", "elasticPolicy", "metrics")
	require.NoError(t, unstructured.SetNestedField(obj.Object, int64(2), "spec", "elasticPolicy", "minReplicas"))
	require.NoError(t, unstructured.SetNestedField(obj.Object, int64(4), "spec", "elasticPolicy", "maxReplicas"))
	ns, job := obj.GetNamespace(), obj.GetName()
	kubeflow.CreateJob(ctx, t, c, Resource, obj)
	g := c.NewGangs(t, ns)
	pgName := job + "-all"
	patch := func(t *testing.T, ops string) {
		t.Helper()
		_, err := c.Dynamic.Resource(Resource).Namespace(ns).Patch(ctx, job, types.JSONPatchType, []byte(ops), metav1.PatchOptions{})
		require.NoError(t, err)
	}

	g.WaitBound(kubeflow.PodsOf(job), 2, time.Minute)
	g.WaitMinMember(pgName, 2, "elasticPolicy.minReplicas")

	t.Run("scaled to 4 workers: the one that fits binds, without waiting for the other", func(t *testing.T) {
		patch(t, `[{"op":"replace","path":"/spec/pytorchReplicaSpecs/Worker/replicas","value":4}]`)
		g.WaitCreated(kubeflow.PodsOf(job), 4)
		require.Eventually(t, func() bool { return harness.Bound(g.Pods(kubeflow.PodsOf(job))) == 3 }, 30*time.Second, 100*time.Millisecond,
			"a worker beyond minReplicas binds as soon as it fits")
		time.Sleep(2 * time.Second)
		require.Equal(t, 3, harness.Bound(g.Pods(kubeflow.PodsOf(job))), "the fourth waits for room")
		g.WaitMinMember(pgName, 2, "minReplicas is still 2")
	})

	t.Run("minReplicas raised to 4: the PodGroup follows at once, and the last worker completes it", func(t *testing.T) {
		patch(t, `[{"op":"replace","path":"/spec/elasticPolicy/minReplicas","value":4}]`)
		g.WaitMinMember(pgName, 4, "elasticPolicy.minReplicas 4, with no new pod")
		c.AddNode(ctx, harness.Node{Name: "node-1", CPU: "4"})
		g.WaitBound(kubeflow.PodsOf(job), 4, time.Minute)
		g.WaitRunning(pgName)
	})
}
