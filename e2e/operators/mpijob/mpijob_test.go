package mpijob

import (
	"context"
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

const framework = "mpijob"

// jobRoleLabel is the label with which the MPI operator tells the launcher pod from the
// worker pods.
const jobRoleLabel = "training.kubeflow.org/job-role"

// failFast makes the launcher's first failure fail the job: restartPolicy Never (under the
// samples' default OnFailure a real kubelet restarts the launcher container in place, which
// kwok does not do) and runPolicy.backoffLimit 0 (the launcher Job's default of 6 retries,
// with growing back-off, would take minutes).
func failFast(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, unstructured.SetNestedField(obj.Object, "Never", "spec", "mpiReplicaSpecs", "Launcher", "restartPolicy"))
	require.NoError(t, unstructured.SetNestedField(obj.Object, int64(0), "spec", "runPolicy", "backoffLimit"))
}

// TestSamplesLifecycle runs upstream samples through the real operator, the Job controller
// and kwok, with workmap-scheduler placing the pods, and checks workmap's tree, gang and
// states against what the cluster holds at each step.
//
// Not reached here: Degraded, which workmap reads from a Restarting condition; the MPI
// operator (v0.8.0) never sets Restarting.
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
		// podsByRole are the pods created, by job-role label.
		podsByRole map[string]int
		// launcherOutcome is how the launcher pod ends (mpirun's exit decides the job).
		launcherOutcome corev1.PodPhase
		final           v1alpha1.State
	}{
		"pi: the launcher succeeds: Completed": {
			file:            "pi.yaml",
			podsByRole:      map[string]int{"launcher": 1, "worker": 2},
			launcherOutcome: corev1.PodSucceeded,
			final:           v1alpha1.StateCompleted,
		},
		"GPU benchmark: the launcher fails: Failed": {
			file:            "tensorflow-benchmarks.yaml",
			adjust:          failFast,
			podsByRole:      map[string]int{"launcher": 1, "worker": 2},
			launcherOutcome: corev1.PodFailed,
			final:           v1alpha1.StateFailed,
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
			for _, n := range tc.podsByRole {
				want += n
			}
			// The operator reports Running once the launcher and every worker run.
			pods := livecheck.Pods(ctx, t, c, ns, kubeflow.PodsOf(job))
			byRole := map[string]int{}
			for _, p := range pods {
				require.Equal(t, corev1.PodRunning, p.Status.Phase, "pod %s", p.Name)
				byRole[p.Labels[jobRoleLabel]]++
			}
			require.Equal(t, tc.podsByRole, byRole, "pods by job role")
			running := observer.Resolve()
			livecheck.RequireTree(t, running, pods)
			require.Len(t, running.Children["jobs"], 1, "the launcher Job")
			require.Len(t, running.Children["services"], 1, "the headless Service of the job")
			require.Len(t, running.Children["configMaps"], 1, "the hostfile ConfigMap")

			g := c.NewGangs(t, ns)
			pg, err := g.PodGroup(job + "-all")
			require.NoError(t, err, "workmap's PodGroup for the job")
			require.EqualValues(t, want, pg.Spec.MinMember, "launcher + workers")
			require.Len(t, g.Pods(schedulingv1alpha1.PodGroupLabel+"="+job+"-all"), want, "every pod of the job is in its gang")

			var launcher string
			for _, p := range pods {
				if p.Labels[jobRoleLabel] == "launcher" {
					launcher = p.Name
				}
			}
			require.NoError(t, c.SetPodOutcome(ctx, ns, launcher, tc.launcherOutcome))
			observer.WaitUntilFinal(tc.final)
		})
	}
}

// TestGangScheduling: workmap-scheduler places the operator's pods — the launcher through
// its Job, the workers owned by the MPIJob — in the gang the definition computes, on nodes
// one pod short of it.
func TestGangScheduling(t *testing.T) {
	// Two CPUs; pi.yaml's three pods ask for one CPU each.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "node-0", CPU: "2"}}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(kubeflow.SchedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	t.Run("launcher and workers, room for two of three: none binds, all once a node is added", func(t *testing.T) {
		obj := kubeflow.Sample(t, framework, def, "pi.yaml")
		ns, job := obj.GetNamespace(), obj.GetName()
		kubeflow.CreateJob(ctx, t, c, Resource, obj)
		g := c.NewGangs(t, ns)
		g.WaitCreated(kubeflow.PodsOf(job), 3)
		g.NeverPartial(8*time.Second, map[string]int{kubeflow.PodsOf(job): 3})
		require.Zero(t, harness.Bound(g.Pods(kubeflow.PodsOf(job))), "no pod binds while launcher + 2 workers cannot fit")
		g.WaitPhase(job+"-all", 0, schedulingv1alpha1.PodGroupPending)
		pg, err := g.PodGroup(job + "-all")
		require.NoError(t, err)
		require.EqualValues(t, 3, pg.Spec.MinMember)
		require.Equal(t, []string{job + "-all"}, kubeflow.PodGroupsOf(g, job))

		c.AddNode(ctx, harness.Node{Name: "node-1", CPU: "2"})
		g.WaitBound(kubeflow.PodsOf(job), 3, time.Minute)
		g.WaitPhase(job+"-all", 3, schedulingv1alpha1.PodGroupScheduled, schedulingv1alpha1.PodGroupRunning)
		livecheck.RequireTree(t, kubeflow.Observe(ctx, t, c, def, Resource, ns, job).Resolve(), g.Pods(kubeflow.PodsOf(job)))

		// Free the nodes for the next case: the launcher succeeds, and the operator deletes
		// the running workers (cleanPodPolicy: Running).
		launcher := g.Pods(kubeflow.PodsOf(job) + "," + jobRoleLabel + "=launcher")
		require.Len(t, launcher, 1)
		require.NoError(t, c.SetPodOutcome(ctx, ns, launcher[0].Name, corev1.PodSucceeded))
		require.Eventually(t, func() bool {
			for _, p := range g.Pods(kubeflow.PodsOf(job)) {
				if p.Status.Phase != corev1.PodSucceeded {
					return false
				}
			}
			return true
		}, time.Minute, 100*time.Millisecond, "%s done, its workers deleted", job)
	})

	// Four CPUs now: room for the two workers (two CPUs each), not for the launcher too.
	t.Run("launcher created once the workers are ready: the workers alone are the gang", func(t *testing.T) {
		obj := kubeflow.Sample(t, framework, def, "horovod-tensorflow-mnist.yaml")
		// The policy under test: the operator creates the launcher only once every worker is
		// ready, so a gang holding it could never fill.
		require.NoError(t, unstructured.SetNestedField(obj.Object, "WaitForWorkersReady", "spec", "launcherCreationPolicy"))
		ns, job := obj.GetNamespace(), obj.GetName()
		kubeflow.CreateJob(ctx, t, c, Resource, obj)
		g := c.NewGangs(t, ns)
		workers := kubeflow.PodsOf(job) + "," + jobRoleLabel + "=worker"
		g.WaitBound(workers, 2, time.Minute)
		pg, err := g.PodGroup(job + "-workers")
		require.NoError(t, err)
		require.EqualValues(t, 2, pg.Spec.MinMember)
		require.Equal(t, []string{job + "-workers"}, kubeflow.PodGroupsOf(g, job))

		launcher := kubeflow.PodsOf(job) + "," + jobRoleLabel + "=launcher"
		g.WaitCreated(launcher, 1)
		require.Empty(t, g.Pods(launcher)[0].Labels[schedulingv1alpha1.PodGroupLabel], "the launcher is in no gang")
		require.Never(t, func() bool { return harness.Bound(g.Pods(launcher)) > 0 }, 2*time.Second, 100*time.Millisecond, "no room for the launcher yet")
		c.AddNode(ctx, harness.Node{Name: "node-2", CPU: "2"})
		g.WaitBound(launcher, 1, time.Minute)
		livecheck.RequireTree(t, kubeflow.Observe(ctx, t, c, def, Resource, ns, job).Resolve(), g.Pods(kubeflow.PodsOf(job)))
	})
}

// TestOperatorPodGroups: with --gang-scheduling the operator makes its own scheduler-plugins
// PodGroup per job and labels its pods with it; workmap-scheduler then gangs the pods by that
// PodGroup and makes none of its own.
func TestOperatorPodGroups(t *testing.T) {
	// Two CPUs; pi.yaml's three pods ask for one CPU each.
	c := harness.Start(t, harness.Options{Nodes: []harness.Node{{Name: "node-0", CPU: "2"}}})
	ctx := context.Background()
	StartWith(ctx, t, c, Options{GangSchedulerName: harness.SchedulerName})
	c.StartWorkmapScheduler(kubeflow.SchedulerOptions)
	def := livecheck.Definition(t, GroupKind)

	obj := kubeflow.Sample(t, framework, def, "pi.yaml")
	ns, job := obj.GetNamespace(), obj.GetName()
	kubeflow.CreateJob(ctx, t, c, Resource, obj)
	g := c.NewGangs(t, ns)
	g.WaitCreated(kubeflow.PodsOf(job), 3)
	kubeflow.RequireOperatorPodGroup(t, g, def, job, 3) // launcher + workers

	g.NeverPartial(8*time.Second, map[string]int{kubeflow.PodsOf(job): 3})
	require.Zero(t, harness.Bound(g.Pods(kubeflow.PodsOf(job))), "no pod binds while the operator's gang of 3 cannot fit")
	require.Equal(t, []string{job}, kubeflow.PodGroupsOf(g, job), "workmap makes no PodGroup of its own")

	c.AddNode(ctx, harness.Node{Name: "node-1", CPU: "2"})
	g.WaitBound(kubeflow.PodsOf(job), 3, time.Minute)
	livecheck.RequireTree(t, kubeflow.Observe(ctx, t, c, def, Resource, ns, job).Resolve(), g.Pods(kubeflow.PodsOf(job)))
}
