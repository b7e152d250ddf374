package kuberay

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// The states of a RayJob that kwok can drive, read from KubeRay v1.5.0's RayJob controller
// (K8sJobMode, the default):
//
//   - "" (New) → Initializing: the operator creates the RayCluster.
//   - Initializing → Running: once the RayCluster's status.state is ready (kwok makes its pods
//     Ready) the operator creates the submitter Job.
//   - Running → Failed (SubmissionFailed): the submitter Job fails (its pod fails).
//   - Running → Failed (JobDeploymentStatusTransitionGracePeriodExceeded): the submitter
//     succeeds, and 30 s later (DefaultSubmitterFinishedTimeout) the operator still has no
//     terminal Ray job status, because it asks the Ray dashboard of the head pod for it over
//     HTTP (GetJobInfo), which does not exist on kwok.
//   - Running or Initializing → Suspending → Suspended: spec.suspend deletes cluster and Job.
//
// Not reachable on kwok: Complete, and Failed with reason AppFailed, both need the dashboard to
// report the Ray job SUCCEEDED or FAILED; Waiting (InteractiveMode) and Retrying (backoffLimit)
// are reachable but not exercised here.

// TestRayJob applies upstream RayJob samples, lets KubeRay create the RayCluster and the
// submitter Job and kwok run their pods, and checks workmap's tree and state at every step.
func TestRayJob(t *testing.T) {
	// Mostly waiting on the operator's and the scheduler's timers: beside the other tests.
	t.Parallel()
	c := harness.Start(t, harness.Options{})
	ctx := context.Background()
	Start(ctx, t, c)
	def := livecheck.Definition(t, RayJobKind)

	tests := map[string]struct {
		file string
		// prepare adjusts the sample objects for the case, or creates what the sample needs.
		prepare func(t *testing.T, objs []*unstructured.Unstructured)
		// clusterPods are the pods of the RayCluster the RayJob creates (head + workers).
		clusterPods int
		// finish drives the Running RayJob to its end, given its submitter pod.
		finish func(t *testing.T, o *observer, job *unstructured.Unstructured, submitter corev1.Pod)
	}{
		"ray-job.sample.yaml: the submitter fails": {
			file: "ray-job.sample.yaml",
			prepare: func(t *testing.T, objs []*unstructured.Unstructured) {
				// One failed submitter pod fails the submitter Job at once, instead of after the
				// Job controller's backoff for KubeRay's default backoffLimit of 2 (10 s + 20 s).
				require.NoError(t, unstructured.SetNestedField(root(t, objs, "RayJob").Object, int64(0), "spec", "submitterConfig", "backoffLimit"))
			},
			clusterPods: 2,
			finish: func(t *testing.T, o *observer, job *unstructured.Unstructured, submitter corev1.Pod) {
				require.NoError(t, c.SetPodOutcome(ctx, ns, submitter.Name, corev1.PodFailed))
				failed := o.waitFor(ctx, v1alpha1.StateFailed)
				require.Contains(t, failed.Workload.Status.Reason, "SubmissionFailed")
			},
		},
		"ray-job.use-existing-raycluster.yaml: the submitter succeeds, Ray's verdict never comes": {
			file: "ray-job.use-existing-raycluster.yaml",
			prepare: func(t *testing.T, _ []*unstructured.Unstructured) {
				// The cluster the sample selects (clusterSelector ray.io/cluster:
				// ray-cluster-kuberay): ray-cluster.sample.yaml under that name.
				cluster := root(t, livecheck.Sample(t, "raycluster", "ray-cluster.sample.yaml"), "RayCluster")
				cluster.SetName("ray-cluster-kuberay")
				create(ctx, t, c, cluster)
			},
			clusterPods: 0, // the selected cluster's pods are not the RayJob's
			finish: func(t *testing.T, o *observer, job *unstructured.Unstructured, submitter corev1.Pod) {
				require.NoError(t, c.SetPodOutcome(ctx, ns, submitter.Name, corev1.PodSucceeded))
				failed := o.waitFor(ctx, v1alpha1.StateFailed)
				require.Contains(t, failed.Workload.Status.Reason, "JobDeploymentStatusTransitionGracePeriodExceeded")
				require.Len(t, clusterPods(ctx, t, c, "ray-cluster-kuberay"), 2, "a RayJob leaves the cluster it selected alone")
			},
		},
		"ray-job.pytorch-distributed-training.yaml: suspended while running": {
			file:        "ray-job.pytorch-distributed-training.yaml",
			clusterPods: 1,
			finish: func(t *testing.T, o *observer, job *unstructured.Unstructured, submitter corev1.Pod) {
				cluster := job.Object["status"].(map[string]any)["rayClusterName"].(string)
				setSuspend(ctx, t, c, RayJobResource, job.GetName(), true)
				suspended := o.waitFor(ctx, v1alpha1.StateSuspended)
				require.Zero(t, suspended.Workload.Totals.Pods, "a suspended RayJob expects no pods")
				waitPodsGone(ctx, t, c, "ray.io/cluster="+cluster)
				waitPodsGone(ctx, t, c, "batch.kubernetes.io/job-name="+job.GetName())
				require.Eventually(t, func() bool {
					return o.resolve(ctx).Workload.Status.Reason == "suspended: the RayCluster and the submitter are deleted"
				}, stateTimeout, pollInterval, "the operator reports Suspended once all is deleted")
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objs := livecheck.Sample(t, "rayjob", tc.file)
			if tc.prepare != nil {
				tc.prepare(t, objs)
			}
			job := root(t, create(ctx, t, c, objs...), "RayJob")
			o := newObserver(t, c, def, RayJobResource, job.GetName(), rayJobState)
			o.resolve(ctx)
			o.waitFor(ctx, v1alpha1.StateRunning)
			requireProgress(t, o.seen, v1alpha1.StatePending, v1alpha1.StateInitializing, v1alpha1.StateRunning)

			// The submitter Job is created with the step to Running: wait for its pod.
			var pods []corev1.Pod
			var submitter corev1.Pod
			require.Eventually(t, func() bool {
				subs := livecheck.Pods(ctx, t, c, ns, "batch.kubernetes.io/job-name="+job.GetName())
				if len(subs) != 1 {
					return false
				}
				submitter = subs[0]
				return true
			}, stateTimeout, pollInterval, "the submitter pod of %s", job.GetName())
			job = get(ctx, t, c, RayJobResource, job.GetName())
			if tc.clusterPods > 0 {
				pods = clusterPods(ctx, t, c, job.Object["status"].(map[string]any)["rayClusterName"].(string))
			}
			require.Len(t, pods, tc.clusterPods, "pods of the RayCluster KubeRay made for %s", tc.file)
			pods = append(pods, submitter)
			livecheck.RequireTree(t, o.resolve(ctx), pods)

			tc.finish(t, o, job, submitter)
			t.Logf("%s: states seen %v", job.GetName(), o.seen)
		})
	}
}

// rayJobState is the state a RayJob's status.jobDeploymentStatus stands for. A spec.suspend
// the operator has not acted on yet counts as Suspended (it deletes the cluster at its next
// reconcile), except for a RayJob that has already finished.
func rayJobState(obj *unstructured.Unstructured) v1alpha1.State {
	st, _, _ := unstructured.NestedString(obj.Object, "status", "jobDeploymentStatus")
	suspend, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
	switch {
	case st == "Complete":
		return v1alpha1.StateCompleted
	case st == "Failed" || st == "ValidationFailed":
		return v1alpha1.StateFailed
	case suspend || st == "Suspending" || st == "Suspended":
		return v1alpha1.StateSuspended
	case st == "Running" || st == "Waiting":
		return v1alpha1.StateRunning
	case st == "Initializing" || st == "Retrying":
		return v1alpha1.StateInitializing
	}
	return v1alpha1.StatePending
}
