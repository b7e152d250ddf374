package grouper_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Two kinds the catalog does not know — Widget (all pods one gang) and Squad (shaped like a
// LeaderWorkerSet: replicas groups of size pods, pods labelled with their group index) — and a
// minimal stand-in for Kubeflow's PyTorchJob CRD, to which the catalog's definition applies.
var customKinds = []harness.CustomKind{
	{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets"},
	{Group: "example.com", Version: "v1", Kind: "Squad", Plural: "squads"},
	{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob", Plural: "pytorchjobs"},
}

const customDefinitions = widgetDefinitionYAML + `
---
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

// TestControllerCustomKinds: a kind unknown to the catalog gets no gang until a
// WorkloadDefinition with gang hints is applied in the cluster — then new workloads of it
// do, also one PodGroup per replica for a LeaderWorkerSet-shaped kind. No code.
func TestControllerCustomKinds(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, CustomKinds: customKinds})
	ctx := context.Background()
	groups, members := startGrouper(t, c, &harness.Requests{})

	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	squads := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "squads"}
	create := func(gvr schema.GroupVersionResource, kind, name string, spec map[string]any, pods int, podLabels func(i int) map[string]string) {
		t.Helper()
		spec["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}
		obj, err := c.Dynamic.Resource(gvr).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": kind, "metadata": map[string]any{"name": name}, "spec": spec,
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		yes := true
		for i := range pods {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default", Labels: podLabels(i),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: kind, Name: name, UID: obj.GetUID(), Controller: &yes}},
				},
				Spec: corev1.PodSpec{SchedulerName: schedulerName, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			}
			_, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	noLabels := func(int) map[string]string { return nil }
	podGroup := func(name string) (*v1alpha1.PodGroup, bool) {
		var pg v1alpha1.PodGroup
		err := groups.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &pg)
		return &pg, err == nil
	}

	// No definition: the pods schedule one by one.
	create(widgets, "Widget", "before", map[string]any{"workers": int64(3)}, 3, noLabels)
	time.Sleep(3 * time.Second)
	_, found := podGroup("before-all")
	require.False(t, found, "no PodGroup without a definition")
	_, inGroup := members.Group("default/before-all")
	require.False(t, inGroup, "the pods are in no gang")

	// Apply the definitions to the cluster.
	docs, err := manifest.Read([]byte(customDefinitions), "definitions.yaml")
	require.NoError(t, err)
	for _, d := range docs {
		_, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"}).Create(ctx, d.Object, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	time.Sleep(time.Second) // the grouper's watch delivers them

	create(widgets, "Widget", "after", map[string]any{"workers": int64(3)}, 3, noLabels)
	require.Eventually(t, func() bool {
		pg, ok := podGroup("after-all")
		return ok && pg.Spec.MinMember == 3
	}, 30*time.Second, 100*time.Millisecond, "the Widget gets one PodGroup of 3")

	create(squads, "Squad", "squad", map[string]any{"replicas": int64(2), "size": int64(3)}, 6, func(i int) map[string]string {
		return map[string]string{"example.com/group-index": fmt.Sprint(i / 3)}
	})
	for _, name := range []string{"squad-group-0", "squad-group-1"} {
		require.Eventually(t, func() bool {
			pg, ok := podGroup(name)
			return ok && pg.Spec.MinMember == 3
		}, 30*time.Second, 100*time.Millisecond, "PodGroup %s of 3", name)
	}
	waitMembers(t, members, "default/squad-group-0", 3)
	waitMembers(t, members, "default/squad-group-1", 3)

	// A PyTorchJob with schedulingPolicy.minAvailable: 3 of its 1 + 4 pods must start together.
	pyTorchJobs := schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	tmpl := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "pytorch", "image": "i"}}}}
	ptj, err := c.Dynamic.Resource(pyTorchJobs).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": map[string]any{"name": "bert"},
		"spec": map[string]any{
			"runPolicy": map[string]any{"schedulingPolicy": map[string]any{"minAvailable": int64(3)}},
			"pytorchReplicaSpecs": map[string]any{
				"Master": map[string]any{"replicas": int64(1), "template": tmpl},
				"Worker": map[string]any{"replicas": int64(4), "template": tmpl},
			},
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	yes := true
	for i, rt := range []string{"master", "worker", "worker", "worker", "worker"} {
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("bert-%s-%d", rt, i), Namespace: "default",
				Labels:          map[string]string{"training.kubeflow.org/replica-type": rt, "training.kubeflow.org/replica-index": fmt.Sprint(max(i-1, 0))},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "bert", UID: ptj.GetUID(), Controller: &yes}},
			},
			Spec: corev1.PodSpec{SchedulerName: schedulerName, Containers: []corev1.Container{{Name: "pytorch", Image: "i"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		var list v1alpha1.PodGroupList
		if err := groups.List(ctx, &list, client.InNamespace("default")); err != nil {
			return false
		}
		for _, pg := range list.Items {
			if len(pg.OwnerReferences) > 0 && pg.OwnerReferences[0].UID == ptj.GetUID() {
				return pg.Spec.MinMember == 3
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the PyTorchJob's PodGroup has minMember = minAvailable")

	// The Widget definition is broken by a typo (the API server accepts it): its last valid
	// generation goes on grouping new Widgets, and their pods say why.
	wds := c.Dynamic.Resource(schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"})
	setReplicas(ctx, t, wds, "widgets.example.com", "self.spec.(")
	time.Sleep(time.Second) // the grouper's watch delivers it
	create(widgets, "Widget", "broken", map[string]any{"workers": int64(3)}, 3, noLabels)
	require.Eventually(t, func() bool {
		pg, ok := podGroup("broken-all")
		return ok && pg.Spec.MinMember == 3
	}, 30*time.Second, 100*time.Millisecond, "the last valid generation still makes the Widget's PodGroup of 3")
	require.Eventually(t, func() bool {
		events, err := c.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=broken-0,reason=DefinitionInvalid"})
		return err == nil && len(events.Items) == 1 &&
			strings.HasPrefix(events.Items[0].Message, "WorkloadDefinition widgets.example.com generation 2 is invalid (spec.roles[0].replicas: ") &&
			strings.HasSuffix(events.Items[0].Message, "); its generation 1, the last valid one, groups this pod")
	}, 30*time.Second, 200*time.Millisecond, "the pod's event says the definition in effect is the last valid one")
}
