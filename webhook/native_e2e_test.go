package webhook_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/webhook"
)

// gangJob is a Job of n pods of one GPU each, asking for the default scheduler.
func gangJob(name string, n int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(n), Completions: ptr.To(n), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"gang": name}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
			}}},
		}},
	}
}

// TestNativeGangs: with the webhook, Kubernetes' own kube-scheduler (native gangs on)
// gang-schedules workloads no controller made native groups for, from workmap's definitions,
// on each release's native API (scheduling.k8s.io/v1alpha2 on 1.36, v1beta1 on 1.37).
func TestNativeGangs(t *testing.T) {
	for _, r := range harness.Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) { testNativeGangs(t, r) })
	}
}

func testNativeGangs(t *testing.T, release harness.Release) {
	c := harness.Start(t, harness.Options{JobSet: true, NativeGangs: true, Release: release, Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}}})
	ctx := context.Background()
	nativePodGroups := release.NativePodGroups()
	// Registered without a caBundle: workmap-webhook fills it in (its own certificate).
	w := c.StartWorkmapWebhook(harness.WebhookOptions{Binary: harness.WebhookBinary(t)})
	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	ready := readiness(t, c)
	require.NoError(t, ready(waitCtx), "webhook log: %s", w.LogPath())
	g := c.NewGangs(t, "default")

	t.Run("the example JobSet: none of 3 pods on room for 2, all 3 once a node is added", func(t *testing.T) {
		js, err := harness.ExampleJobSet("native", corev1.DefaultSchedulerName, 0)
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
		require.NoError(t, err)
		sel := "jobset.sigs.k8s.io/jobset-name=native"
		g.WaitCreated(sel, 3)
		for _, p := range g.Pods(sel) {
			require.NotNil(t, p.Spec.SchedulingGroup, "pod %s points at its native PodGroup", p.Name)
			require.Equal(t, "native-all", ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, ""))
		}
		pg, err := c.Dynamic.Resource(nativePodGroups).Namespace("default").Get(ctx, "native-all", metav1.GetOptions{})
		require.NoError(t, err)
		min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
		require.Equal(t, int64(3), min)
		require.Equal(t, "JobSet", pg.GetOwnerReferences()[0].Kind)
		g.NeverPartial(6*time.Second, map[string]int{sel: 3})
		require.Zero(t, harness.Bound(g.Pods(sel)), "12 GPUs on 8: none bound")
		c.AddNode(ctx, harness.Node{Name: "gpu-node-1", GPUs: 8})
		g.WaitBound(sel, 3, 60*time.Second)

		// workmap tree says which PodGroup holds the gang, and its state.
		workmap := harness.CLIBinary(t)
		cache := t.TempDir() // not the user's: another test's cluster may have had this address
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			out, err := exec.Command(workmap, "tree", "jobset/native", "-n", "default", "--kubeconfig", c.Kubeconfig, "--cache-dir", cache).CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "Gang all (leader, workers): minMember 3; native PodGroup native-all Scheduled")
		}, 30*time.Second, time.Second)
	})

	t.Run("an elastic Indexed Job scaled up: minCount follows where it may change, and the new pod schedules", func(t *testing.T) {
		j := gangJob("scaled", 2)
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) // completions may change with parallelism
		_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitBound("gang=scaled", 2, 60*time.Second)
		_, err = c.Kube.BatchV1().Jobs("default").Patch(ctx, "scaled", types.MergePatchType, []byte(`{"spec":{"parallelism":3,"completions":3}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		want := int64(3) // v1beta1: minCount is mutable
		if nativePodGroups.Version == "v1alpha2" {
			want = 2 // the PodGroup's spec is immutable: left as it was made
		}
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			pg, err := c.Dynamic.Resource(nativePodGroups).Namespace("default").Get(ctx, "scaled-job", metav1.GetOptions{})
			require.NoError(t, err)
			min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
			assert.Equal(t, want, min)
		}, 30*time.Second, 250*time.Millisecond, "webhook log: %s", w.LogPath())
		g.WaitBound("gang=scaled", 3, 60*time.Second)

		// Scaled down, no pod is admitted: the webhook follows the Job's change itself.
		_, err = c.Kube.BatchV1().Jobs("default").Patch(ctx, "scaled", types.MergePatchType, []byte(`{"spec":{"parallelism":2,"completions":2}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			pg, err := c.Dynamic.Resource(nativePodGroups).Namespace("default").Get(ctx, "scaled-job", metav1.GetOptions{})
			require.NoError(t, err)
			min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
			assert.Equal(t, int64(2), min)
		}, 30*time.Second, 250*time.Millisecond, "webhook log: %s", w.LogPath())
		require.Eventually(t, func() bool { return len(g.Pods("gang=scaled")) == 2 }, 30*time.Second, 100*time.Millisecond, "the Job controller removes index 2")
		g.Finish("gang=scaled")
	})

	t.Run("webhook down: pods are created and scheduled without a gang, and an event says why; back: grouped again", func(t *testing.T) {
		w.Stop()
		_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, gangJob("while-down", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitBound("gang=while-down", 2, 60*time.Second)
		down := g.Pods("gang=while-down")
		for _, p := range down {
			require.Nil(t, p.Spec.SchedulingGroup, "pod %s was admitted as it came", p.Name)
		}
		require.Empty(t, createdWithoutGang(ctx, t, c), "no webhook runs to tell")
		w.Start()
		require.NoError(t, ready(waitCtx))
		_, err = c.Kube.BatchV1().Jobs("default").Create(ctx, gangJob("back", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		g.WaitCreated("gang=back", 2)
		for _, p := range g.Pods("gang=back") {
			require.NotNil(t, p.Spec.SchedulingGroup, "pod %s joins its native PodGroup", p.Name)
		}

		// Back, the webhook tells of the pods created while it was down, on each of them, once;
		// of none of the pods it grouped.
		want := map[types.UID]int{}
		for _, p := range down {
			want[p.UID] = 1
		}
		require.EventuallyWithT(t, func(t *assert.CollectT) {
			got := map[types.UID]int{}
			for _, e := range createdWithoutGang(ctx, t, c) {
				got[e.Regarding.UID]++
				assert.Equal(t, corev1.EventTypeWarning, e.Type)
				assert.Equal(t, "Pod", e.Regarding.Kind)
				assert.Equal(t, webhook.ReportingController, e.ReportingController)
				assert.Contains(t, e.Note, "created without its gang (native PodGroup while-down-job)")
				assert.Contains(t, e.Note, "Recreate the workload's pods to gang them")
			}
			assert.Equal(t, want, got, "one CreatedWithoutGang event on each pod created while the webhook was down")
		}, 30*time.Second, 250*time.Millisecond, "webhook log: %s", w.LogPath())
	})
}

// createdWithoutGang are the CreatedWithoutGang events in the namespace default.
func createdWithoutGang(ctx context.Context, t require.TestingT, c *harness.Cluster) []eventsv1.Event {
	list, err := c.Kube.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == webhook.ReasonCreatedWithoutGang {
			out = append(out, e)
		}
	}
	return out
}

// readiness makes a suspended Job of 2 pods (its controller makes none) and returns a wait
// until the webhook answers the dry-run creation of a pod of it with its native PodGroup: the
// caBundle is in place and the API server calls the webhook (a dry run makes no PodGroup).
func readiness(t *testing.T, c *harness.Cluster) func(context.Context) error {
	j := gangJob("probe", 2)
	j.Spec.Suspend = ptr.To(true)
	j, err := c.Kube.BatchV1().Jobs("default").Create(context.Background(), j, metav1.CreateOptions{})
	require.NoError(t, err)
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	return func(ctx context.Context) error {
		return c.WaitForPodWebhook(ctx, probe, func(p *corev1.Pod) bool { return p.Spec.SchedulingGroup != nil })
	}
}

// TestNoNativePodGroupsServed: on Kubernetes 1.37 as it ships (GenericWorkload off: no native
// PodGroups served, and a pod's spec.schedulingGroup dropped), workmap-webhook says at startup
// that the native schedulers' pods are not ganged, writes nothing on them, and tells each pod
// whose workload has a gang why; pods of workmap-scheduler are labelled as before.
func TestNoNativePodGroupsServed(t *testing.T) {
	c := harness.Start(t, harness.Options{Release: harness.Release137, NoScheduler: true, Nodes: []harness.Node{}})
	ctx := context.Background()
	w := c.StartWorkmapWebhook(harness.WebhookOptions{Binary: harness.WebhookBinary(t)})
	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	probe := gangJob("probe", 2)
	probe.Spec.Suspend = ptr.To(true)
	probe, err := c.Kube.BatchV1().Jobs("default").Create(ctx, probe, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.WaitForPodWebhook(waitCtx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: probe.Name, UID: probe.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{SchedulerName: harness.SchedulerName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, func(p *corev1.Pod) bool { return p.Labels[v1alpha1.PodGroupLabel] == "probe-job" }), "webhook log: %s", w.LogPath())

	_, err = c.Kube.BatchV1().Jobs("default").Create(ctx, gangJob("unserved", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	g := c.NewGangs(t, "default")
	g.WaitCreated("gang=unserved", 2)
	for _, p := range g.Pods("gang=unserved") {
		require.Nil(t, p.Spec.SchedulingGroup, "pod %s is admitted as it came", p.Name)
	}
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		events := createdWithoutGang(ctx, t, c)
		assert.Len(t, events, 2, "one event on each pod of the gang")
		for _, e := range events {
			assert.Contains(t, e.Note, "created without its gang (unserved-job): the cluster serves no native PodGroups")
		}
	}, 30*time.Second, 250*time.Millisecond, "webhook log: %s", w.LogPath())
	log, err := os.ReadFile(w.LogPath())
	require.NoError(t, err)
	require.Contains(t, string(log), "the cluster serves no native PodGroups (scheduling.k8s.io v1beta1 or v1alpha2; kube-apiserver needs the GenericWorkload feature gate")
}
