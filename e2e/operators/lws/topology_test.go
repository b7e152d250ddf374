package lws

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	"github.com/workmap/workmap/grouper"
)

// Node labels of the racked nodes, and LWS's exclusive placement annotation.
const (
	rackLabel         = "e2e.workmap.dev/rack"
	blockLabel        = "e2e.workmap.dev/block"
	exclusiveTopology = "leaderworkerset.sigs.k8s.io/exclusive-topology"
)

// rackNode is a node of the vLLM sample (one of its pods fills it) in a rack and block.
func rackNode(name, rack, block string) harness.Node {
	n := gpuNode(name)
	n.Labels = map[string]string{rackLabel: rack, blockLabel: block}
	return n
}

// TestExclusiveTopology: the upstream vLLM sample (2 groups of 2 pods of 8 GPUs) with LWS's
// own exclusive placement (leaderworkerset.sigs.k8s.io/exclusive-topology: the rack label), on
// workmap-scheduler with racks of whole-pod nodes, with the real controller and its pod
// webhook. The controller makes a group's workers only once its leader has a node (pinned to
// the leader's rack by a nodeSelector), so each group's gang lets its leader bind first, in a
// rack that holds the whole group. Each group lands whole in one rack, the two in different
// racks (LWS's anti-affinity), never in the rack too small for a group; a third group, for
// which only that small rack is left, binds none of its pods and says no rack has room, until
// a node added to that rack makes room.
func TestExclusiveTopology(t *testing.T) {
	// Racks r1 and r2 hold a group each, r3 one pod.
	nodes := []harness.Node{
		rackNode("r1-0", "r1", "b1"), rackNode("r1-1", "r1", "b1"),
		rackNode("r2-0", "r2", "b1"), rackNode("r2-1", "r2", "b1"),
		rackNode("r3-0", "r3", "b2"),
	}
	c := harness.Start(t, harness.Options{Nodes: nodes})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(harness.SchedulerOptions{
		PodGroupBackoffSeconds: 2,
		TopologyLevels:         []harness.TopologyLevel{{Name: "block", NodeLabel: blockLabel}, {Name: "rack", NodeLabel: rackLabel}},
	})
	def := livecheck.Definition(t, GroupKind)
	g := c.NewGangs(t, namespace)
	logEventsOnFailure(t, c)

	s := readSample(t, "vllm-gpu-lws.yaml")
	livecheck.SetSchedulerName(t, def, s.lws, harness.SchedulerName)
	s.lws.SetAnnotations(map[string]string{exclusiveTopology: rackLabel})
	replicas, size := s.replicasAndSize(t)
	require.Equal(t, [2]int{2, 2}, [2]int{replicas, size}, "the sample is 2 groups of 2")
	name := s.lws.GetName()
	s.create(ctx, t, c)

	g.WaitBound(NameLabel+"="+name, replicas*size, 60*time.Second)
	groupRack := map[int]string{}
	for i := range replicas {
		pods := groupPods(ctx, t, c, name, i)
		require.Len(t, pods, size)
		racks := racksOf(ctx, t, c, pods)
		require.Len(t, racks, 1, "group %d whole in one rack: %v", i, racks)
		for rack := range racks {
			groupRack[i] = rack
		}
		requireLWSConstraints(t, pods, groupRack[i])
		pgName := fmt.Sprintf("%s-group-%d", name, i)
		pg, err := g.PodGroup(pgName)
		require.NoError(t, err)
		require.Equal(t, rackLabel, pg.Annotations[grouper.TopologyRequiredAnnotation], "LWS's exclusive topology is the gang's of %s", pgName)
		require.Equal(t, "true", pg.Annotations[grouper.LeaderFirstAnnotation], "%s lets its leader bind first", pgName)
		require.Eventually(t, func() bool {
			pg, err := g.PodGroup(pgName)
			return err == nil && pg.Annotations[grouper.TopologyDomainAnnotation] == rackLabel+"="+groupRack[i]
		}, 20*time.Second, 200*time.Millisecond, "PodGroup %s says it was placed in rack %s", pgName, groupRack[i])
	}
	require.NotEqual(t, groupRack[0], groupRack[1], "each group in a rack of its own")
	require.NotContains(t, []string{groupRack[0], groupRack[1]}, "r3", "no group in the rack too small for it")

	// A third group: only r3 is left, with room for one of its two pods.
	patch := []byte(`{"spec":{"replicas":3}}`)
	_, err := c.Dynamic.Resource(Resource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	third := groupSelector(name, 2)
	require.Eventually(t, func() bool { return len(g.Pods(third)) > 0 }, 30*time.Second, 100*time.Millisecond, "the third group's leader is created")
	g.NeverPartial(8*time.Second, map[string]int{third: size})
	require.Zero(t, harness.Bound(g.Pods(third)), "not even the leader of a group that fits no rack is bound")
	want := fmt.Sprintf("no rack has room for %d pods of PodGroup %s/%s-group-2", size, namespace, name)
	require.Eventually(t, func() bool {
		events, err := c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
		require.NoError(t, err)
		for _, e := range events.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, name+"-2") && strings.Contains(e.Message, want) {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "the waiting group says %q", want)

	c.AddNode(ctx, rackNode("r3-1", "r3", "b2"))
	g.WaitBound(third, size, 60*time.Second)
	pods := g.Pods(third)
	require.Equal(t, map[string]int{"r3": size}, racksOf(ctx, t, c, pods), "bound whole in rack r3 once it had room")
	requireLWSConstraints(t, pods, "r3")
}

// requireLWSConstraints checks that the controller's own exclusive placement is on a group's
// pods, agreeing with where they are: the leader has the anti-affinity to other groups per
// rack, the workers a nodeSelector for their leader's rack.
func requireLWSConstraints(t *testing.T, pods []corev1.Pod, rack string) {
	t.Helper()
	for _, p := range pods {
		if p.Labels[WorkerIndexLabel] == "0" {
			require.NotNil(t, p.Spec.Affinity, "leader %s has LWS's affinities", p.Name)
			require.NotNil(t, p.Spec.Affinity.PodAntiAffinity, "leader %s has LWS's anti-affinity", p.Name)
			require.Equal(t, rackLabel, p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey)
			continue
		}
		require.Equal(t, rack, p.Spec.NodeSelector[rackLabel], "LWS pinned worker %s to its leader's rack", p.Name)
	}
}

// racksOf counts bound pods by the rack of their node.
func racksOf(ctx context.Context, t *testing.T, c *harness.Cluster, pods []corev1.Pod) map[string]int {
	t.Helper()
	racks := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		node, err := c.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err)
		racks[node.Labels[rackLabel]]++
	}
	return racks
}

// logEventsOnFailure logs, when the test fails, the events that say why pods wait or were not
// created.
func logEventsOnFailure(t *testing.T, c *harness.Cluster) {
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
