package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// roomLatency is how soon a backed-off gang must be bound once room appears for it (bound in
// a fraction of a second on a quiet machine; the bound leaves room for a loaded one); the
// scheduler's backoff (at least roomBackoffSeconds after a failed attempt) is far longer.
const (
	roomLatency        = 10 * time.Second
	roomBackoffSeconds = 30
)

// TestBackedOffGangRetriedWhenRoomAppears: a gang that does not fit waits, backed off after its
// failed attempt, its pods saying why; it is bound whole within roomLatency of the change that
// makes room for it, not when its backoff ends: the blocking pod is deleted, the pods that hold
// the node finish, a node is added.
func TestBackedOffGangRetriedWhenRoomAppears(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	c.StartWorkmapScheduler(harness.SchedulerOptions{PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: roomBackoffSeconds, Verbosity: 5})
	g := newGangs(t, c)
	ctx := context.Background()

	createBoundPod(t, c, "blocker", "gpu-node-0", 8)
	gang := func(name string) string {
		t.Helper()
		pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}
		require.NoError(t, g.Client().Create(ctx, pg))
		for _, pod := range []string{name + "-0", name + "-1"} {
			createPod(t, c, pod, harness.SchedulerName, map[string]string{v1alpha1.PodGroupLabel: name, "gang": name}, 4)
		}
		return "gang=" + name
	}

	// Each case waits for the room the one before it made.
	steps := []struct {
		name string
		// makeRoom frees the room the gang needs.
		makeRoom func(t *testing.T)
	}{
		{"the blocking pod is deleted", func(t *testing.T) {
			require.NoError(t, c.Kube.CoreV1().Pods("default").Delete(ctx, "blocker", metav1.DeleteOptions{}))
		}},
		{"the pods holding the node finish", func(t *testing.T) {
			for _, p := range g.Pods("gang=gang-0") {
				require.NoError(t, c.SetPodOutcome(ctx, "default", p.Name, corev1.PodSucceeded))
			}
		}},
		{"a node is added", func(t *testing.T) {
			c.AddNode(ctx, harness.Node{Name: "gpu-node-1", GPUs: 8})
		}},
	}
	for i, step := range steps {
		if !t.Run(step.name, func(t *testing.T) {
			g.t = t
			selector := gang(fmt.Sprintf("gang-%d", i))
			waitFailed(t, g, selector, "PodGroup default/"+selector[len("gang="):]+" needs more than the cluster has free: nvidia.com/gpu 8 (0 free)")
			require.Zero(t, harness.Bound(g.Pods(selector)))
			freed := time.Now()
			step.makeRoom(t)
			boundWithin(t, g, selector, 2, freed, roomLatency)
		}) {
			return
		}
	}
}

// createBoundPod creates a pod already bound to a node (kwok runs it), asking for gpus GPUs.
func createBoundPod(t *testing.T, c *harness.Cluster, name, node string, gpus int64) {
	t.Helper()
	pod := gpuPod(name, gpus)
	pod.Spec.NodeName = node
	_, err := c.Kube.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitFailed waits until every pod of selector says, in its PodScheduled condition, that its
// gang failed for cause: the gang is backed off.
func waitFailed(t *testing.T, g *gangs, selector, cause string) {
	t.Helper()
	var last string
	require.Eventually(t, func() bool {
		pods := g.Pods(selector)
		for _, p := range pods {
			cond := podScheduled(p)
			if last = cond.Message; cond.Status != corev1.ConditionFalse || !strings.Contains(cond.Message, cause) {
				return false
			}
		}
		return len(pods) > 0
	}, 30*time.Second, 50*time.Millisecond, "pods of %s say %q (last seen: %q)", selector, cause, last)
}

// podScheduled is the pod's PodScheduled condition (zero when it has none).
func podScheduled(p corev1.Pod) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c
		}
	}
	return corev1.PodCondition{}
}

// boundWithin requires all want pods of selector bound within limit of since.
func boundWithin(t *testing.T, g *gangs, selector string, want int, since time.Time, limit time.Duration) {
	t.Helper()
	for {
		n := harness.Bound(g.Pods(selector))
		took := time.Since(since)
		if n == want {
			t.Logf("gang %s bound %s after room appeared", selector, took.Round(10*time.Millisecond))
			return
		}
		require.Less(t, took, limit, "gang %s: %d of %d pods bound %s after room appeared", selector, n, want, took.Round(10*time.Millisecond))
		time.Sleep(20 * time.Millisecond)
	}
}
