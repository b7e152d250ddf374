package plugin_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

var workloadDefinitions = schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"}

// createTrainerWithPods creates a Trainer and its pods (4 GPUs each) itself; gated pods carry a
// scheduling gate, so they exist (and count as members) but are not scheduled until ungated.
func createTrainerWithPods(t *testing.T, c *harness.Cluster, name string, workers int, gated ...int) {
	t.Helper()
	ctx := context.Background()
	tr, err := c.Dynamic.Resource(trainers).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"workers": int64(workers), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range workers {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: map[string]string{"trainer": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Trainer", Name: name, UID: tr.GetUID(), Controller: ptr.To(true)}},
			},
			Spec: corev1.PodSpec{SchedulerName: harness.SchedulerName, Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(4, resource.DecimalSI)},
			}}}},
		}
		for _, g := range gated {
			if g == i {
				pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
			}
		}
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

func applyTrainerDefinition(t *testing.T, c *harness.Cluster, minMember string) {
	t.Helper()
	docs, err := manifest.Read([]byte(trainerDefinition), "trainer-definition.yaml")
	require.NoError(t, err)
	obj := docs[0].Object
	if minMember != "" {
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "all", "members": []any{"worker"}, "minMember": minMember}}, "spec", "gang", "groups"))
	}
	ctx := context.Background()
	current, err := c.Dynamic.Resource(workloadDefinitions).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = c.Dynamic.Resource(workloadDefinitions).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	require.NoError(t, err)
	obj.SetResourceVersion(current.GetResourceVersion())
	_, err = c.Dynamic.Resource(workloadDefinitions).Update(ctx, obj, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestFaults: workmap-scheduler and its grouper under failures, on the real control plane.
func TestFaults(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, CustomKinds: []harness.CustomKind{trainerKind}, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}, {Name: "gpu-node-1", GPUs: 8}}})
	// Verbosity 4 logs "Pod waiting on permit".
	opts := harness.SchedulerOptions{PermitWaitingTimeSeconds: 120, PodGroupBackoffSeconds: 2, Verbosity: 4}
	sched := c.StartWorkmapScheduler(opts)
	g := newGangs(t, c)
	ctx := context.Background()
	applyTrainerDefinition(t, c, "")

	t.Run("scheduler killed while a gang waits at Permit: nothing bound, the gang completes after restart", func(t *testing.T) {
		g.t = t
		// Two members can be placed and wait at Permit; the third exists but is gated.
		createTrainerWithPods(t, c, "held", 3, 2)
		require.Eventually(t, func() bool {
			logs, err := os.ReadFile(sched.LogPath())
			return err == nil && containsAll(string(logs), `"Pod waiting on permit" pod="default/held-0"`, `"Pod waiting on permit" pod="default/held-1"`)
		}, 60*time.Second, 200*time.Millisecond, "two members wait at Permit")
		g.NeverPartial(2*time.Second, map[string]int{"trainer=held": 3})

		sched.Kill()
		g.NeverPartial(3*time.Second, map[string]int{"trainer=held": 3})
		require.Zero(t, harness.Bound(g.Pods("trainer=held")), "a crash binds nothing")

		sched = c.StartWorkmapScheduler(opts)
		_, err := c.Kube.CoreV1().Pods("default").Patch(ctx, "held-2", types.StrategicMergePatchType, []byte(`{"spec":{"schedulingGates":null}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		g.WaitBound("trainer=held", 3, 60*time.Second)
		// No reservation leaked: the 12 GPUs bound plus 4 free are the whole 16.
		createTrainerWithPods(t, c, "single", 1)
		g.WaitBound("trainer=single", 1, 60*time.Second)
		g.Finish("trainer=held")
		g.Finish("trainer=single")
	})

	t.Run("a PodGroup deleted while its pods are pending is made again", func(t *testing.T) {
		g.t = t
		createTrainerWithPods(t, c, "orphaned", 3, 0, 1, 2)
		var pg *v1alpha1.PodGroup
		require.Eventually(t, func() bool {
			var err error
			pg, err = g.PodGroup("orphaned-all")
			return err == nil
		}, 30*time.Second, 100*time.Millisecond)
		require.NoError(t, g.Client().Delete(ctx, pg))
		require.Eventually(t, func() bool {
			again, err := g.PodGroup("orphaned-all")
			return err == nil && again.UID != pg.UID && again.Spec.MinMember == 3
		}, 30*time.Second, 100*time.Millisecond)
		for i := range 3 {
			_, err := c.Kube.CoreV1().Pods("default").Patch(ctx, fmt.Sprintf("orphaned-%d", i), types.StrategicMergePatchType, []byte(`{"spec":{"schedulingGates":null}}`), metav1.PatchOptions{})
			require.NoError(t, err)
		}
		g.WaitBound("trainer=orphaned", 3, 60*time.Second)
		g.Finish("trainer=orphaned")
	})

	t.Run("the top owner deleted: its PodGroup is garbage-collected", func(t *testing.T) {
		g.t = t
		g.createJobSet("doomed")
		require.Eventually(t, func() bool { _, err := g.PodGroup("doomed-all"); return err == nil }, 60*time.Second, 100*time.Millisecond)
		g.WaitBound(jobSetPods("doomed"), 3, 60*time.Second)
		require.NoError(t, c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Delete(ctx, "doomed", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
		require.Eventually(t, func() bool {
			_, err := g.PodGroup("doomed-all")
			return apierrors.IsNotFound(err)
		}, 60*time.Second, 200*time.Millisecond, "the PodGroup goes with its JobSet")
		require.Eventually(t, func() bool { return len(g.Pods(jobSetPods("doomed"))) == 0 }, 60*time.Second, 200*time.Millisecond)
	})

	t.Run("a definition changed while pods are pending: the new minMember applies", func(t *testing.T) {
		g.t = t
		// 5 workers of 4 GPUs need 20 of 16: the gang of 5 waits, none bound.
		createTrainerWithPods(t, c, "resized", 5)
		g.WaitCreated("trainer=resized", 5)
		require.Eventually(t, func() bool { pg, err := g.PodGroup("resized-all"); return err == nil && pg.Spec.MinMember == 5 }, 30*time.Second, 100*time.Millisecond)
		g.NeverPartial(4*time.Second, map[string]int{"trainer=resized": 5})
		require.Zero(t, harness.Bound(g.Pods("trainer=resized")))

		applyTrainerDefinition(t, c, "self.spec.workers - 1")
		require.Eventually(t, func() bool { pg, err := g.PodGroup("resized-all"); return err == nil && pg.Spec.MinMember == 4 }, 30*time.Second, 100*time.Millisecond, "minMember follows the definition")
		require.Eventually(t, func() bool { return harness.Bound(g.Pods("trainer=resized")) == 4 }, 60*time.Second, 100*time.Millisecond, "4 of 5 bound: the gang of 4 fits 16 GPUs")
		time.Sleep(time.Second)
		require.Equal(t, 4, harness.Bound(g.Pods("trainer=resized")), "the fifth waits for room")
		require.NoError(t, c.Dynamic.Resource(trainers).Namespace("default").Delete(ctx, "resized", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
		require.Eventually(t, func() bool { return len(g.Pods("trainer=resized")) == 0 }, 60*time.Second, 200*time.Millisecond)
		applyTrainerDefinition(t, c, "")
	})

	t.Run("many concurrent pod events for one workload: exactly one PodGroup", func(t *testing.T) {
		g.t = t
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "default"},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](40), Completions: ptr.To[int32](40),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "burst"}},
					Spec: corev1.PodSpec{SchedulerName: harness.SchedulerName, RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
				},
			},
		}
		created, err := c.Kube.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitCreated("app=burst", 40)
		// Touch every pod from several writers at once while they are being grouped.
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for round := range 5 {
					for _, p := range g.Pods("app=burst") {
						patch := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/touch-%d":"%d"}}}`, w, round)
						_, _ = c.Kube.CoreV1().Pods("default").Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
					}
				}
			}()
		}
		wg.Wait()
		g.WaitBound("app=burst", 40, 60*time.Second)
		var list v1alpha1.PodGroupList
		require.NoError(t, g.Client().List(ctx, &list, client.InNamespace("default"), client.MatchingLabels{grouper.ManagedByLabel: grouper.ManagedByValue}))
		var mine []string
		for _, pg := range list.Items {
			for _, ref := range pg.OwnerReferences {
				if ref.UID == created.UID {
					mine = append(mine, pg.Name)
				}
			}
		}
		require.Len(t, mine, 1, "one PodGroup for the Job: %v", mine)
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
