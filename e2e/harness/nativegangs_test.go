package harness

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestMergeFeatureGates(t *testing.T) {
	tests := map[string]struct {
		lists   []string
		want    string
		wantErr string
	}{
		"nothing":                {lists: []string{"", ""}, want: ""},
		"native gangs alone":     {lists: []string{NativeGangGates}, want: "GangScheduling=true,GenericWorkload=true"},
		"merged, later wins":     {lists: []string{NativeGangGates, "SchedulerAsyncAPICalls=false, GangScheduling=false"}, want: "GangScheduling=false,GenericWorkload=true,SchedulerAsyncAPICalls=false"},
		"a gate without a value": {lists: []string{"GangScheduling"}, wantErr: `feature gate "GangScheduling": want Name=true or Name=false`},
		"not a boolean":          {lists: []string{"GangScheduling=yes"}, wantErr: `feature gate "GangScheduling=yes"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := mergeFeatureGates(tc.lists...)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestNativeGangs checks the cluster NativeGangs starts: Kubernetes' own PodGroups and the
// default kube-scheduler's GangScheduling plugin bind a gang all at once or not at all, pods
// naming a missing PodGroup wait for it, ordinary pods bind as before, and a pod webhook
// registered with RegisterWebhook can put pods into gangs at creation.
func TestNativeGangs(t *testing.T) {
	for _, r := range Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) { testNativeGangs(t, r) })
	}
}

func testNativeGangs(t *testing.T, release Release) {
	// Two nodes with room for two pods of 4 GPUs: a gang of three waits for a third node.
	c := Start(t, Options{NativeGangs: true, Release: release, Nodes: []Node{{Name: "gpu-0", GPUs: 4}, {Name: "gpu-1", GPUs: 4}}})
	ctx := context.Background()
	g := c.NewGangs(t, "")
	podGroups := c.Dynamic.Resource(release.NativePodGroups()).Namespace(metav1.NamespaceDefault)
	scheduled := release.Native.ScheduledCondition

	t.Run("ordinary pods bind as before", func(t *testing.T) {
		start := time.Now()
		for i := range 10 {
			createPod(t, c, pod(fmt.Sprintf("plain-%d", i), map[string]string{"app": "plain"}, "", 0))
		}
		require.Eventually(t, func() bool { return Bound(g.Pods("app=plain")) == 10 }, 30*time.Second, 10*time.Millisecond)
		t.Logf("10 ordinary pods bound %v after their creation began", time.Since(start).Round(time.Millisecond))
	})

	t.Run("a pod naming a missing PodGroup waits for it", func(t *testing.T) {
		createPod(t, c, pod("orphan", map[string]string{"app": "orphan"}, "not-yet", 0))
		time.Sleep(3 * time.Second)
		orphans := g.Pods("app=orphan")
		require.Zero(t, Bound(orphans), "a pod whose PodGroup does not exist stays pending")
		// The scheduler holds it back before any scheduling cycle: no condition, no event.
		assert.Empty(t, orphans[0].Status.Conditions)
		logPod(t, c, "orphan")

		// Once the PodGroup appears, the pod joins its gang and binds.
		_, err := podGroups.Create(ctx, gangPodGroup(release, "not-yet", 1), metav1.CreateOptions{})
		require.NoError(t, err)
		start := time.Now()
		g.WaitBound("app=orphan", 1, 30*time.Second)
		t.Logf("pod bound %v after its PodGroup was created", time.Since(start).Round(10*time.Millisecond))
	})

	t.Run("a gang binds only when all its pods fit", func(t *testing.T) {
		_, err := podGroups.Create(ctx, gangPodGroup(release, "trio", 3), metav1.CreateOptions{})
		require.NoError(t, err)
		for i := range 3 {
			createPod(t, c, pod(fmt.Sprintf("trio-%d", i), map[string]string{"gang": "trio"}, "trio", 4))
		}
		require.Equal(t, map[string]int{"gang=trio": 0}, g.NeverPartial(5*time.Second, map[string]int{"gang=trio": 3}))
		for i := range 3 {
			logPod(t, c, fmt.Sprintf("trio-%d", i))
		}
		cond := apimeta.FindStatusCondition(logPodGroup(t, c, "trio"), scheduled)
		require.NotNil(t, cond, "the scheduler reports why the gang waits")
		assert.Equal(t, metav1.ConditionFalse, cond.Status)
		assert.Equal(t, "Unschedulable", cond.Reason)

		c.AddNode(ctx, Node{Name: "gpu-2", GPUs: 4})
		start := time.Now()
		g.WaitBound("gang=trio", 3, 60*time.Second)
		t.Logf("gang bound %v after the third node was added", time.Since(start).Round(10*time.Millisecond))
		require.Eventually(t, func() bool {
			return apimeta.IsStatusConditionTrue(podGroupConditions(t, c, "trio"), scheduled)
		}, 30*time.Second, 100*time.Millisecond, "PodGroup trio reports %s", scheduled)
		logPodGroup(t, c, "trio")
	})

	t.Run("a registered webhook puts pods into gangs", func(t *testing.T) {
		hook := httptest.NewTLSServer(http.HandlerFunc(joinGangWebhook))
		t.Cleanup(hook.Close)
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
		c.RegisterWebhook(&admissionregv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "join-gang"},
			Webhooks: []admissionregv1.MutatingWebhook{{
				Name:                    "join-gang.e2e.workmap.dev",
				AdmissionReviewVersions: []string{"v1"},
				SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
				FailurePolicy:           ptr.To(admissionregv1.Fail),
				ObjectSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: joinGangLabel, Operator: metav1.LabelSelectorOpExists}}},
				Rules: []admissionregv1.RuleWithOperations{{
					Operations: []admissionregv1.OperationType{admissionregv1.Create},
					Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}},
			}},
		}, hook.URL+"/mutate", ca)
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, c.WaitForPodWebhook(waitCtx, pod("probe", map[string]string{joinGangLabel: "probe"}, "", 0), func(p *corev1.Pod) bool {
			return podGroupName(p) == "probe"
		}))

		_, err := podGroups.Create(ctx, gangPodGroup(release, "duo", 2), metav1.CreateOptions{})
		require.NoError(t, err)
		createPod(t, c, pod("duo-0", map[string]string{joinGangLabel: "duo"}, "", 0))
		require.Equal(t, map[string]int{joinGangLabel + "=duo": 0}, g.NeverPartial(2*time.Second, map[string]int{joinGangLabel + "=duo": 2}), "half a gang waits")
		logPod(t, c, "duo-0")
		// Short of minCount pods, the gang is held back before any scheduling cycle: its
		// PodGroup reports nothing yet.
		assert.Empty(t, logPodGroup(t, c, "duo"))
		createPod(t, c, pod("duo-1", map[string]string{joinGangLabel: "duo"}, "", 0))
		g.WaitBound(joinGangLabel+"=duo", 2, 30*time.Second)
		for _, p := range g.Pods(joinGangLabel + "=duo") {
			assert.Equal(t, "duo", podGroupName(&p), "pod %s", p.Name)
		}
	})
}

// TestNativeGangsSeparateScheduler checks that a kube-scheduler started on demand with
// NativeGangGates (as the benchmarks run it) gang-schedules too, and that the pods it holds
// back for their gang show in its metrics, the only place they show before the gang is
// complete.
func TestNativeGangsSeparateScheduler(t *testing.T) {
	c := Start(t, Options{NativeGangs: true, NoScheduler: true, Nodes: []Node{{Name: "gpu-0", GPUs: 8}}})
	s := c.StartKubeScheduler(KubeSchedulerOptions{FeatureGates: NativeGangGates, Args: []string{OpenEndpointsFlag}})
	ctx := context.Background()
	g := c.NewGangs(t, "")
	_, err := c.Dynamic.Resource(Release136.NativePodGroups()).Namespace(metav1.NamespaceDefault).Create(ctx, gangPodGroup(Release136, "pair", 2), metav1.CreateOptions{})
	require.NoError(t, err)

	createPod(t, c, pod("pair-0", map[string]string{"gang": "pair"}, "pair", 4))
	createPod(t, c, pod("lonely", map[string]string{"app": "lonely"}, "missing", 0))
	require.Equal(t, map[string]int{"gang=pair": 0, "app=lonely": 0}, g.NeverPartial(2*time.Second, map[string]int{"gang=pair": 2, "app=lonely": 1}))
	metrics, err := s.Metrics(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2.0, Counter(t, metrics, "scheduler_pending_pods", map[string]string{"queue": "gated"}), "pods held back before their scheduling cycle")
	assert.Equal(t, 2.0, Counter(t, metrics, "scheduler_unschedulable_pods", map[string]string{"plugin": "GangScheduling"}), "pods the GangScheduling plugin holds back")

	createPod(t, c, pod("pair-1", map[string]string{"gang": "pair"}, "pair", 4))
	g.WaitBound("gang=pair", 2, 30*time.Second)
	require.Zero(t, Bound(g.Pods("app=lonely")))
}

// joinGangLabel names the PodGroup the test's webhook puts a pod into.
const joinGangLabel = "e2e.workmap.dev/join-gang"

// joinGangWebhook is a mutating pod webhook: it sets spec.schedulingGroup.podGroupName to the
// pod's joinGangLabel.
func joinGangWebhook(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an admission review: %v", err), http.StatusBadRequest)
		return
	}
	var p corev1.Pod
	if err := json.Unmarshal(review.Request.Object.Raw, &p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	patch, _ := json.Marshal([]map[string]any{{
		"op": "add", "path": "/spec/schedulingGroup", "value": map[string]string{"podGroupName": p.Labels[joinGangLabel]},
	}})
	review.Response = &admissionv1.AdmissionResponse{
		UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch),
	}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(&review)
}

// gangPodGroup is a native PodGroup of gang policy, in the release's native API.
func gangPodGroup(release Release, name string, minCount int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": release.NativeGangAPI(), "kind": "PodGroup",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": minCount}}},
	}}
}

// pod is a pod of the default namespace that asks for gpus GPUs and, when podGroup is not
// "", belongs to that PodGroup.
func pod(name string, labels map[string]string, podGroup string, gpus int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if gpus > 0 {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	if podGroup != "" {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &podGroup}
	}
	return p
}

func podGroupName(p *corev1.Pod) string {
	if p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil {
		return ""
	}
	return *p.Spec.SchedulingGroup.PodGroupName
}

func createPod(t *testing.T, c *Cluster, p *corev1.Pod) {
	t.Helper()
	_, err := c.Kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
}

// logPod logs a pod's conditions and the events about it.
func logPod(t *testing.T, c *Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	p, err := c.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	t.Logf("pod %s: phase %s, conditions %s", name, p.Status.Phase, conditionsString(p.Status.Conditions))
	events, err := c.Kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	require.NoError(t, err)
	for _, e := range events.Items {
		t.Logf("  event %s %s (x%d, from %s%s): %s", e.Type, e.Reason, e.Count, e.Source.Component, e.ReportingController, e.Message)
	}
}

func conditionsString(conds []corev1.PodCondition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// podGroupConditions are a native PodGroup's status conditions.
func podGroupConditions(t require.TestingT, c *Cluster, name string) []metav1.Condition {
	pg, err := c.Dynamic.Resource(c.Release().NativePodGroups()).Namespace(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	var status struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	raw, _, _ := unstructured.NestedMap(pg.Object, "status")
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status))
	return status.Conditions
}

// logPodGroup logs a native PodGroup's finalizers and status, and returns its conditions.
func logPodGroup(t *testing.T, c *Cluster, name string) []metav1.Condition {
	t.Helper()
	pg, err := c.Dynamic.Resource(c.Release().NativePodGroups()).Namespace(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	status, _ := json.Marshal(pg.Object["status"])
	t.Logf("PodGroup %s: finalizers %v, status %s", name, pg.GetFinalizers(), status)
	return podGroupConditions(t, c, name)
}
