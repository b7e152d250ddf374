package plugin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// TestGangPreemptsWholeGang: on the real control plane, a high-priority gang that needs one
// node of a cluster held by a low-priority gang of two takes the whole low gang, never one of
// its pods alone; the victims are marked DisruptionTarget and deleted, and the events say who
// preempted whom.
func TestGangPreemptsWholeGang(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{{Name: "gpu-1", GPUs: 8}, {Name: "gpu-2", GPUs: 8}}})
	c.StartWorkmapScheduler(testSchedulerOptions)
	ctx := context.Background()
	for name, value := range map[string]int32{"low": 10, "high": 1000} {
		_, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	g := newGangs(t, c)
	gang := func(name, priorityClass string, size int) {
		t.Helper()
		require.NoError(t, g.Client().Create(ctx, &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       v1alpha1.PodGroupSpec{MinMember: int32(size)},
		}))
		for i := range size {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: map[string]string{v1alpha1.PodGroupLabel: name}},
				Spec: corev1.PodSpec{
					SchedulerName: harness.SchedulerName, PriorityClassName: priorityClass, TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
					}}},
				},
			}
			_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	gang("low", "low", 2)
	g.WaitBound(v1alpha1.PodGroupLabel+"=low", 2, 60*time.Second)

	gang("high", "high", 1)
	g.WaitBound(v1alpha1.PodGroupLabel+"=high", 1, 60*time.Second)
	require.Eventually(t, func() bool {
		for _, name := range []string{"low-0", "low-1"} {
			if _, err := c.Kube.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "both pods of the low gang are preempted, not one")

	events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	said := map[string]string{}
	for _, e := range events.Items {
		if e.Reason == "Preempting" || e.Reason == "Preempted" {
			said[e.InvolvedObject.Name] = e.Message
		}
	}
	require.Contains(t, said["high-0"], "PodGroup default/high (priority 1000) preempts default/low (2 pods, priority 10)")
	for _, victim := range []string{"low-0", "low-1"} {
		require.Contains(t, said[victim], "Preempted by PodGroup default/high (priority 1000), with the 2 pods of default/low")
	}
}
