package grouper_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

const schedulerName = "workmap-scheduler"

// startGrouper runs the grouper in-process against the cluster, its API requests recorded. It
// returns a client for reading PodGroups and the grouper's membership view.
func startGrouper(t *testing.T, c *harness.Cluster, reqs *harness.Requests) (client.Client, *grouper.Membership) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reg, err := catalog.Registry()
	require.NoError(t, err)
	g, err := grouper.New(ctx, reqs.Wrap(c.Config), grouper.Options{SchedulerName: schedulerName, Builtin: reg.All(), Workers: 2, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	go func() { _ = g.Run(ctx) }()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	groups, err := client.New(c.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return groups, g.Controller.Membership()
}

// waitMembers waits until the grouper has put want pods in a group.
func waitMembers(t *testing.T, members *grouper.Membership, key string, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		g, ok := members.Group(key)
		return ok && g.Members == want
	}, 180*time.Second, 100*time.Millisecond, "%d pods in group %s", want, key)
}

func exampleJobSetFor(t *testing.T, name string, workers int64) *unstructured.Unstructured {
	t.Helper()
	obj, err := harness.ExampleJobSet(name, schedulerName, workers)
	require.NoError(t, err)
	return obj
}

// TestControllerGroupsJobSet: on the real control plane with the real JobSet controller, the
// example JobSet's pods are put in one gang, whose PodGroup of minMember 3 is owned by the
// JobSet; the pods are not written to (their label comes with the bind); an operator's
// pre-labelled pod is left alone; grouping 200 pods of one workload makes no GET per pod per
// owner level, and one write for the gang.
func TestControllerGroupsJobSet(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, NoScheduler: true})
	ctx := context.Background()
	var recorded harness.Requests
	groups, members := startGrouper(t, c, &recorded)

	t.Run("example JobSet: one PodGroup of 3 owned by the JobSet", func(t *testing.T) {
		js, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, exampleJobSetFor(t, "leader-workers", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		var pg v1alpha1.PodGroup
		require.Eventually(t, func() bool {
			return groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "leader-workers-all"}, &pg) == nil
		}, 60*time.Second, 100*time.Millisecond)
		require.EqualValues(t, 3, pg.Spec.MinMember)
		require.Equal(t, js.GetUID(), pg.OwnerReferences[0].UID)
		require.Equal(t, "JobSet", pg.OwnerReferences[0].Kind)
		waitMembers(t, members, "default/leader-workers-all", 3)
		require.Eventually(t, func() bool {
			return groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "leader-workers-all"}, &pg) == nil && pg.Status.Phase == v1alpha1.PodGroupPending
		}, 30*time.Second, 100*time.Millisecond, "the PodGroup's status says its pods wait")
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.PodGroupLabel})
		require.NoError(t, err)
		require.Empty(t, pods.Items, "no pod is written to before it is bound")
	})

	t.Run("a PodGroup deleted while its pods wait is made again", func(t *testing.T) {
		var pg v1alpha1.PodGroup
		require.NoError(t, groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "leader-workers-all"}, &pg))
		oldUID := pg.UID
		require.NoError(t, groups.Delete(ctx, &pg))
		require.Eventually(t, func() bool {
			var again v1alpha1.PodGroup
			err := groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "leader-workers-all"}, &again)
			return err == nil && again.UID != oldUID && again.Spec.MinMember == 3
		}, 30*time.Second, 100*time.Millisecond)
	})

	t.Run("a pod that already names its PodGroup is left alone", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "operator-pod", Namespace: "default", Labels: map[string]string{v1alpha1.PodGroupLabel: "operators-group"}, Annotations: map[string]string{"workmap.dev/min-member": "4"}},
			Spec:       corev1.PodSpec{SchedulerName: schedulerName, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		got, err := c.Kube.CoreV1().Pods("default").Get(ctx, "operator-pod", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "operators-group", got.Labels[v1alpha1.PodGroupLabel])
		err = groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "operator-pod-pod"}, &v1alpha1.PodGroup{})
		require.Error(t, err, "no PodGroup made for it")
	})

	t.Run("200 pods: no GET per pod per owner level", func(t *testing.T) {
		recorded.Reset()
		_, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, exampleJobSetFor(t, "big", 199), metav1.CreateOptions{})
		require.NoError(t, err)
		waitMembers(t, members, "default/big-all", 200)
		var pg v1alpha1.PodGroup
		require.Eventually(t, func() bool {
			return groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "big-all"}, &pg) == nil
		}, 30*time.Second, 100*time.Millisecond)
		require.NoError(t, groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: "big-all"}, &pg))
		require.EqualValues(t, 200, pg.Spec.MinMember)

		time.Sleep(2 * grouper.StatusDelay) // the gang's status write
		reqs := recorded.List()
		gets := map[string]int{}
		writes := 0
		for _, r := range reqs {
			if strings.HasPrefix(r, "GET ") && (strings.Contains(r, "/jobs/") || strings.Contains(r, "/jobsets/")) {
				gets[r]++
			}
			if !strings.HasPrefix(r, "GET ") {
				writes++
			}
		}
		total := 0
		for _, n := range gets {
			total += n
		}
		t.Logf("%d API requests while grouping 200 pods; GETs of owners: %v", len(reqs), gets)
		require.LessOrEqual(t, total, 5, "owners are read from caches, the top owner once per version")
		require.LessOrEqual(t, writes, 3, "writes for the gang (its PodGroup and status), none per pod: %v", reqs)
	})
}
