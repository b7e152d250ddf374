package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/e2e/harness"
)

// TestNativeGangTopology: on a cluster that serves native topology (kube-apiserver with
// TopologyAwareWorkloadScheduling), a gang that asks for a rack gets the rack's node label as
// its native PodGroup's topology constraint, from the level name the webhook is told.
func TestNativeGangTopology(t *testing.T) {
	for _, r := range harness.Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) { testNativeGangTopology(t, r) })
	}
}

func testNativeGangTopology(t *testing.T, release harness.Release) {
	c := harness.Start(t, harness.Options{
		JobSet: true, NativeGangs: true, Release: release, APIServerFeatureGates: "TopologyAwareWorkloadScheduling=true",
		Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8, Labels: map[string]string{"e2e.workmap.dev/rack": "r1"}}},
	})
	ctx := context.Background()
	w := c.StartWorkmapWebhook(harness.WebhookOptions{Binary: harness.WebhookBinary(t), Args: []string{"--topology-levels=rack=e2e.workmap.dev/rack"}})
	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, readiness(t, c)(waitCtx), "webhook log: %s", w.LogPath())
	g := c.NewGangs(t, "default")

	js, err := harness.ExampleJobSet("racked", corev1.DefaultSchedulerName, 0)
	require.NoError(t, err)
	js.SetAnnotations(map[string]string{definitions.AnnotationTopologyRequired: "rack"})
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	g.WaitCreated("jobset.sigs.k8s.io/jobset-name=racked", 3)
	pg, err := c.Dynamic.Resource(release.NativePodGroups()).Namespace("default").Get(ctx, "racked-all", metav1.GetOptions{})
	require.NoError(t, err)
	topology, _, _ := unstructured.NestedSlice(pg.Object, "spec", "schedulingConstraints", "topology")
	require.Equal(t, []any{map[string]any{"key": "e2e.workmap.dev/rack"}}, topology, "the rack's node label, kept by the API server")
}
