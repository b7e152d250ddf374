package plugin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// createTrainerPods creates a Trainer of workers workers and len(gated) of its pods (1 GPU
// each), the ones marked gated with a scheduling gate: they count as members but are not
// scheduled.
func createTrainerPods(t *testing.T, c *harness.Cluster, name string, workers int64, gated []bool) {
	t.Helper()
	ctx := context.Background()
	tr := createTrainer(t, c, name, workers, true)
	yes := true
	for i, gate := range gated {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: map[string]string{"trainer": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Trainer", Name: name, UID: tr.GetUID(), Controller: &yes}},
			},
			Spec: corev1.PodSpec{
				SchedulerName: harness.SchedulerName,
				Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(1, resource.DecimalSI)},
				}}},
			},
		}
		if gate {
			pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/held"}}
		}
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// writes counts a scheduler's API writes (client-go's request counter, all clients of the
// process) and workmap's own count of them.
func writes(t *testing.T, s *harness.WorkmapScheduler) (requests, workmap float64) {
	t.Helper()
	families, err := s.Metrics(context.Background())
	require.NoError(t, err)
	for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		requests += harness.Counter(t, families, "rest_client_requests_total", map[string]string{"method": verb})
	}
	return requests, harness.Counter(t, families, "workmap_grouper_writes_total", nil)
}

func leading(t *testing.T, s *harness.WorkmapScheduler) bool {
	t.Helper()
	families, err := s.Metrics(context.Background())
	if err != nil {
		return false
	}
	v, err := harness.CounterOf(families, "leader_election_master_status", nil)
	return err == nil && v == 1
}

// TestTwoReplicas: workmap-scheduler with leader election, two replicas. The standby makes no
// write while it keeps its caches warm; the leader is killed while a gang waits at Permit; the
// other replica takes over and binds the gang whole, and no partial gang is ever left.
func TestTwoReplicas(t *testing.T) {
	c := harness.Start(t, harness.Options{CustomKinds: []harness.CustomKind{trainerKind}, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	applyTrainerDefinition(t, c, "")
	opts := testSchedulerOptions
	opts.LeaderElect = true
	opts.PermitWaitingTimeSeconds = 300 // the gang waits at Permit through the takeover
	opts.Args = []string{harness.OpenEndpointsFlag}
	replicas := []*harness.WorkmapScheduler{c.StartWorkmapScheduler(opts), c.StartWorkmapScheduler(opts)}
	var leader, standby *harness.WorkmapScheduler
	require.Eventually(t, func() bool {
		switch {
		case leading(t, replicas[0]) && !leading(t, replicas[1]):
			leader, standby = replicas[0], replicas[1]
		case leading(t, replicas[1]) && !leading(t, replicas[0]):
			leader, standby = replicas[1], replicas[0]
		default:
			return false
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "exactly one replica leads")
	g := newGangs(t, c)
	ctx := context.Background()

	// Two of the gang's three pods can be placed; the third is gated: the two wait at Permit.
	createTrainerPods(t, c, "t", 3, []bool{false, false, true})
	require.Eventually(t, func() bool {
		pg, err := g.PodGroup("t-all")
		return err == nil && pg.Spec.MinMember == 3 && pg.Status.Phase == v1alpha1.PodGroupPending
	}, 30*time.Second, 100*time.Millisecond, "the leader made PodGroup t-all and wrote its status")
	g.NeverPartial(3*time.Second, map[string]int{"trainer=t": 3})
	require.Zero(t, harness.Bound(g.Pods("trainer=t")), "two of three hold a node at Permit; none bound")
	requests, ours := writes(t, standby)
	require.Zero(t, requests, "the standby makes no API write")
	require.Zero(t, ours, "the standby's grouper writes nothing")
	leaderRequests, _ := writes(t, leader)
	require.Positive(t, leaderRequests)

	// The leader dies with the gang at Permit: its reservations die with it.
	leader.Kill()
	require.Eventually(t, func() bool { return leading(t, standby) }, 60*time.Second, 200*time.Millisecond, "the standby takes over")
	g.NeverPartial(3*time.Second, map[string]int{"trainer=t": 3})
	require.Zero(t, harness.Bound(g.Pods("trainer=t")), "the new leader holds the two at Permit too")

	// The third pod's gate goes: the new leader binds the gang whole.
	_, err := c.Kube.CoreV1().Pods("default").Patch(ctx, "t-2", types.StrategicMergePatchType, []byte(`{"spec":{"schedulingGates":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	g.WaitBound("trainer=t", 3, 60*time.Second)
	g.WaitPhase("t-all", 3, v1alpha1.PodGroupScheduled, v1alpha1.PodGroupRunning)
	require.Len(t, g.Pods(v1alpha1.PodGroupLabel+"=t-all"), 3, "the bound pods carry their PodGroup's label")
}

// TestLabelWithoutBindingLabels: on an API server that does not copy a Binding's labels onto
// the pod (PodTopologyLabelsAdmission off, as before 1.35), the bound gang still gets its
// pod-group label — written by the leader after the bind.
func TestLabelWithoutBindingLabels(t *testing.T) {
	c := harness.Start(t, harness.Options{
		CustomKinds: []harness.CustomKind{trainerKind}, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}},
		APIServerFeatureGates: "PodTopologyLabelsAdmission=false",
	})
	applyTrainerDefinition(t, c, "")
	opts := testSchedulerOptions
	opts.Args = []string{harness.OpenEndpointsFlag}
	s := c.StartWorkmapScheduler(opts)
	g := newGangs(t, c)
	createTrainerPods(t, c, "old", 3, []bool{false, false, false})
	g.WaitBound("trainer=old", 3, 60*time.Second)
	require.Eventually(t, func() bool {
		return len(g.Pods(v1alpha1.PodGroupLabel+"=old-all")) == 3
	}, 30*time.Second, 100*time.Millisecond, "the bound pods are labelled after the bind")
	for _, p := range g.Pods("trainer=old") {
		require.Equal(t, "true", p.Annotations["workmap.dev/grouped"], "the Binding's annotation marks the label as workmap's")
	}
	families, err := s.Metrics(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 3, harness.Counter(t, families, "workmap_grouper_writes_total", map[string]string{"kind": "label"}), "one label write per pod, only here")
}
