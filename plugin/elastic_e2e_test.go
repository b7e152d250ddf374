package plugin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// TestElasticGangs: a gang follows its workload's size. Jobs of 4-GPU pods on two nodes of 8
// GPUs (room for 4 pods) are scaled through their parallelism (their minMember, unless the
// workmap.dev/min-member annotation sets it) by the real Job controller.
func TestElasticGangs(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{{Name: "gpu-1", GPUs: 8}, {Name: "gpu-2", GPUs: 8}}})
	c.StartWorkmapScheduler(testSchedulerOptions)
	g := newGangs(t, c)
	ctx := context.Background()
	jobs := c.Kube.BatchV1().Jobs("default")

	newJob := func(t *testing.T, name string, parallelism int32, minMember string) {
		t.Helper()
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{}},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To(parallelism),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec:       gpuPodSpec(4),
				},
			},
		}
		if minMember != "" {
			job.Annotations[definitions.AnnotationMinMember] = minMember
		}
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			require.Eventually(t, func() bool { return len(g.Pods("app="+name)) == 0 }, 60*time.Second, 200*time.Millisecond, "the pods of Job %s gone", name)
		})
	}
	scale := func(t *testing.T, name string, parallelism int32) {
		t.Helper()
		_, err := jobs.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"parallelism":%d}}`, parallelism), metav1.PatchOptions{})
		require.NoError(t, err)
	}

	t.Run("scaled up beyond its minMember while it runs: the new pods bind as they come", func(t *testing.T) {
		g.t = t
		newJob(t, "grow", 2, "2")
		g.WaitBound("app=grow", 2, 30*time.Second)
		g.WaitPhase("grow-job", 2, v1alpha1.PodGroupRunning)
		scale(t, "grow", 5)
		require.Eventually(t, func() bool { return harness.Bound(g.Pods("app=grow")) == 4 }, 30*time.Second, 100*time.Millisecond,
			"2 of the 3 new pods bind at once: room for 2 more, and none of them waits for a whole second gang")
		g.WaitCreated("app=grow", 5)
		time.Sleep(2 * time.Second)
		require.Equal(t, 4, harness.Bound(g.Pods("app=grow")), "the fifth waits for room")
		g.WaitMinMember("grow-job", 2, "as its annotation says")
		g.WaitPhase("grow-job", 4, v1alpha1.PodGroupScheduled, v1alpha1.PodGroupRunning) // the status counts the pods it gained
	})

	t.Run("its minimum raised while it runs: the PodGroup follows, and the new pods bind together or not at all", func(t *testing.T) {
		g.t = t
		filler := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: "default"}, Spec: gpuPodSpec(4)}
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, filler, metav1.CreateOptions{})
		require.NoError(t, err)
		newJob(t, "raise", 2, "")
		g.WaitBound("app=raise", 2, 30*time.Second)
		g.WaitMinMember("raise-job", 2, "its parallelism")

		scale(t, "raise", 4)
		g.WaitMinMember("raise-job", 4, "its new parallelism")
		g.WaitCreated("app=raise", 4)
		// Room for one more pod beside the filler: never 3 of 4.
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			require.Equal(t, 2, harness.Bound(g.Pods("app=raise")), "the 2 new pods bind together or not at all")
		}
		require.NoError(t, c.Kube.CoreV1().Pods("default").Delete(ctx, "filler", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
		g.WaitBound("app=raise", 4, 30*time.Second)

		t.Run("then scaled down: the PodGroup follows with no new pod to group", func(t *testing.T) {
			scale(t, "raise", 2)
			g.WaitMinMember("raise-job", 2, "its parallelism scaled down")
			g.WaitBound("app=raise", 2, 30*time.Second)
			g.WaitRunning("raise-job")
		})
	})

	t.Run("scaled down while it waits for room: it binds once it fits", func(t *testing.T) {
		g.t = t
		newJob(t, "shrink", 5, "")
		g.WaitCreated("app=shrink", 5)
		g.NeverPartial(3*time.Second, map[string]int{"app=shrink": 5})
		require.Zero(t, harness.Bound(g.Pods("app=shrink")), "5 pods of 4 GPUs never fit 16")
		scale(t, "shrink", 4)
		g.WaitMinMember("shrink-job", 4, "its parallelism scaled down")
		g.WaitBound("app=shrink", 4, 30*time.Second)
	})
}

// gpuPodSpec is a pod for workmap-scheduler that asks for gpus GPUs and never ends by itself.
func gpuPodSpec(gpus int64) corev1.PodSpec {
	request := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
	return corev1.PodSpec{
		SchedulerName: harness.SchedulerName, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{Requests: request, Limits: request}}},
	}
}
