package pytorchjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/kubeflow"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

const framework = "pytorchjob"

// replicaTypeLabel is the label with which the training-operator tells a job's replica
// types (master, worker) apart.
const replicaTypeLabel = "training.kubeflow.org/replica-type"

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
	c.StartWorkmapScheduler(kubeflow.SchedulerOptions)
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
			obj := kubeflow.Sample(t, framework, def, tc.file)
			if tc.adjust != nil {
				tc.adjust(t, obj)
			}
			ns, job := obj.GetNamespace(), obj.GetName()
			kubeflow.CreateJob(ctx, t, c, Resource, obj)
			observer := kubeflow.Observe(ctx, t, c, def, Resource, ns, job)
			observer.WaitUntilRunning()

			want := 0
			for _, n := range tc.podsByType {
				want += n
			}
			var pods []corev1.Pod
			require.Eventually(t, func() bool {
				pods = livecheck.Pods(ctx, t, c, ns, kubeflow.PodsOf(job))
				return len(pods) == want && harness.Bound(pods) == want
			}, time.Minute, 100*time.Millisecond, "the operator creates %d pods and they are bound", want)
			byType := map[string]int{}
			for _, p := range pods {
				byType[p.Labels[replicaTypeLabel]]++
			}
			require.Equal(t, tc.podsByType, byType, "pods by replica type")
			running := observer.Resolve()
			livecheck.RequireTree(t, running, pods)
			require.Len(t, running.Children["services"], want, "one headless Service per pod")
			if tc.hpa {
				require.Len(t, running.Children["horizontalPodAutoscalers"], 1, "the elastic job's HPA")
			}

			g := c.NewGangs(t, ns)
			groups := kubeflow.PodGroupsOf(g, job)
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
			observer.WaitUntilFinal(tc.final)
		})
	}
}

// TestGangScheduling: workmap-scheduler places the operator's pods in the gang the
// definition computes from the job, on nodes that are one pod short of the job.
func TestGangScheduling(t *testing.T) {
	// One GPU and six CPUs: room for one pod of each sample below.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "node-0", GPUs: 1, CPU: "6"}}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(kubeflow.SchedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	// Runs first, while only node-0 exists.
	t.Run("elastic job with minReplicas 1: one worker binds where only one fits", func(t *testing.T) {
		obj := kubeflow.Sample(t, framework, def, "elastic-imagenet.yaml")
		job := obj.GetName()
		kubeflow.CreateJob(ctx, t, c, Resource, obj)
		g := c.NewGangs(t, obj.GetNamespace())
		g.WaitCreated(kubeflow.PodsOf(job), 2)
		require.Eventually(t, func() bool { return harness.Bound(g.Pods(kubeflow.PodsOf(job))) == 1 }, 30*time.Second, 100*time.Millisecond,
			"the worker that fits binds: the job can run with elasticPolicy.minReplicas = 1 worker")
		time.Sleep(3 * time.Second)
		require.Equal(t, 1, harness.Bound(g.Pods(kubeflow.PodsOf(job))), "the other worker waits for room")
		for _, pg := range g.PodGroups() {
			require.False(t, strings.HasPrefix(pg.Name, job), "no PodGroup for the elastic job, found %s", pg.Name)
		}
	})

	t.Run("GPU job with room for one of its two pods: none binds, both once a node is added", func(t *testing.T) {
		obj := kubeflow.Sample(t, framework, def, "pytorch_job_mnist_nccl.yaml")
		job := obj.GetName()
		kubeflow.CreateJob(ctx, t, c, Resource, obj)
		g := c.NewGangs(t, obj.GetNamespace())
		g.WaitCreated(kubeflow.PodsOf(job), 2)
		g.NeverPartial(8*time.Second, map[string]int{kubeflow.PodsOf(job): 2})
		require.Zero(t, harness.Bound(g.Pods(kubeflow.PodsOf(job))), "no pod binds while the gang cannot fit")
		g.WaitPhase(job+"-all", 0, schedulingv1alpha1.PodGroupPending)
		pg, err := g.PodGroup(job + "-all")
		require.NoError(t, err)
		require.EqualValues(t, 2, pg.Spec.MinMember, "Master + Worker")

		c.AddNode(ctx, harness.Node{Name: "node-1", GPUs: 1, CPU: "6"})
		g.WaitBound(kubeflow.PodsOf(job), 2, time.Minute)
		g.WaitPhase(job+"-all", 2, schedulingv1alpha1.PodGroupScheduled, schedulingv1alpha1.PodGroupRunning)
		livecheck.RequireTree(t, kubeflow.Observe(ctx, t, c, def, Resource, obj.GetNamespace(), job).Resolve(), g.Pods(kubeflow.PodsOf(job)))
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
	c.StartWorkmapScheduler(kubeflow.SchedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	obj := kubeflow.Sample(t, framework, def, "elastic-imagenet.yaml")
	ns, job := obj.GetNamespace(), obj.GetName()
	kubeflow.CreateJob(ctx, t, c, Resource, obj)
	g := c.NewGangs(t, ns)
	g.WaitCreated(kubeflow.PodsOf(job), 2)
	// The operator's gang is every pod (it ignores elasticPolicy.minReplicas), so workmap's
	// own reading of the job (no gang: minReplicas 1) must not be the one applied.
	kubeflow.RequireOperatorPodGroup(t, g, def, job, 2)

	g.NeverPartial(8*time.Second, map[string]int{kubeflow.PodsOf(job): 2})
	require.Zero(t, harness.Bound(g.Pods(kubeflow.PodsOf(job))), "no worker binds while the operator's gang of 2 cannot fit")
	names := []string{}
	for _, pg := range g.PodGroups() {
		names = append(names, pg.Name)
	}
	require.Equal(t, []string{job}, names, "workmap makes no PodGroup of its own")

	c.AddNode(ctx, harness.Node{Name: "node-1", CPU: "6"})
	g.WaitBound(kubeflow.PodsOf(job), 2, time.Minute)
	livecheck.RequireTree(t, kubeflow.Observe(ctx, t, c, def, Resource, ns, job).Resolve(), g.Pods(kubeflow.PodsOf(job)))
}
