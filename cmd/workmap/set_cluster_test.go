package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
)

// rayLikeKind is a custom kind shaped like KubeRay's RayCluster: a head template and a list
// of worker groups, each with its own template.
var rayLikeKind = harness.CustomKind{Group: "ray.example.com", Version: "v1", Kind: "RayCluster", Plural: "rayclusters"}

const rayLikeDefinition = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: rayclusters.ray.example.com}
spec:
  workload: {group: ray.example.com, kind: RayCluster, versions: [v1]}
  roles:
  - {name: head, podTemplate: spec.headGroupSpec.template}
  - {name: worker, podTemplate: "spec.workerGroupSpecs[*].template", instanceName: item.groupName, replicas: "item.?replicas.orValue(0)"}
  gang:
    groups: [{name: all, members: [head, worker]}]
`

// TestSetAgainstCluster changes workloads in a real cluster: a RayCluster-shaped custom kind
// through a WorkloadDefinition applied in the cluster, and the example JobSet, whose pods are
// then gang-scheduled by workmap-scheduler.
func TestSetAgainstCluster(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, CustomKinds: []harness.CustomKind{rayLikeKind}})
	c.StartWorkmapScheduler(harness.SchedulerOptions{})
	ctx := context.Background()
	kc := []string{"--kubeconfig", c.Kubeconfig}
	jobsets := c.Dynamic.Resource(harness.JobSetResource).Namespace("default")

	t.Run("every head and worker template of a custom kind", func(t *testing.T) {
		docs, err := manifest.Read([]byte(rayLikeDefinition), "definition.yaml")
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(workloadDefinitions).Create(ctx, docs[0].Object, metav1.CreateOptions{})
		require.NoError(t, err)
		rays := c.Dynamic.Resource(schema.GroupVersionResource{Group: rayLikeKind.Group, Version: rayLikeKind.Version, Resource: rayLikeKind.Plural}).Namespace("default")
		template := func(name string) map[string]any {
			return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": name, "image": "rayproject/ray"}}}}
		}
		ray, err := rays.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ray.example.com/v1", "kind": "RayCluster", "metadata": map[string]any{"name": "ray"},
			"spec": map[string]any{
				"headGroupSpec": map[string]any{"template": template("head")},
				"workerGroupSpecs": []any{
					map[string]any{"groupName": "cpu", "replicas": int64(2), "template": template("worker")},
					map[string]any{"groupName": "gpu", "replicas": int64(1), "template": template("worker")},
				},
			},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		// Two of its pods exist already, made from the templates as they are.
		for _, name := range []string{"ray-head", "ray-worker-0"} {
			_, err := c.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "ray.example.com/v1", Kind: "RayCluster", Name: "ray", UID: ray.GetUID(), Controller: ptr.To(true),
				}}},
				Spec: corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "c", Image: "rayproject/ray"}}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		const stale = "2 of its 2 pods %s their old pod template (spec.schedulerName=default-scheduler) until they are recreated: pod/ray-head, pod/ray-worker-0. A pod does not change with its template; the operator makes new pods from it when it replaces them (a rollout, a restart, or pods you delete).\n"
		schedulers := func() []string {
			obj, err := rays.Get(ctx, "ray", metav1.GetOptions{})
			require.NoError(t, err)
			head, _, _ := unstructured.NestedString(obj.Object, "spec", "headGroupSpec", "template", "spec", "schedulerName")
			out := []string{head}
			groups, _, _ := unstructured.NestedSlice(obj.Object, "spec", "workerGroupSpecs")
			for _, g := range groups {
				s, _, _ := unstructured.NestedString(g.(map[string]any), "template", "spec", "schedulerName")
				out = append(out, s)
			}
			return out
		}

		for _, dryRun := range []string{"client", "server"} {
			out, err := run(t, append([]string{"set", "scheduler", "rayclusters.ray.example.com/ray", "--dry-run=" + dryRun}, kc...)...)
			require.NoError(t, err)
			require.Contains(t, out, "raycluster.ray.example.com/ray: 3 pod templates set (spec.schedulerName=workmap-scheduler) (")
			require.Contains(t, out, fmt.Sprintf(stale, "would keep"))
			require.Equal(t, []string{"", "", ""}, schedulers(), "a dry run (%s) changes nothing", dryRun)
		}
		out, err := run(t, append([]string{"set", "scheduler", "rayclusters.ray.example.com/ray", "--diff"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "+        schedulerName: workmap-scheduler")
		require.Contains(t, out, "raycluster.ray.example.com/ray: 3 pod templates set (spec.schedulerName=workmap-scheduler)\n"+fmt.Sprintf(stale, "keep"))
		require.Equal(t, []string{"workmap-scheduler", "workmap-scheduler", "workmap-scheduler"}, schedulers())

		out, err = run(t, append([]string{"set", "scheduler", "rayclusters.ray.example.com/ray"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "raycluster.ray.example.com/ray: unchanged (3 pod templates already have spec.schedulerName=workmap-scheduler)\n"+fmt.Sprintf(stale, "keep"), out)

		// The pods are recreated from the new templates: nothing more to say.
		for _, name := range []string{"ray-head", "ray-worker-0"} {
			require.NoError(t, c.Kube.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
		}
		require.Eventually(t, func() bool {
			pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			return err == nil && !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return strings.HasPrefix(p.Name, "ray-") })
		}, 30*time.Second, 100*time.Millisecond)
		out, err = run(t, append([]string{"set", "scheduler", "rayclusters.ray.example.com/ray"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "raycluster.ray.example.com/ray: unchanged (3 pod templates already have spec.schedulerName=workmap-scheduler)\n", out)
	})

	t.Run("someone else changes the workload meanwhile: nothing written", func(t *testing.T) {
		rays := c.Dynamic.Resource(schema.GroupVersionResource{Group: rayLikeKind.Group, Version: rayLikeKind.Version, Resource: rayLikeKind.Plural}).Namespace("default")
		// Just before each update of workmap's reaches the API server, another writer changes
		// the object.
		writes := 0
		interfere := func(o *options) {
			o.kube.WrapConfigFn = func(cfg *rest.Config) *rest.Config {
				cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
					return roundTripper(func(req *http.Request) (*http.Response, error) {
						if req.Method == http.MethodPut {
							obj, err := rays.Get(req.Context(), "ray", metav1.GetOptions{})
							require.NoError(t, err)
							writes++
							require.NoError(t, unstructured.SetNestedField(obj.Object, fmt.Sprint(writes), "metadata", "labels", "changed-by"))
							_, err = rays.Update(req.Context(), obj, metav1.UpdateOptions{})
							require.NoError(t, err)
						}
						return next.RoundTrip(req)
					})
				})
				return cfg
			}
		}
		_, err := runWith(t, interfere, append([]string{"set", "pod-template", "rayclusters.ray.example.com/ray", "--labels", "team=ml"}, kc...)...)
		require.EqualError(t, err, "raycluster.ray.example.com/ray was changed by someone else each time workmap was setting it (5 tries); nothing was written, run the command again")
		obj, err := rays.Get(ctx, "ray", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "5", obj.GetLabels()["changed-by"], "the other writer's changes stand")
		team, _, _ := unstructured.NestedString(obj.Object, "spec", "headGroupSpec", "template", "metadata", "labels", "team")
		require.Empty(t, team, "workmap's change was not written")
	})

	t.Run("a JobSet's pod templates: labels while suspended, not the scheduler", func(t *testing.T) {
		js, err := harness.ExampleJobSet("suspended", corev1.DefaultSchedulerName, 0)
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(js.Object, true, "spec", "suspend"))
		_, err = jobsets.Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		out, err := run(t, append([]string{"set", "pod-template", "jobset/suspended", "--labels", "team=ml"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "jobset.jobset.x-k8s.io/suspended: 2 pod templates set (metadata.labels[\"team\"]=ml)\n", out)
		got, err := jobsets.Get(ctx, "suspended", metav1.GetOptions{})
		require.NoError(t, err)
		rjs, _, _ := unstructured.NestedSlice(got.Object, "spec", "replicatedJobs")
		for _, rj := range rjs {
			team, _, _ := unstructured.NestedString(rj.(map[string]any), "template", "spec", "template", "metadata", "labels", "team")
			require.Equal(t, "ml", team)
		}
		// JobSet's webhook keeps the scheduler of an existing JobSet: the API server's reason is shown.
		_, err = run(t, append([]string{"set", "scheduler", "jobset/suspended"}, kc...)...)
		require.Error(t, err)
		t.Logf("JobSet's refusal: %v", err)
		require.Equal(t, "updating jobset.jobset.x-k8s.io/suspended: refused: spec.replicatedJobs cannot change once the JobSet exists; rewrite its manifest with `workmap set ... -f FILE` and create it again (delete it first)", err.Error(),
			"one line: the field and what to do, not the old value")
	})

	t.Run("the example JobSet rewritten offline, then gang-scheduled", func(t *testing.T) {
		js, err := harness.ExampleJobSet("leader-workers", corev1.DefaultSchedulerName, 0)
		require.NoError(t, err)
		data, err := yaml.Marshal(js.Object)
		require.NoError(t, err)
		file := filepath.Join(c.Dir, "set-jobset.yaml")
		require.NoError(t, os.WriteFile(file, data, 0o644))
		out, err := run(t, "set", "scheduler", "-f", file)
		require.NoError(t, err)
		docs, err := manifest.Read([]byte(out), "stdout")
		require.NoError(t, err)
		require.Len(t, docs, 1)
		_, err = jobsets.Create(ctx, docs[0].Object, metav1.CreateOptions{})
		require.NoError(t, err)

		g := c.NewGangs(t, "default")
		const pods = "jobset.sigs.k8s.io/jobset-name=leader-workers"
		g.WaitBound(pods, 3, 60*time.Second)
		for _, p := range g.Pods(pods) {
			require.Equal(t, harness.SchedulerName, p.Spec.SchedulerName, p.Name)
		}
		pg, err := g.PodGroup("leader-workers-all")
		require.NoError(t, err)
		require.EqualValues(t, 3, pg.Spec.MinMember)
	})
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
