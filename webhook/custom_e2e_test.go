package webhook_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Kinds Kubernetes knows nothing of: Widget (all its pods one gang) and Squad (shaped like a
// LeaderWorkerSet: spec.replicas groups of spec.size pods, each pod labelled with its group).
var (
	widgetKind = harness.CustomKind{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets"}
	squadKind  = harness.CustomKind{Group: "example.com", Version: "v1", Kind: "Squad", Plural: "squads"}
)

const customDefinitions = widgetDefinition + `---
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: squads.example.com}
spec:
  workload: {group: example.com, kind: Squad, versions: [v1]}
  roles:
  - name: member
    podTemplate: spec.template
    replicas: "self.spec.replicas"
    podsPerReplica: "self.spec.size"
    podReplica: "pod.metadata.labels['example.com/group-index']"
  gang:
    groups: [{name: group, members: [member], scope: replica}]
`

var workloadDefinitions = schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"}

// TestNativeGangsCustomKinds: a kind unknown to Kubernetes gets native gangs once a
// WorkloadDefinition with gang hints is applied — one PodGroup per replica for the
// LeaderWorkerSet-shaped one; and pods of workmap-scheduler arrive labelled, so its grouper
// writes no label.
func TestNativeGangsCustomKinds(t *testing.T) {
	for _, r := range harness.Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) { testNativeGangsCustomKinds(t, r) })
	}
}

func testNativeGangsCustomKinds(t *testing.T, release harness.Release) {
	c := harness.Start(t, harness.Options{NativeGangs: true, Release: release, CustomKinds: []harness.CustomKind{widgetKind, squadKind}})
	ctx := context.Background()
	w := c.StartWorkmapWebhook(harness.WebhookOptions{Binary: harness.WebhookBinary(t)})
	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	require.NoError(t, readiness(t, c)(waitCtx), "webhook log: %s", w.LogPath())
	g := c.NewGangs(t, "default")

	// create makes a workload of a custom kind and its pods, as its controller would.
	create := func(kind harness.CustomKind, name string, spec map[string]any, pods int, labels func(int) map[string]string) {
		t.Helper()
		spec["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}
		obj, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: kind.Group, Version: kind.Version, Resource: kind.Plural}).Namespace("default").Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": kind.Group + "/" + kind.Version, "kind": kind.Kind, "metadata": map[string]any{"name": name}, "spec": spec}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for i := range pods {
			l := labels(i)
			l["workload"] = name
			_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: l,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: kind.Group + "/" + kind.Version, Kind: kind.Kind, Name: name, UID: obj.GetUID(), Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	groupsOf := func(sel string) map[string]string {
		out := map[string]string{}
		for _, p := range g.Pods(sel) {
			if p.Spec.SchedulingGroup != nil {
				out[p.Name] = ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "")
			}
		}
		return out
	}
	noLabels := func(int) map[string]string { return map[string]string{} }

	t.Run("no definition: no gang", func(t *testing.T) {
		create(widgetKind, "before", map[string]any{"replicas": int64(2)}, 2, noLabels)
		g.WaitBound("workload=before", 2, 60*time.Second)
		require.Empty(t, groupsOf("workload=before"))
	})

	docs, err := manifest.Read([]byte(customDefinitions), "definitions.yaml")
	require.NoError(t, err)
	for _, d := range docs {
		_, err := c.Dynamic.Resource(workloadDefinitions).Create(ctx, d.Object, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	time.Sleep(2 * time.Second) // the webhook's watch delivers them

	t.Run("a definition with gang hints applied: a native gang", func(t *testing.T) {
		create(widgetKind, "after", map[string]any{"replicas": int64(3)}, 3, noLabels)
		g.WaitBound("workload=after", 3, 60*time.Second)
		require.Equal(t, map[string]string{"after-0": "after-all", "after-1": "after-all", "after-2": "after-all"}, groupsOf("workload=after"))
		requireMinCount(t, c, "after-all", 3)
	})

	t.Run("a LeaderWorkerSet-shaped kind: one native PodGroup per replica", func(t *testing.T) {
		create(squadKind, "squad", map[string]any{"replicas": int64(2), "size": int64(2)}, 4, func(i int) map[string]string {
			return map[string]string{"example.com/group-index": fmt.Sprint(i / 2)}
		})
		g.WaitBound("workload=squad", 4, 60*time.Second)
		require.Equal(t, map[string]string{"squad-0": "squad-group-0", "squad-1": "squad-group-0", "squad-2": "squad-group-1", "squad-3": "squad-group-1"}, groupsOf("workload=squad"))
		requireMinCount(t, c, "squad-group-0", 2)
		requireMinCount(t, c, "squad-group-1", 2)
	})

	t.Run("pods of workmap-scheduler arrive labelled: its grouper writes no label", func(t *testing.T) {
		s := c.StartWorkmapScheduler(harness.SchedulerOptions{Args: []string{harness.OpenEndpointsFlag}})
		job := gangJob("labelled", 2)
		job.Spec.Template.Spec.SchedulerName = "workmap-scheduler"
		_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitBound("gang=labelled", 2, 60*time.Second)
		for _, p := range g.Pods("gang=labelled") {
			require.Equal(t, "labelled-job", p.Labels[v1alpha1.PodGroupLabel], "pod %s labelled at creation", p.Name)
			require.Nil(t, p.Spec.SchedulingGroup, "workmap-scheduler's pods are not pointed at native PodGroups")
		}
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			pg, err := g.PodGroup("labelled-job")
			require.NoError(t, err)
			require.Equal(t, int32(2), pg.Status.Scheduled)
		}, 30*time.Second, 200*time.Millisecond)
		metrics, err := s.Metrics(ctx)
		require.NoError(t, err)
		labelWrites := 0.0
		if f := metrics["workmap_grouper_writes_total"]; f != nil {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if l.GetName() == "kind" && l.GetValue() == "label" {
						labelWrites += m.GetCounter().GetValue()
					}
				}
			}
		}
		require.Zero(t, labelWrites, "PATCH pods for the pod-group label")
	})

	t.Run("metrics: no error while healthy; a deleted kind's failed watch and a pod of an unknown owner kind counted", func(t *testing.T) {
		metrics, err := w.Metrics(ctx)
		require.NoError(t, err)
		require.Zero(t, harness.Counter(t, metrics, "workmap_watch_errors_total", nil), "healthy: no failed list or watch")
		require.Zero(t, harness.Counter(t, metrics, "workmap_webhook_grouping_errors_total", nil), "healthy: no grouping error")
		for _, resource := range []string{"squads.example.com", "workloaddefinitions.workmap.dev"} {
			_, err := harness.CounterOf(metrics, "workmap_watch_errors_total", map[string]string{"resource": resource, "reason": grouper.WatchNotFound})
			require.NoError(t, err, "the cache of %s counts its failed lists and watches", resource)
		}

		_, err = c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "unknown-owner", OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "example.com/v1", Kind: "Nonexistent", Name: "x", UID: "x-uid", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		// The Squad kind goes away: the webhook's cache of squads can no longer list them.
		crds := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		require.NoError(t, crds.Delete(ctx, squadKind.Plural+"."+squadKind.Group, metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			metrics, err := w.Metrics(ctx)
			require.NoError(ct, err)
			assert.Positive(ct, harness.Counter(t, metrics, "workmap_watch_errors_total", map[string]string{"resource": "squads.example.com", "reason": grouper.WatchNotFound}))
			assert.Equal(ct, 1.0, harness.Counter(t, metrics, "workmap_webhook_grouping_errors_total", map[string]string{"reason": grouper.ProblemOwnerKindUnknown}))
		}, 60*time.Second, 250*time.Millisecond, "webhook log: %s", w.LogPath())
	})
}

func requireMinCount(t *testing.T, c *harness.Cluster, name string, want int64) {
	t.Helper()
	pg, err := c.Dynamic.Resource(c.Release().NativePodGroups()).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
	require.Equal(t, want, min, "minCount of %s", name)
}
