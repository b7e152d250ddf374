package pytorchjob

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/live"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

const framework = "pytorchjob"

// Pod labels the training-operator puts on every pod it creates.
const (
	jobNameLabel     = "training.kubeflow.org/job-name"
	replicaTypeLabel = "training.kubeflow.org/replica-type"
)

// schedulerOptions let a gang that cannot fit give up and retry quickly.
var schedulerOptions = harness.SchedulerOptions{PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: 2}

func podsOf(job string) string { return jobNameLabel + "=" + job }

// sample reads an upstream PyTorchJob sample and points its pods at workmap-scheduler.
func sample(t *testing.T, def *definitions.Definition, file string) *unstructured.Unstructured {
	t.Helper()
	objs := livecheck.Sample(t, framework, file)
	require.Len(t, objs, 1, "%s holds one PyTorchJob", file)
	obj := objs[0]
	if obj.GetNamespace() == "" {
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	livecheck.SetSchedulerName(t, def, obj, harness.SchedulerName)
	return obj
}

// setRestartPolicy sets the restartPolicy of every replica type. The samples use OnFailure,
// with which a real kubelet restarts a failed container in place and the pod never fails;
// kwok does not restart containers, so a test that fails a pod uses Never, the policy under
// which a failed pod fails the job.
func setRestartPolicy(t *testing.T, obj *unstructured.Unstructured, policy string) {
	t.Helper()
	specs, _, err := unstructured.NestedMap(obj.Object, "spec", "pytorchReplicaSpecs")
	require.NoError(t, err)
	for rt := range specs {
		require.NoError(t, unstructured.SetNestedField(obj.Object, policy, "spec", "pytorchReplicaSpecs", rt, "restartPolicy"))
	}
}

// operatorStates are the workmap states that agree with the training-operator's own
// conditions: the operator keeps Created=True throughout and adds the others beside it, so
// the first True one of Failed, Succeeded, Suspended, Restarting, Running decides; with only
// Created (or nothing yet) workmap tells Pending from Initializing by the pods.
func operatorStates(root *unstructured.Unstructured) []v1alpha1.State {
	for _, m := range []struct {
		condition string
		state     v1alpha1.State
	}{
		{"Failed", v1alpha1.StateFailed},
		{"Succeeded", v1alpha1.StateCompleted},
		{"Suspended", v1alpha1.StateSuspended},
		{"Restarting", v1alpha1.StateDegraded},
		{"Running", v1alpha1.StateRunning},
	} {
		if livecheck.Condition(root, m.condition) == metav1.ConditionTrue {
			return []v1alpha1.State{m.state}
		}
	}
	return []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateInitializing}
}

// resolver resolves a PyTorchJob live and checks, at every resolution, that workmap's state
// agrees with the conditions of the very object it resolved.
func resolver(ctx context.Context, t *testing.T, c *harness.Cluster, def *definitions.Definition, namespace, name string) func() *live.Result {
	return func() *live.Result {
		t.Helper()
		root, err := c.Dynamic.Resource(Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		res, err := (&live.Resolver{Client: c.Dynamic}).Resolve(ctx, def, root)
		require.NoError(t, err)
		conds, _, _ := unstructured.NestedSlice(root.Object, "status", "conditions")
		require.Contains(t, operatorStates(root), res.Workload.Status.State, "workmap's state against the operator's conditions %v", conds)
		return res
	}
}

// TestSamplesLifecycle runs upstream samples through the real operator and kwok, with
// workmap-scheduler placing the pods, and checks workmap's tree, gang and states against what
// the cluster holds at each step.
//
// Not covered: Degraded, which workmap reads from the operator's Restarting condition. Under
// restartPolicy OnFailure (or ExitCode with a retryable code) the operator deletes a failed
// pod, sets Restarting and recreates the pod, which kwok runs at once, so Running replaces
// Restarting within one sync; and kwok's failed containers exit with code 1, which ExitCode
// treats as permanent (the job fails).
func TestSamplesLifecycle(t *testing.T) {
	c := harness.Start(t, harness.Options{})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(schedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	tests := map[string]struct {
		file string
		// adjust changes the sample where the local cluster needs it.
		adjust func(t *testing.T, obj *unstructured.Unstructured)
		// podsByType are the pods the operator creates, by replica-type label.
		podsByType map[string]int
		// gang is the PodGroup workmap makes for the job's pods (its minMember); 0: none.
		gang int32
		// hpa: the job has an elasticPolicy with metrics, so the operator makes an HPA.
		hpa bool
		// outcome is how each running pod ends, by replica type and name; "" leaves it running.
		outcome func(replicaType, pod string) corev1.PodPhase
		final   v1alpha1.State
	}{
		"Master and Worker succeed: Completed": {
			file:       "simple.yaml",
			podsByType: map[string]int{"master": 1, "worker": 1},
			gang:       2,
			outcome:    func(string, string) corev1.PodPhase { return corev1.PodSucceeded },
			final:      v1alpha1.StateCompleted,
		},
		"GPU job whose Master fails under restartPolicy Never: Failed": {
			file:       "pytorch_job_mnist_nccl.yaml",
			adjust:     func(t *testing.T, obj *unstructured.Unstructured) { setRestartPolicy(t, obj, "Never") },
			podsByType: map[string]int{"master": 1, "worker": 1},
			gang:       2,
			outcome: func(rt, _ string) corev1.PodPhase {
				if rt == "master" {
					return corev1.PodFailed
				}
				return ""
			},
			final: v1alpha1.StateFailed,
		},
		// elasticPolicy.minReplicas 1: the job can start with one worker, so workmap makes
		// no gang; and an elastic job succeeds as soon as one worker has.
		"elastic job, one of two workers succeeds: Completed without a gang": {
			file:       "elastic-imagenet.yaml",
			podsByType: map[string]int{"worker": 2},
			hpa:        true,
			outcome: func(_, pod string) corev1.PodPhase {
				if strings.HasSuffix(pod, "-worker-0") {
					return corev1.PodSucceeded
				}
				return ""
			},
			final: v1alpha1.StateCompleted,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := sample(t, def, tc.file)
			if tc.adjust != nil {
				tc.adjust(t, obj)
			}
			ns, job := obj.GetNamespace(), obj.GetName()
			createJob(ctx, t, c, obj)
			resolve := resolver(ctx, t, c, def, ns, job)

			var seen []v1alpha1.State
			livecheck.WaitForState(ctx, t, time.Minute, resolve, v1alpha1.StateRunning, &seen)
			require.Contains(t, []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateInitializing}, seen[0], "a new PyTorchJob starts Pending or Initializing")

			want := 0
			for _, n := range tc.podsByType {
				want += n
			}
			var pods []corev1.Pod
			require.Eventually(t, func() bool {
				pods = livecheck.Pods(ctx, t, c, ns, podsOf(job))
				return len(pods) == want && harness.Bound(pods) == want
			}, time.Minute, 100*time.Millisecond, "the operator creates %d pods and they are bound", want)
			byType := map[string]int{}
			for _, p := range pods {
				byType[p.Labels[replicaTypeLabel]]++
			}
			require.Equal(t, tc.podsByType, byType, "pods by replica type")
			running := resolve()
			livecheck.RequireTree(t, running, pods)
			require.Len(t, running.Children["services"], want, "one headless Service per pod")
			if tc.hpa {
				require.Len(t, running.Children["horizontalPodAutoscalers"], 1, "the elastic job's HPA")
			}

			g := c.NewGangs(t, ns)
			var groups []string
			for _, pg := range g.PodGroups() {
				if strings.HasPrefix(pg.Name, job) {
					groups = append(groups, pg.Name)
				}
			}
			if tc.gang == 0 {
				require.Empty(t, groups, "no PodGroup for a job that can start with one pod")
			} else {
				require.Equal(t, []string{job + "-all"}, groups)
				pg, err := g.PodGroup(job + "-all")
				require.NoError(t, err)
				require.Equal(t, tc.gang, pg.Spec.MinMember)
				require.Len(t, g.Pods(schedulingv1alpha1.PodGroupLabel+"="+job+"-all"), want, "every pod of the job is in its gang")
			}

			for _, p := range pods {
				if phase := tc.outcome(p.Labels[replicaTypeLabel], p.Name); phase != "" {
					require.NoError(t, c.SetPodOutcome(ctx, ns, p.Name, phase))
				}
			}
			livecheck.WaitForState(ctx, t, time.Minute, resolve, tc.final, &seen)
			i := slices.Index(seen, v1alpha1.StateRunning)
			require.Equal(t, []v1alpha1.State{v1alpha1.StateRunning, tc.final}, seen[i:], "states after the pods ran")
			t.Logf("states seen: %v", seen)
		})
	}
}

// createJob creates a sample PyTorchJob and deletes it (and so its pods) when the test ends.
func createJob(ctx context.Context, t *testing.T, c *harness.Cluster, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := c.Dynamic.Resource(Resource).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		background := metav1.DeletePropagationBackground
		_ = c.Dynamic.Resource(Resource).Namespace(obj.GetNamespace()).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
	})
}

// TestGangScheduling: workmap-scheduler places the operator's pods in the gang the
// definition computes from the job, on nodes that are one pod short of the job.
func TestGangScheduling(t *testing.T) {
	// One GPU and six CPUs: room for one pod of each sample below.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "node-0", GPUs: 1, CPU: "6"}}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(schedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	// Runs first, while only node-0 exists.
	t.Run("elastic job with minReplicas 1: one worker binds where only one fits", func(t *testing.T) {
		obj := sample(t, def, "elastic-imagenet.yaml")
		job := obj.GetName()
		createJob(ctx, t, c, obj)
		g := c.NewGangs(t, obj.GetNamespace())
		g.WaitCreated(podsOf(job), 2)
		require.Eventually(t, func() bool { return harness.Bound(g.Pods(podsOf(job))) == 1 }, 30*time.Second, 100*time.Millisecond,
			"the worker that fits binds: the job can run with elasticPolicy.minReplicas = 1 worker")
		time.Sleep(3 * time.Second)
		require.Equal(t, 1, harness.Bound(g.Pods(podsOf(job))), "the other worker waits for room")
		for _, pg := range g.PodGroups() {
			require.False(t, strings.HasPrefix(pg.Name, job), "no PodGroup for the elastic job, found %s", pg.Name)
		}
	})

	t.Run("GPU job with room for one of its two pods: none binds, both once a node is added", func(t *testing.T) {
		obj := sample(t, def, "pytorch_job_mnist_nccl.yaml")
		job := obj.GetName()
		createJob(ctx, t, c, obj)
		g := c.NewGangs(t, obj.GetNamespace())
		g.WaitCreated(podsOf(job), 2)
		g.NeverPartial(8*time.Second, map[string]int{podsOf(job): 2})
		require.Zero(t, harness.Bound(g.Pods(podsOf(job))), "no pod binds while the gang cannot fit")
		g.WaitPhase(job+"-all", 0, schedulingv1alpha1.PodGroupPending)
		pg, err := g.PodGroup(job + "-all")
		require.NoError(t, err)
		require.EqualValues(t, 2, pg.Spec.MinMember, "Master + Worker")

		c.AddNode(ctx, harness.Node{Name: "node-1", GPUs: 1, CPU: "6"})
		g.WaitBound(podsOf(job), 2, time.Minute)
		g.WaitPhase(job+"-all", 2, schedulingv1alpha1.PodGroupScheduled, schedulingv1alpha1.PodGroupRunning)
		livecheck.RequireTree(t, resolver(ctx, t, c, def, obj.GetNamespace(), job)(), g.Pods(podsOf(job)))
	})
}

// TestOperatorPodGroups: with --gang-scheduler-name the operator makes its own
// scheduler-plugins PodGroup per job and labels its pods with it; workmap-scheduler then
// gangs the pods by that PodGroup and makes none of its own.
func TestOperatorPodGroups(t *testing.T) {
	// Six CPUs: room for one of the two workers of the elastic sample (4 CPUs each).
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "node-0", CPU: "6"}}})
	ctx := context.Background()
	StartWith(ctx, t, c, Options{GangSchedulerName: harness.SchedulerName})
	c.StartWorkmapScheduler(schedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	obj := sample(t, def, "elastic-imagenet.yaml")
	ns, job := obj.GetNamespace(), obj.GetName()
	createJob(ctx, t, c, obj)
	g := c.NewGangs(t, ns)
	g.WaitCreated(podsOf(job), 2)
	for _, p := range g.Pods(podsOf(job)) {
		require.Equal(t, job, p.Labels[schedulingv1alpha1.PodGroupLabel], "pod %s is in the operator's PodGroup", p.Name)
	}
	pg, err := g.PodGroup(job)
	require.NoError(t, err, "the operator's PodGroup, named after the job")
	// The operator's gang is every pod (it ignores elasticPolicy.minReplicas), so workmap's
	// own reading of the job (no gang: minReplicas 1) must not be the one applied.
	require.EqualValues(t, 2, pg.Spec.MinMember)
	require.Len(t, pg.OwnerReferences, 1)
	require.Equal(t, "PyTorchJob", pg.OwnerReferences[0].Kind)

	g.NeverPartial(8*time.Second, map[string]int{podsOf(job): 2})
	require.Zero(t, harness.Bound(g.Pods(podsOf(job))), "no worker binds while the operator's gang of 2 cannot fit")
	names := []string{}
	for _, pg := range g.PodGroups() {
		names = append(names, pg.Name)
	}
	require.Equal(t, []string{job}, names, "workmap makes no PodGroup of its own")

	c.AddNode(ctx, harness.Node{Name: "node-1", CPU: "6"})
	g.WaitBound(podsOf(job), 2, time.Minute)
	livecheck.RequireTree(t, resolver(ctx, t, c, def, ns, job)(), g.Pods(podsOf(job)))
}
