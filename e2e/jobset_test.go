package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/live"
)

func jobSetDefinition(t *testing.T) *definitions.Definition {
	t.Helper()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	d, ok := reg.Lookup(harness.JobSetGroupKind)
	require.True(t, ok)
	return d
}

// exampleJobSet is the example for the default kube-scheduler.
func exampleJobSet(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := harness.ExampleJobSet(name, corev1.DefaultSchedulerName, 0)
	require.NoError(t, err)
	return obj
}

// resolve fetches the JobSet and resolves it live.
func resolve(ctx context.Context, t *testing.T, client dynamic.Interface, def *definitions.Definition, ns, name string) *live.Result {
	t.Helper()
	root, err := client.Resource(harness.JobSetResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	res, err := (&live.Resolver{Client: client}).Resolve(ctx, def, root)
	require.NoError(t, err)
	return res
}

// waitForState resolves until the workload reaches want, recording every state seen.
func waitForState(ctx context.Context, t *testing.T, c *harness.Cluster, def *definitions.Definition, name string, want v1alpha1.State, seen *[]v1alpha1.State) *live.Result {
	t.Helper()
	var last *live.Result
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		last = resolve(ctx, t, c.Dynamic, def, "default", name)
		st := last.Workload.Status.State
		if len(*seen) == 0 || (*seen)[len(*seen)-1] != st {
			*seen = append(*seen, st)
		}
		if st == want {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("JobSet %s never became %s; states seen %v, last reason %q", name, want, *seen, last.Workload.Status.Reason)
	return nil
}

func TestJobSetLifecycle(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true})
	ctx := context.Background()
	def := jobSetDefinition(t)

	tests := map[string]struct {
		// outcome of each pod, by replicatedJob
		outcome func(replicatedJob string) corev1.PodPhase
		final   v1alpha1.State
	}{
		"all pods succeed: Completed": {outcome: func(string) corev1.PodPhase { return corev1.PodSucceeded }, final: v1alpha1.StateCompleted},
		"a worker fails: Failed": {outcome: func(rj string) corev1.PodPhase {
			if rj == "workers" {
				return corev1.PodFailed
			}
			return corev1.PodSucceeded
		}, final: v1alpha1.StateFailed},
	}
	i := 0
	for name, tc := range tests {
		jsName := fmt.Sprintf("leader-workers-%d", i)
		i++
		t.Run(name, func(t *testing.T) {
			_, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, exampleJobSet(t, jsName), metav1.CreateOptions{})
			require.NoError(t, err)

			var seen []v1alpha1.State
			running := waitForState(ctx, t, c, def, jsName, v1alpha1.StateRunning, &seen)
			require.Equal(t, v1alpha1.StatePending, seen[0], "a new JobSet starts Pending")
			w := running.Workload
			require.Len(t, running.Children["jobs"], 3)
			require.Len(t, running.Pods, 3)
			require.EqualValues(t, 3, w.Totals.Pods)
			require.EqualValues(t, 12, w.Totals.GPUs)
			require.Zero(t, w.Live.Unassigned)
			for _, r := range w.Roles {
				require.Equal(t, r.Pods, *r.PodsFound, "role %s", r.Name)
			}

			for _, p := range running.Pods {
				rj := p.GetLabels()["jobset.sigs.k8s.io/replicatedjob-name"]
				require.NoError(t, c.SetPodOutcome(ctx, p.GetNamespace(), p.GetName(), tc.outcome(rj)))
			}
			waitForState(ctx, t, c, def, jsName, tc.final, &seen)
			require.Equal(t, []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateRunning, tc.final}, dedupe(seen))
		})
	}
}

// dedupe drops states seen between Running and the final state while pods finish (the
// JobSet may read as Pending for a moment when a Job has finished and another not yet).
func dedupe(seen []v1alpha1.State) []v1alpha1.State {
	out := []v1alpha1.State{}
	for _, s := range seen {
		if len(out) >= 2 && out[len(out)-1] == v1alpha1.StateRunning && s != v1alpha1.StateCompleted && s != v1alpha1.StateFailed {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// TestLiveResolutionRequestCount: one live resolution of a workload with 100 pods makes at
// most (child kinds + 3) API requests against a real API server.
func TestLiveResolutionRequestCount(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, NoScheduler: true})
	ctx := context.Background()
	def := jobSetDefinition(t)

	js := exampleJobSet(t, "wide")
	rjs := js.Object["spec"].(map[string]any)["replicatedJobs"].([]any)
	workers := rjs[1].(map[string]any)
	workers["replicas"] = int64(1)
	spec := workers["template"].(map[string]any)["spec"].(map[string]any)
	spec["parallelism"], spec["completions"] = int64(99), int64(99)
	_, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=wide"})
		return err == nil && len(pods.Items) == 100
	}, 90*time.Second, 200*time.Millisecond, "the job controller creates 100 pods")

	root, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Get(ctx, "wide", metav1.GetOptions{})
	require.NoError(t, err)
	var reqs harness.Requests
	res, err := (&live.Resolver{Client: dynamic.NewForConfigOrDie(reqs.Wrap(c.Config))}).Resolve(ctx, def, root)
	require.NoError(t, err)
	require.Len(t, res.Pods, 100)
	require.EqualValues(t, 100, res.Workload.Totals.Pods)
	budget := int64(len(def.Children()) + 3)
	require.LessOrEqual(t, int64(len(reqs.List())), budget, "API requests for one resolution")
	t.Logf("one live resolution of 100 pods: %d API requests (budget %d)", len(reqs.List()), budget)
}
