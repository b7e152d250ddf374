package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
)

// TestHarnessRunsJobs checks the harness itself: kwok GPU nodes are Ready, the job controller
// makes pods, the scheduler (started on demand, as the benchmarks do) binds them, kwok runs
// them and finishes them on request.
func TestHarnessRunsJobs(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{{Name: "gpu-0", GPUs: 8}}})
	c.StartKubeScheduler(harness.KubeSchedulerOptions{QPS: 50, Burst: 100})
	ctx := context.Background()

	require.Eventually(t, func() bool {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return n.Status.Allocatable.Name("nvidia.com/gpu", resource.DecimalSI).Value() == 8
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "kwok makes the node Ready with 8 GPUs")

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "two-pods", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
				}}},
			}},
		},
	}
	_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)

	var pods *corev1.PodList
	require.Eventually(t, func() bool {
		pods, err = c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=two-pods"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "the Job's two pods run")

	for _, p := range pods.Items {
		require.NoError(t, c.SetPodOutcome(ctx, p.Namespace, p.Name, corev1.PodSucceeded))
	}
	require.Eventually(t, func() bool {
		j, err := c.Kube.BatchV1().Jobs("default").Get(ctx, "two-pods", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 2
	}, 60*time.Second, 100*time.Millisecond, "the Job completes")
}

// TestRunToCompletionPodsFinish: with FinishRunToCompletionAfter (as `make serve` runs), the
// pods of a Job succeed that long after they start, so its Job completes and staged workloads
// go on; a pod's own run-for annotation keeps it running longer; a pod of no such kind (a
// server) keeps running.
func TestRunToCompletionPodsFinish(t *testing.T) {
	const after = 3 * time.Second
	c := harness.Start(t, harness.Options{FinishRunToCompletionAfter: after, Nodes: []harness.Node{{Name: "node-0"}}})
	ctx := context.Background()
	job := func(name string, annotations map[string]string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "trainer"}}},
			}},
		}
	}
	for _, j := range []*batchv1.Job{job("train", nil), job("long", map[string]string{harness.RunForAnnotation: "1h"})} {
		_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "server"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	start := time.Now()
	require.Eventually(t, func() bool {
		j, err := c.Kube.BatchV1().Jobs("default").Get(ctx, "train", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded == 1
	}, 60*time.Second, 100*time.Millisecond, "the Job's pod succeeds and the Job completes")
	require.GreaterOrEqual(t, time.Since(start), after, "not before it ran for %s", after)

	phase := func(selector string) []corev1.PodPhase {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		require.NoError(t, err)
		var out []corev1.PodPhase
		for _, p := range pods.Items {
			out = append(out, p.Status.Phase)
		}
		return out
	}
	require.Equal(t, []corev1.PodPhase{corev1.PodRunning}, phase("job-name=long"), "its run-for annotation keeps it running")
	server, err := c.Kube.CoreV1().Pods("default").Get(ctx, "server", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.PodRunning, server.Status.Phase, "a pod of no run-to-completion kind keeps running")
}
