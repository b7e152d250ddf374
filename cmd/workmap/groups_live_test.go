package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/e2e/harness"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/live"
)

// TestLiveGangs: `groups` on any object of a live workload — the workload, a child Job, a pod —
// names exactly the PodGroups workmap-scheduler gave the pods, and `tree`, `get` and `groups` say
// what became of each gang: what holds it (workmap-scheduler's PodGroup, a native one, an
// operator's), its PodGroup's phase, why it waits, or that it is not in effect.
func TestLiveGangs(t *testing.T) {
	// Native gangs on: the cluster serves scheduling.k8s.io PodGroups (no kube-scheduler runs).
	c := harness.Start(t, harness.Options{JobSet: true, NoScheduler: true, NativeGangs: true})
	c.StartWorkmapScheduler(harness.SchedulerOptions{})
	ctx := context.Background()
	kc := []string{"--kubeconfig", c.Kubeconfig, "-n", "default"}

	js, err := harness.ExampleJobSet("train", "workmap-scheduler", 0)
	require.NoError(t, err)
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	pod := func(name string, annotations, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Labels: labels},
			Spec:       corev1.PodSpec{SchedulerName: "workmap-scheduler", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
	}
	template := pod("", nil, nil)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "sweep"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sweep"}},
			Spec:       template.Spec,
		}},
	}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	_, err = c.Kube.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, p := range []*corev1.Pod{
		pod("alone", nil, nil),
		pod("skipped", map[string]string{"workmap.dev/skip": "true"}, nil),
		pod("operator-grouped", nil, map[string]string{schedulingv1alpha1.PodGroupLabel: "made-by-an-operator"}),
	} {
		_, err := c.Kube.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// Every pod of the JobSet and the Job is bound; its pod-group label is the scheduler's
	// decision. (The operator's pod waits for a PodGroup nobody made.)
	var grouped []corev1.Pod
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		grouped = grouped[:0]
		for _, p := range pods.Items {
			if p.Name == "operator-grouped" {
				continue
			}
			require.NotEmpty(t, p.Spec.NodeName, "pod %s bound", p.Name)
			if p.Labels[schedulingv1alpha1.PodGroupLabel] != "" {
				grouped = append(grouped, p)
			}
		}
		require.Len(t, grouped, 5, "3 pods of the JobSet and 2 of the Job labelled")
	}, 90*time.Second, 200*time.Millisecond)

	t.Run("each pod joins the PodGroup the scheduler labelled it with", func(t *testing.T) {
		for _, p := range grouped {
			out, err := run(t, append([]string{"groups", "pod/" + p.Name, "-o", "json"}, kc...)...)
			require.NoError(t, err)
			var list struct{ Items []gang }
			require.NoError(t, json.Unmarshal([]byte(out), &list))
			require.Len(t, list.Items, 1, p.Name)
			require.Equal(t, p.Labels[schedulingv1alpha1.PodGroupLabel], list.Items[0].PodGroup, p.Name)
		}
	})
	tests := map[string]struct {
		args []string
		want []string
	}{
		"a JobSet": {args: []string{"groups", "jobset/train"},
			want: []string{"JobSet/train   train-all   workload   3"}},
		"a Job of the JobSet shows the JobSet's gangs": {args: []string{"groups", "job/train-workers-0"},
			want: []string{"job default/train-workers-0 belongs to JobSet default/train: its pods are grouped with the JobSet's.", "JobSet/train   train-all"}},
		"a plain Job, by the built-in grouper": {args: []string{"groups", "jobs.batch/sweep"},
			want: []string{"Job/sweep   sweep-job   workload   2            job"}},
		"a pod of the Job": {args: []string{"groups", "pod", grouped[len(grouped)-1].Name},
			want: []string{"joins PodGroup"}},
		"a bare pod schedules alone": {args: []string{"groups", "pod/alone"},
			want: []string{"pod default/alone schedules alone: its workload has no gang.", "Pod/alone   <none: pods schedule one by one>"}},
		"a skipped pod": {args: []string{"groups", "pod/skipped"},
			want: []string{"asks workmap to leave it alone"}},
		"a pod its operator grouped": {args: []string{"groups", "pod/operator-grouped"},
			want: []string{"names its PodGroup made-by-an-operator itself", "<made-by-an-operator: not made by workmap>", "operator (scheduling.x-k8s.io/v1alpha1)   not made yet"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, append(tc.args, kc...)...)
			require.NoError(t, err)
			for _, want := range tc.want {
				require.Contains(t, out, want)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		_, err := run(t, append([]string{"groups", "job/nope"}, kc...)...)
		require.ErrorContains(t, err, `Job "nope" not found in namespace "default"`)
	})

	t.Run("tree and get explain the gangs", func(t *testing.T) {
		// 4 + 30×4 GPUs on a cluster of far fewer; and a JobSet whose pods ask for the default
		// scheduler, which does not gang them (and does not run here: its pods stay pending).
		for name, scheduler := range map[string]string{"too-big": "workmap-scheduler", "elsewhere": corev1.DefaultSchedulerName} {
			js, err := harness.ExampleJobSet(name, scheduler, 30)
			require.NoError(t, err)
			_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"tree", "jobset/too-big"}, kc...)...)
			require.NoError(t, err)
			require.Contains(t, out, "Gang all (leader, workers): minMember 31; PodGroup too-big-all Pending: ")
			require.Contains(t, out, "can never fit this cluster as it is: it needs nvidia.com/gpu 124 (all 2 nodes together have 16)")
		}, 60*time.Second, time.Second)
		out, err := run(t, append([]string{"tree", "jobset/elsewhere"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "Gang all (leader, workers): minMember 31; not in effect: its pods ask for default-scheduler, which does not gang them")
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"tree", "jobset/train"}, kc...)...)
			require.NoError(t, err)
			require.Contains(t, out, "Gang all (leader, workers): minMember 3; PodGroup train-all Running (3 scheduled)")
		}, 60*time.Second, time.Second)

		out, err = run(t, append([]string{"get", "jobsets"}, kc...)...)
		require.NoError(t, err)
		for _, want := range []string{
			"JobSet   elsewhere   Pending   0/31   124    not in effect",
			"JobSet   too-big     Pending   0/31   124    Pending",
			"JobSet   train       Running   3/3    12     Running",
		} {
			require.Contains(t, out, want)
		}
		out, err = run(t, append([]string{"get", "jobsets", "-o", "wide"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "waiting for jobs to start; gang: all: 0/2 nodes are available: PodGroup default/too-big-all can never fit this cluster as it is: it needs nvidia.com/gpu 124 (all 2 nodes together have 16)")
	})
	t.Run("tree, get and serve show a plain Job and a pod on its own as workloads", func(t *testing.T) {
		// The Job's gang is the one `groups job/sweep` shows: the scheduler's built-in grouper's.
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"tree", "job/sweep"}, kc...)...)
			require.NoError(t, err)
			require.Contains(t, out, "Job default/sweep  Running: 2 of 2 active pods ready, 0 succeeded of 2 completions\n└─ job  2 pods")
			require.Regexp(t, `Gang job \(job\): minMember 2; PodGroup sweep-job (Scheduled|Running)`, out)
		}, 60*time.Second, time.Second)
		out, err := run(t, append([]string{"tree", "jobs.batch/sweep", "-o", "jsonpath={.groups[0].minMember}"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "2", out)
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"tree", "pod/alone"}, kc...)...)
			require.NoError(t, err)
			require.Contains(t, out, "Pod default/alone  Running: running on ")
			require.Contains(t, out, "Total: 1 pod")
		}, 60*time.Second, time.Second)

		// A Job or a pod that something controls is part of that workload, not one of its own:
		// its tree says so, and the JobSet's Jobs and every Job's pods are not listed.
		_, stderr, err := runStreams(t, append([]string{"tree", "job/train-workers-0"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "warning: job default/train-workers-0 belongs to JobSet train: workmap-scheduler gangs its pods with the JobSet's (see `workmap groups job/train-workers-0`)\n", stderr)
		out, err = run(t, append([]string{"get", "jobs"}, kc...)...)
		require.NoError(t, err)
		require.Regexp(t, `Job\s+sweep\s+Running\s+2/2\s+0\s+(Scheduled|Running)`, out)
		require.NotContains(t, out, "train-workers")
		out, err = run(t, append([]string{"get", "pods"}, kc...)...)
		require.NoError(t, err)
		require.Regexp(t, `Pod\s+alone\s+Running\s+1/1`, out)
		require.Contains(t, out, "operator-grouped")
		require.NotContains(t, out, "sweep-")
		require.NotContains(t, out, "train-")
		out, err = run(t, append([]string{"get"}, kc...)...)
		require.NoError(t, err)
		for _, want := range []string{`JobSet\s+train\s+Running`, `Job\s+sweep\s+Running`, `Pod\s+alone\s+Running`} {
			require.Regexp(t, want, out)
		}
		require.NotContains(t, out, "train-workers")

		// serve lists the same workloads.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pr, pw := io.Pipe()
		cmd := newRootCommand(pw, io.Discard)
		cmd.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, kc...))
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
		line, err := bufio.NewReader(pr).ReadString('\n')
		require.NoError(t, err)
		url := strings.Fields(line)[2]
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			var list struct {
				Items []struct{ Workload definitions.ObjectRef }
			}
			require.NoError(t, json.Unmarshal([]byte(fetch(&testing.T{}, url+"api/workloads")), &list))
			var got []string
			for _, w := range list.Items {
				got = append(got, w.Workload.Kind+"/"+w.Workload.Name)
			}
			require.Subset(t, got, []string{"JobSet/train", "Job/sweep", "Pod/alone"})
			for _, g := range got {
				require.NotContains(t, g, "train-workers")
				require.False(t, strings.HasPrefix(g, "Pod/sweep-") || strings.HasPrefix(g, "Pod/train-"), "a controlled pod listed: %s", g)
			}
		}, 60*time.Second, time.Second)
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
		}
	})
	t.Run("groups says a gang waits for a device claim that cannot be made", func(t *testing.T) {
		claims := job.DeepCopy()
		claims.ObjectMeta = metav1.ObjectMeta{Name: "claims"}
		claims.Spec.Selector, claims.Spec.Template.Labels = nil, map[string]string{"app": "claims"}
		claims.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("missing-gpu")}}
		claims.Spec.Template.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, claims, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"groups", "job/claims"}, kc...)...)
			require.NoError(t, err)
			require.Contains(t, out, "PodGroup default/claims-job can never fit this cluster as it is: pod claims-")
			require.Contains(t, out, "its claim gpu is to be made from ResourceClaimTemplate default/missing-gpu, which does not exist")
		}, 60*time.Second, time.Second)
	})
	t.Run("groups says what holds each gang and its state", func(t *testing.T) {
		out, err := run(t, append([]string{"groups", "jobset/train"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "BACKEND")
		require.Regexp(t, `train-all\s.*workmap-scheduler \(scheduling\.x-k8s\.io/v1alpha1\)\s+Running \(3 scheduled\)`, out)
		out, err = run(t, append([]string{"groups", "jobset/train", "-o", "json"}, kc...)...)
		require.NoError(t, err)
		var list struct{ Items []gang }
		require.NoError(t, json.Unmarshal([]byte(out), &list))
		require.Len(t, list.Items, 1)
		require.Equal(t, &gangBackend{Name: "workmap-scheduler", APIVersion: "scheduling.x-k8s.io/v1alpha1"}, list.Items[0].Backend)
		require.NotNil(t, list.Items[0].State)
		require.Equal(t, "Running", list.Items[0].State.Phase)

		// Where the scheduler placed a constrained gang, as it annotates its PodGroup (written
		// here by the test: train's gang is unconstrained, and the scheduler leaves it be).
		_, err = c.Dynamic.Resource(live.PodGroupsResource).Namespace("default").Patch(ctx, "train-all", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"workmap.dev/topology-domain":"cloud.example.com/rack=r2"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		out, err = run(t, append([]string{"tree", "jobset/train"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "Gang all (leader, workers): minMember 3; PodGroup train-all Running (3 scheduled), placed in cloud.example.com/rack=r2\n")
		out, err = run(t, append([]string{"groups", "jobset/train", "-o", "wide"}, kc...)...)
		require.NoError(t, err)
		require.Regexp(t, `TOPOLOGY\s+TOPOLOGY SOURCE\s+DOMAIN\s+BACKEND\s+STATE\n`, out)
		require.Regexp(t, `train-all\s.*60s\s+-\s+-\s+cloud\.example\.com/rack=r2\s+workmap-scheduler`, out)
		out, err = run(t, append([]string{"groups", "jobset/train", "-o", "jsonpath={.items[0].state.domain}"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "cloud.example.com/rack=r2", out)

		out, err = run(t, append([]string{"groups", "jobset/too-big"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "workmap-scheduler (scheduling.x-k8s.io/v1alpha1)   Pending: ")
		require.Contains(t, out, "can never fit this cluster as it is: it needs nvidia.com/gpu 124 (all 2 nodes together have 16)")
		out, err = run(t, append([]string{"groups", "jobset/elsewhere"}, kc...)...)
		require.NoError(t, err)
		require.Regexp(t, `elsewhere-all\s.*\s-\s+not in effect: its pods ask for default-scheduler, which does not gang them\n`, out)
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"groups", "job/sweep"}, kc...)...)
			require.NoError(t, err)
			require.Regexp(t, `sweep-job\s.*workmap-scheduler \(scheduling\.x-k8s\.io/v1alpha1\)\s+(Scheduled|Running)`, out)
		}, 60*time.Second, time.Second)

		// A JobSet whose pods ask for the default scheduler, with the native PodGroup
		// workmap-webhook would make for its gang (made here by the test). In a namespace whose
		// quota lets its Jobs make no pods: pods made without workmap-webhook would name no
		// native PodGroup, and the native PodGroups are not looked up for a workload whose pods
		// name none.
		_, err = c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "native"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.CoreV1().ResourceQuotas("native").Create(ctx, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *apiresource.NewQuantity(0, apiresource.DecimalSI)}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		// Admission enforces a quota by its status (hard and used), which the quota controller
		// writes; this control plane runs none, so the test writes it.
		q, err := c.Kube.CoreV1().ResourceQuotas("native").Get(ctx, "no-pods", metav1.GetOptions{})
		require.NoError(t, err)
		zero := corev1.ResourceList{corev1.ResourcePods: *apiresource.NewQuantity(0, apiresource.DecimalSI)}
		q.Status = corev1.ResourceQuotaStatus{Hard: zero, Used: zero}
		_, err = c.Kube.CoreV1().ResourceQuotas("native").UpdateStatus(ctx, q, metav1.UpdateOptions{})
		require.NoError(t, err)
		js, err := harness.ExampleJobSet("native-gang", corev1.DefaultSchedulerName, 0)
		require.NoError(t, err)
		js.SetNamespace("native")
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("native").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		natives := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha2", Resource: "podgroups"}
		pg, err := c.Dynamic.Resource(natives).Namespace("native").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
			"metadata": map[string]any{"name": "native-gang-all"},
			"spec":     map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(3)}}},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		kcNative := []string{"--kubeconfig", c.Kubeconfig, "-n", "native"}
		out, err = run(t, append([]string{"groups", "jobset/native-gang"}, kcNative...)...)
		require.NoError(t, err)
		require.Regexp(t, `native-gang-all\s.*native \(scheduling\.k8s\.io/v1alpha2\)\s+Pending\n`, out)
		// Kubernetes' scheduler says why the gang waits in its PodGroupScheduled condition.
		require.NoError(t, unstructured.SetNestedSlice(pg.Object, []any{map[string]any{
			"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable",
			"message": "2 of 3 pods fit", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}}, "status", "conditions"))
		_, err = c.Dynamic.Resource(natives).Namespace("native").UpdateStatus(ctx, pg, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"groups", "jobset/native-gang", "-o", "name"}, kcNative...)...)
			require.NoError(t, err)
			require.Equal(t, "podgroup.scheduling.k8s.io/native-gang-all\n", out)
		}, 10*time.Second, 500*time.Millisecond)
		out, err = run(t, append([]string{"groups", "jobset/native-gang"}, kcNative...)...)
		require.NoError(t, err)
		require.Contains(t, out, "native (scheduling.k8s.io/v1alpha2)   Pending: 2 of 3 pods fit")

		// Discovery cached on disk by another cluster that had this address (here: one
		// serving the native PodGroups at v1beta1 only) is read again once this cluster
		// answers that its version is not served; the gang's state is still found.
		cache := t.TempDir()
		withCache := append([]string{"--cache-dir", cache}, kcNative...)
		_, err = run(t, append([]string{"tree", "jobset/native-gang"}, withCache...)...)
		require.NoError(t, err)
		moveCachedVersion(t, cache, "scheduling.k8s.io", "v1alpha2", "v1beta1")
		out, err = run(t, append([]string{"tree", "jobset/native-gang"}, withCache...)...)
		require.NoError(t, err)
		require.Contains(t, out, "Gang all (leader, workers): minMember 3; native PodGroup native-gang-all Pending: 2 of 3 pods fit")

		// The operator's PodGroup appears (made here by the test): the pod that names it is
		// ganged by it.
		_, err = c.Dynamic.Resource(live.PodGroupsResource).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": "made-by-an-operator"},
			"spec":     map[string]any{"minMember": int64(1)},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := run(&testing.T{}, append([]string{"groups", "pod/operator-grouped"}, kc...)...)
			require.NoError(t, err)
			require.Regexp(t, `operator \(scheduling\.x-k8s\.io/v1alpha1\)\s+(Pending|Scheduling|Scheduled|Running)`, out)
		}, 60*time.Second, time.Second)
	})
	t.Run("completion names the workloads of a kind", func(t *testing.T) {
		out, err := run(t, append(append([]string{"__complete", "tree"}, kc...), "jobset/t")...)
		require.NoError(t, err)
		require.Equal(t, "jobset/too-big\njobset/train\n:4\n", out)
	})
}

// moveCachedVersion rewrites a discovery cache as a cluster serving group at version to
// instead of from would have left it.
func moveCachedVersion(t *testing.T, cache, group, from, to string) {
	t.Helper()
	groupLists, err := filepath.Glob(filepath.Join(cache, "discovery", "*", "servergroups.json"))
	require.NoError(t, err)
	require.Len(t, groupLists, 1, "one cluster's discovery in %s", cache)
	host := filepath.Dir(groupLists[0])
	data, err := os.ReadFile(groupLists[0])
	require.NoError(t, err)
	var groups metav1.APIGroupList
	require.NoError(t, json.Unmarshal(data, &groups))
	moved := false
	for i, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		for j, v := range g.Versions {
			if v.Version == from {
				groups.Groups[i].Versions[j] = metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + to, Version: to}
				moved = true
			}
		}
		groups.Groups[i].PreferredVersion = metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + to, Version: to}
	}
	require.True(t, moved, "%s/%s is in the cached discovery", group, from)
	data, err = json.Marshal(groups)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(groupLists[0], data, 0o600))
	resources, err := os.ReadFile(filepath.Join(host, group, from, "serverresources.json"))
	require.NoError(t, err)
	resources = []byte(strings.ReplaceAll(string(resources), group+"/"+from, group+"/"+to))
	require.NoError(t, os.MkdirAll(filepath.Join(host, group, to), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(host, group, to, "serverresources.json"), resources, 0o600))
	require.NoError(t, os.RemoveAll(filepath.Join(host, group, from)))
}
