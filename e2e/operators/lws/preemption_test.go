package lws

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
)

// TestLWSPreemptsJobSetWhole: with the real LWS operator and the real JobSet controller, a
// high-priority LeaderWorkerSet group (2 pods of 8 GPUs) on two nodes of 8 GPUs held by a
// low-priority JobSet (3 pods of 4 GPUs) preempts the whole JobSet, never part of it; the
// JobSet, allowed to restart as preemptible training is, is recreated by its controller and its
// pods wait whole while the group runs, then bind whole once it is deleted.
func TestLWSPreemptsJobSetWhole(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, Nodes: []harness.Node{gpuNode("gpu-0"), gpuNode("gpu-1")}})
	ctx := context.Background()
	Start(ctx, t, c)
	c.StartWorkmapScheduler(harness.SchedulerOptions{PodGroupBackoffSeconds: 2})
	logEventsOnFailure(t, c)
	g := c.NewGangs(t, namespace)
	c.CreatePriorityClasses(ctx, map[string]int32{"low": 10, "high": 1000})

	js, err := harness.ExampleJobSet("train", harness.SchedulerName, 0)
	require.NoError(t, err)
	_, err = livecheck.Definition(t, harness.JobSetGroupKind).SetPodTemplateField(js, "spec.priorityClassName", "low")
	require.NoError(t, err)
	js.Object["spec"].(map[string]any)["failurePolicy"] = map[string]any{"maxRestarts": int64(3)}
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace(namespace).Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	const trainPods = "jobset.sigs.k8s.io/jobset-name=train"
	g.WaitBound(trainPods, 3, 90*time.Second)
	first := sets.New[types.UID]()
	for _, p := range g.Pods(trainPods) {
		first.Insert(p.UID)
	}

	s := readSample(t, "vllm-gpu-lws.yaml")
	def := livecheck.Definition(t, GroupKind)
	livecheck.SetSchedulerName(t, def, s.lws, harness.SchedulerName)
	_, err = def.SetPodTemplateField(s.lws, "spec.priorityClassName", "high")
	require.NoError(t, err)
	s.lws.Object["spec"].(map[string]any)["replicas"] = int64(1)
	s.create(ctx, t, c)
	name := s.lws.GetName()
	g.WaitBound(NameLabel+"="+name, 2, 120*time.Second)

	// Every pod of the JobSet that held a node was preempted; none of its pods holds one now.
	for _, p := range g.Pods(trainPods) {
		require.False(t, first.Has(p.UID), "pod %s of the JobSet is still there: it was preempted in part", p.Name)
		require.Empty(t, p.Spec.NodeName, "pod %s of the recreated JobSet holds a node beside the group", p.Name)
	}
	events, err := c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Preempted"})
	require.NoError(t, err)
	preempted := sets.New[types.UID]()
	var onGang []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PodGroup" {
			onGang = append(onGang, e.InvolvedObject.Name+": "+e.Message)
			continue
		}
		require.Contains(t, e.Message, "with the 3 pods of "+namespace+"/train")
		preempted.Insert(e.InvolvedObject.UID)
	}
	require.Equal(t, first, preempted, "an event on each pod of the JobSet")
	require.Len(t, onGang, 1, "one event on the JobSet's PodGroup")
	require.Contains(t, onGang[0], "train-all: Preempted by PodGroup "+namespace+"/")

	// Room returns: the JobSet's recreated pods bind, whole.
	require.NoError(t, c.Dynamic.Resource(Resource).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{}))
	g.WaitBound(trainPods, 3, 120*time.Second)
	for _, p := range g.Pods(trainPods) {
		require.NotEqual(t, corev1.PodFailed, p.Status.Phase)
	}
}
