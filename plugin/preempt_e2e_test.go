package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// preemptionCluster is a control plane with two nodes of 8 GPUs, workmap-scheduler, and the
// PriorityClasses low (10) and high (1000); newPod makes a pod of 8 GPUs at a PriorityClass,
// in a PodGroup when group is not "" (whose PodGroup newGang makes with minMember its size).
type preemptionCluster struct {
	t *testing.T
	c *harness.Cluster
	g *gangs
}

func newPreemptionCluster(t *testing.T) *preemptionCluster {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{{Name: "gpu-1", GPUs: 8}, {Name: "gpu-2", GPUs: 8}}})
	c.StartWorkmapScheduler(testSchedulerOptions)
	c.CreatePriorityClasses(context.Background(), map[string]int32{"low": 10, "high": 1000})
	return &preemptionCluster{t: t, c: c, g: newGangs(t, c)}
}

func (p *preemptionCluster) newPod(name, group, priorityClass string) {
	p.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulerName: harness.SchedulerName, PriorityClassName: priorityClass, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			}}},
		},
	}
	if group != "" {
		pod.Labels[v1alpha1.PodGroupLabel] = group
	}
	_, err := p.c.Kube.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(p.t, err)
}

func (p *preemptionCluster) newGang(name, priorityClass string, size int) {
	p.t.Helper()
	require.NoError(p.t, p.g.Client().Create(context.Background(), &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1alpha1.PodGroupSpec{MinMember: int32(size)},
	}))
	for i := range size {
		p.newPod(fmt.Sprintf("%s-%d", name, i), name, priorityClass)
	}
}

// waitGone waits until the pods are deleted.
func (p *preemptionCluster) waitGone(why string, names ...string) {
	p.t.Helper()
	require.Eventually(p.t, func() bool {
		for _, name := range names {
			if _, err := p.c.Kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, why)
}

// said are the messages of the Preempting and Preempted events, by the pod or PodGroup they are
// about.
func (p *preemptionCluster) said() map[string]string {
	events, err := p.c.Kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(p.t, err)
	out := map[string]string{}
	for _, e := range events.Items {
		if e.Reason == "Preempting" || e.Reason == "Preempted" {
			out[e.InvolvedObject.Name] = e.Message
		}
	}
	return out
}

// TestGangPreemptsWholeGang: on the real control plane, a high-priority gang that needs one
// node of a cluster held by a low-priority gang of two takes the whole low gang, never one of
// its pods alone; the victims are marked DisruptionTarget and deleted, and the events say who
// preempted whom.
func TestGangPreemptsWholeGang(t *testing.T) {
	p := newPreemptionCluster(t)
	p.newGang("low", "low", 2)
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=low", 2, 60*time.Second)

	p.newGang("high", "high", 1)
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=high", 1, 60*time.Second)
	p.waitGone("both pods of the low gang are preempted, not one", "low-0", "low-1")

	said := p.said()
	require.Contains(t, said["high-0"], "PodGroup default/high (priority 1000) preempts default/low (2 pods, priority 10)")
	for _, victim := range []string{"low-0", "low-1"} {
		require.Contains(t, said[victim], "Preempted by PodGroup default/high (priority 1000), with the 2 pods of default/low")
	}
	require.Equal(t, "Preempted by PodGroup default/high (priority 1000) to fit it whole: 2 pods on gpu-1, gpu-2 deleted", said["low"],
		"the victim gang's PodGroup says it too, after its pods are gone")
}

// TestPodPreemptsWholeGang: a high-priority pod in no gang preempts as kube-scheduler would,
// except that its victim in a gang takes the whole gang, even a pod of the gang that outranks
// the preemptor (a gang is as important as its least important pod).
func TestPodPreemptsWholeGang(t *testing.T) {
	p := newPreemptionCluster(t)
	p.newGang("low", "low", 2)
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=low", 2, 60*time.Second)

	p.newPod("urgent", "", "high")
	p.g.WaitBound("!"+v1alpha1.PodGroupLabel, 1, 60*time.Second)
	p.waitGone("both pods of the low gang are preempted, not one", "low-0", "low-1")

	// A gang of a low and a high pod goes whole for another high pod.
	require.NoError(t, p.c.Kube.CoreV1().Pods("default").Delete(context.Background(), "urgent", metav1.DeleteOptions{}))
	p.waitGone("the first preemptor is deleted", "urgent")
	p.newGang("mixed", "low", 1)
	p.newPod("mixed-1", "mixed", "high")
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=mixed", 2, 60*time.Second)
	p.newPod("urgent-2", "", "high")
	p.g.WaitBound("!"+v1alpha1.PodGroupLabel, 1, 60*time.Second)
	p.waitGone("both pods of the mixed gang are preempted", "mixed-0", "mixed-1")
}

// TestGangPreemptsInOneRack: a gang that requires a rack preempts inside one rack. Rack r1
// holds a low-priority gang on both its nodes; rack r2 one free node and one that a pod of a
// higher priority than the gang holds. Taking the low gang frees a node in r1 and the free node
// in r2 would do for a gang without a topology; this one takes the low gang and lands whole in
// r1.
func TestGangPreemptsInOneRack(t *testing.T) {
	const rackLabel = "e2e.workmap.dev/rack"
	node := func(name, rack string) harness.Node {
		return harness.Node{Name: name, GPUs: 8, Labels: map[string]string{rackLabel: rack}}
	}
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{node("r1-a", "r1"), node("r1-b", "r1"), node("r2-a", "r2"), node("r2-b", "r2")}})
	c.StartWorkmapScheduler(harness.SchedulerOptions{PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: 2,
		TopologyLevels: []harness.TopologyLevel{{Name: "rack", NodeLabel: rackLabel}}})
	c.CreatePriorityClasses(context.Background(), map[string]int32{"low": 10, "high": 1000, "urgent": 2000})
	p := &preemptionCluster{t: t, c: c, g: newGangs(t, c)}
	ctx := context.Background()
	place := func(name, nodeName, group, priorityClass string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
			Spec: corev1.PodSpec{
				NodeName: nodeName, PriorityClassName: priorityClass, TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				}}},
			},
		}
		if group != "" {
			pod.Labels[v1alpha1.PodGroupLabel] = group
		}
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, p.g.Client().Create(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "low", Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: 2}}))
	place("low-0", "r1-a", "low", "low")
	place("low-1", "r1-b", "low", "low")
	place("urgent", "r2-b", "", "urgent")

	require.NoError(t, p.g.Client().Create(ctx, &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "high", Namespace: "default", Annotations: map[string]string{grouper.TopologyRequiredAnnotation: "rack"}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 2},
	}))
	p.newPod("high-0", "high", "high")
	p.newPod("high-1", "high", "high")
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=high", 2, 60*time.Second)
	p.waitGone("the low gang in r1 is preempted whole", "low-0", "low-1")
	for _, pod := range p.g.Pods(v1alpha1.PodGroupLabel + "=high") {
		require.True(t, strings.HasPrefix(pod.Spec.NodeName, "r1-"), "pod %s on %s: the gang is whole in rack r1", pod.Name, pod.Spec.NodeName)
	}
	_, err := c.Kube.CoreV1().Pods("default").Get(ctx, "urgent", metav1.GetOptions{})
	require.NoError(t, err, "the pod that outranks the gang stays")
	require.Contains(t, p.said()["high-0"], "preempts default/low (2 pods, priority 10) in "+rackLabel+"=r1")
}

// TestExtraMemberPreemptsAlone: a member beyond minMember of a gang that runs is placed as a
// pod of its own: it binds where it fits, and where it does not, preempts as kube-scheduler's
// DefaultPreemption would, without holding the gang back.
func TestExtraMemberPreemptsAlone(t *testing.T) {
	p := newPreemptionCluster(t)
	ctx := context.Background()
	require.NoError(t, p.g.Client().Create(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1}}))
	p.newPod("grow-0", "grow", "high")
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=grow", 1, 60*time.Second)
	p.newPod("lone", "", "low")
	p.g.WaitBound("!"+v1alpha1.PodGroupLabel, 1, 60*time.Second)

	p.newPod("grow-1", "grow", "high")
	p.g.WaitBound(v1alpha1.PodGroupLabel+"=grow", 2, 60*time.Second)
	p.waitGone("the lone low-priority pod is preempted for the extra member", "lone")
}
