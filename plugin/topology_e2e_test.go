package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
)

const (
	e2eRackLabel  = "e2e.workmap.dev/rack"
	e2eBlockLabel = "e2e.workmap.dev/block"
)

// rackedNodes are kwok nodes in two blocks: rack r1 (two nodes of 4 GPUs) in block b1, rack
// r2 (two nodes of 8 GPUs) in block b2.
func rackedNodes() []harness.Node {
	node := func(name, rack, block string, gpus int64) harness.Node {
		return harness.Node{Name: name, GPUs: gpus, Labels: map[string]string{e2eRackLabel: rack, e2eBlockLabel: block}}
	}
	return []harness.Node{node("r1-0", "r1", "b1", 4), node("r1-1", "r1", "b1", 4), node("r2-0", "r2", "b2", 8), node("r2-1", "r2", "b2", 8)}
}

// racksOf returns the racks of bound pods' nodes.
func racksOf(t *testing.T, c *harness.Cluster, pods []corev1.Pod) map[string]int {
	t.Helper()
	racks := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		node, err := c.Kube.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err)
		racks[node.Labels[e2eRackLabel]]++
	}
	return racks
}

// TestTopologyJobSet: a JobSet whose root asks for one rack (workmap.dev/topology-required),
// on the real control plane with the real JobSet controller and kwok nodes labelled as racks:
// the gang lands in the one rack that holds it whole; a second gang that fits the cluster but
// no rack waits, unbound, and says so; it binds whole in one rack once room is freed there.
func TestTopologyJobSet(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, Nodes: rackedNodes()})
	opts := testSchedulerOptions
	opts.TopologyLevels = []harness.TopologyLevel{{Name: "block", NodeLabel: e2eBlockLabel}, {Name: "rack", NodeLabel: e2eRackLabel}}
	c.StartWorkmapScheduler(opts)
	g := newGangs(t, c)
	ctx := context.Background()

	createRacked := func(name string) {
		t.Helper()
		js, err := harness.ExampleJobSet(name, harness.SchedulerName, 0)
		require.NoError(t, err)
		js.SetAnnotations(map[string]string{definitions.AnnotationTopologyRequired: "rack"})
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// 3 pods of 4 GPUs: rack r1 has 8 GPUs, rack r2 16.
	createRacked("first")
	g.WaitBound(jobSetPods("first"), 3, 60*time.Second)
	require.Equal(t, map[string]int{"r2": 3}, racksOf(t, c, g.Pods(jobSetPods("first"))), "the whole gang in the one rack that holds it")
	pg, err := g.PodGroup("first-all")
	require.NoError(t, err)
	require.Equal(t, "rack", pg.Annotations[grouper.TopologyRequiredAnnotation], "the PodGroup says what its gang asks for")
	require.Eventually(t, func() bool {
		pg, err := g.PodGroup("first-all")
		return err == nil && pg.Annotations[grouper.TopologyDomainAnnotation] == e2eRackLabel+"=r2"
	}, 20*time.Second, 200*time.Millisecond, "and where it was placed")

	// 12 GPUs free in all (r1 8, r2 4), in no one rack.
	createRacked("second")
	g.WaitCreated(jobSetPods("second"), 3)
	g.NeverPartial(8*time.Second, map[string]int{jobSetPods("second"): 3})
	require.Zero(t, harness.Bound(g.Pods(jobSetPods("second"))), "no pod of a gang that fits no rack is bound")
	require.Eventually(t, func() bool {
		events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
		require.NoError(t, err)
		for _, e := range events.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, "second-") && strings.Contains(e.Message, "no rack has room for 3 pods of PodGroup default/second-all") {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "the waiting pods say which level and how close the best rack came")

	g.Finish(jobSetPods("first"))
	g.WaitBound(jobSetPods("second"), 3, 60*time.Second)
	require.Len(t, racksOf(t, c, g.Pods(jobSetPods("second"))), 1, "bound whole in one rack once room was freed there")
}

// TestTopologyJobSetExclusive: JobSet's own exclusive placement
// (alpha.jobset.sigs.k8s.io/exclusive-topology: the rack label), with the real JobSet
// controller and its pod webhook, on three racks of one 8-GPU node. With Jobs of one pod each,
// the gang holds every Job and each Job is a nested part in a rack of its own: the example's
// 3 Jobs bind whole, in 3 racks. With one Job of several pods, JobSet creates the Job's other
// pods only once its first has a node, so the gang lets that pod bind first, in a rack that
// holds the whole Job, and the rest then bind together there.
func TestTopologyJobSetExclusive(t *testing.T) {
	var nodes []harness.Node
	for _, rack := range []string{"r1", "r2", "r3"} {
		nodes = append(nodes, harness.Node{Name: rack + "-0", GPUs: 8, Labels: map[string]string{e2eRackLabel: rack, e2eBlockLabel: "b1"}})
	}
	c := harness.Start(t, harness.Options{JobSet: true, Nodes: nodes})
	opts := testSchedulerOptions
	opts.TopologyLevels = []harness.TopologyLevel{{Name: "block", NodeLabel: e2eBlockLabel}, {Name: "rack", NodeLabel: e2eRackLabel}}
	c.StartWorkmapScheduler(opts)
	g := newGangs(t, c)
	ctx := context.Background()
	logGangEventsOnFailure(t, c, "default")
	exclusive := map[string]string{"alpha.jobset.sigs.k8s.io/exclusive-topology": e2eRackLabel}

	t.Run("Jobs of one pod each: the gang whole, each Job in a rack of its own", func(t *testing.T) {
		g.t = t
		js, err := harness.ExampleJobSet("one-pod-jobs", harness.SchedulerName, 0) // 3 Jobs of one 4-GPU pod
		require.NoError(t, err)
		js.SetAnnotations(exclusive)
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitBound(jobSetPods("one-pod-jobs"), 3, 60*time.Second)
		racks := racksOf(t, c, g.Pods(jobSetPods("one-pod-jobs")))
		require.Equal(t, map[string]int{"r1": 1, "r2": 1, "r3": 1}, racks, "each Job in a rack of its own")
		pg, err := g.PodGroup("one-pod-jobs-all")
		require.NoError(t, err)
		require.EqualValues(t, 3, pg.Spec.MinMember)
		require.Equal(t, "instanceReplica="+e2eRackLabel, pg.Annotations[grouper.TopologyNestedAnnotation], "each Job is a nested part of the gang")
		g.Finish(jobSetPods("one-pod-jobs"))
	})

	t.Run("one Job of several pods: its first pod binds first, then the rest, all in one rack", func(t *testing.T) {
		g.t = t
		js, err := harness.ExampleJobSet("leader-first", harness.SchedulerName, 0)
		require.NoError(t, err)
		rjs, _, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
		require.NoError(t, err)
		workers := rjs[1].(map[string]any)
		require.Equal(t, "workers", workers["name"])
		workers["replicas"] = int64(1)
		require.NoError(t, unstructured.SetNestedField(workers, int64(2), "template", "spec", "parallelism"))
		require.NoError(t, unstructured.SetNestedField(workers, int64(2), "template", "spec", "completions"))
		require.NoError(t, unstructured.SetNestedSlice(js.Object, []any{workers}, "spec", "replicatedJobs"))
		js.SetAnnotations(exclusive)
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitBound(jobSetPods("leader-first"), 2, 90*time.Second)
		require.Len(t, racksOf(t, c, g.Pods(jobSetPods("leader-first"))), 1, "the Job in one rack")
		pg, err := g.PodGroup("leader-first-all")
		require.NoError(t, err)
		require.EqualValues(t, 2, pg.Spec.MinMember)
		require.Equal(t, "true", pg.Annotations[grouper.LeaderFirstAnnotation], "the Job's first pod binds first")
		require.Equal(t, e2eRackLabel, pg.Annotations[grouper.TopologyRequiredAnnotation])
	})
}

// logGangEventsOnFailure logs, when the test fails, the events of a namespace that say why pods
// wait or were not created.
func logGangEventsOnFailure(t *testing.T, c *harness.Cluster, namespace string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		events, err := c.Kube.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("listing events: %v", err)
			return
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning || e.Reason == "WaitingForGang" {
				t.Logf("event %s/%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	})
}
