package kserve_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/kserve"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	scheduling "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/live"
)

const (
	namespace = "default"
	// isvcLabel is on every pod and Deployment KServe makes for an InferenceService.
	isvcLabel = "serving.kserve.io/inferenceservice"
	// componentLabel names the component (predictor, transformer, explainer) of a pod.
	componentLabel = "component"
	stopAnnotation = "serving.kserve.io/stop"
	// stoppedCondition is KServe's condition for an InferenceService stopped by annotation.
	stoppedCondition = "Stopped"
	readyTimeout     = 90 * time.Second
)

// sample reads an upstream InferenceService sample, in the test namespace when it names none.
func sample(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	objs := livecheck.Sample(t, "kserve", file)
	require.Len(t, objs, 1, "%s: %s", file, livecheck.Names(objs))
	isvc := objs[0]
	require.Equal(t, kserve.InferenceServiceGroupKind.Kind, isvc.GetKind())
	if isvc.GetNamespace() == "" {
		isvc.SetNamespace(namespace)
	}
	return isvc
}

func podsOf(name string) string { return isvcLabel + "=" + name }

// observer resolves an InferenceService live and, at every observation, checks workmap's state
// against KServe's own conditions on the same object: Running exactly when KServe reports
// Ready=True, and Suspended while the stop annotation is set and KServe reports Stopped=True.
// workmap follows the annotation, as KServe's reconciler does: when it is removed, KServe
// recreates the Deployment in the same pass that reports Stopped=False, so for a moment the
// pods come back while Stopped=True; workmap already counts them (Pending).
func observer(ctx context.Context, t *testing.T, c *harness.Cluster, def *definitions.Definition, name string) func() *live.Result {
	return func() *live.Result {
		t.Helper()
		root, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		res, err := (&live.Resolver{Client: c.Dynamic}).Resolve(ctx, def, root)
		require.NoError(t, err)
		state := res.Workload.Status.State
		ready := livecheck.Condition(root, "Ready")
		stopping := root.GetAnnotations()[stopAnnotation] == "true"
		if !stopping {
			require.Equal(t, ready == metav1.ConditionTrue, state == v1alpha1.StateRunning,
				"workmap state %s (%s) against KServe's Ready=%q", state, res.Workload.Status.Reason, ready)
		}
		if stopping && livecheck.Condition(root, stoppedCondition) == metav1.ConditionTrue {
			require.Equal(t, v1alpha1.StateSuspended, state, "KServe reports Stopped=True")
		}
		return res
	}
}

// requireComponents checks workmap's tree of a running InferenceService against the cluster:
// the pods KServe made (livecheck.RequireTree), the expected pods of every component, one
// Standard-mode Deployment per component, and the GPUs the sample asks for.
func requireComponents(ctx context.Context, t *testing.T, c *harness.Cluster, res *live.Result, name string, components map[string]int, gpus float64) {
	t.Helper()
	pods := livecheck.Pods(ctx, t, c, namespace, podsOf(name))
	livecheck.RequireTree(t, res, pods)

	expected := map[string]int{}
	for _, r := range res.Workload.Roles {
		if r.Pods > 0 {
			expected[r.Name] = int(r.Pods)
		}
	}
	require.Equal(t, components, expected, "expected pods per component (minReplicas, default 1)")
	byComponent := map[string]int{}
	for _, p := range pods {
		byComponent[p.Labels[componentLabel]]++
	}
	require.Equal(t, components, byComponent, "pods KServe made per component")

	deployments, err := c.Kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: podsOf(name)})
	require.NoError(t, err)
	got := []string{}
	for _, d := range deployments.Items {
		got = append(got, d.Name)
	}
	want := []string{}
	for comp := range components {
		want = append(want, name+"-"+comp)
	}
	require.ElementsMatch(t, want, got, "one Deployment per component")
	children := []string{}
	for _, d := range res.Children["deployments"] {
		children = append(children, d.GetName())
	}
	require.ElementsMatch(t, got, children, "the Deployments workmap finds are KServe's")
	require.InDelta(t, gpus, res.Workload.Totals.GPUs, 1e-9, "GPUs of the sample")
}

// setNodesUnschedulable cordons or uncordons every node.
func setNodesUnschedulable(ctx context.Context, t *testing.T, c *harness.Cluster, unschedulable bool) {
	t.Helper()
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
	for _, n := range nodes.Items {
		_, err := c.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
}

func setStopAnnotation(ctx context.Context, t *testing.T, c *harness.Cluster, name string, stop bool) {
	t.Helper()
	value := `"true"`
	if !stop {
		value = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, stopAnnotation, value)
	_, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// TestInferenceServiceSamples runs upstream samples through the real KServe controller in
// Standard mode: each goes Pending → Running as its Deployments become available, with
// workmap's tree matching the pods KServe made. A model format no runtime serves is Failed.
// On the custom predictor it then drives the states a served model can reach here: Degraded
// when its pod is evicted with no node to take the replacement, Running again once the nodes
// take pods, Suspended by serving.kserve.io/stop (KServe removes the Deployment), then Pending
// and Running again when the annotation is removed.
//
// Not reached on kwok: Initializing (KServe reports the model Loading while the
// storage-initializer init container runs; kwok starts pods with their init containers done)
// and Failed from a model server that fails to load (it must fail before any copy served, but
// kwok makes a pod Ready 100ms after it binds, so the Deployment is available before a test
// can fail it).
func TestInferenceServiceSamples(t *testing.T) {
	c := harness.Start(t, harness.Options{})
	ctx := context.Background()
	kserve.Start(ctx, t, c)
	def := livecheck.Definition(t, kserve.InferenceServiceGroupKind)

	// The Hugging Face sample runs as a service account that holds the hub token; it must exist
	// for the pods to be created.
	_, err := c.Kube.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "hfserviceacc"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	tests := map[string]struct {
		file       string
		components map[string]int
		gpus       float64
	}{
		"custom predictor container": {
			file: "custom-prebuilt-image.yaml", components: map[string]int{"predictor": 1},
		},
		"TorchServe predictor on one GPU": {
			file: "torchserve-v2-bert_gpu.yaml", components: map[string]int{"predictor": 1}, gpus: 1,
		},
		"TensorFlow predictor on one GPU": {
			file: "autoscale_gpu.yaml", components: map[string]int{"predictor": 1}, gpus: 1,
		},
		"Hugging Face model through its ClusterServingRuntime, one GPU": {
			file: "hf_isvc.yaml", components: map[string]int{"predictor": 1}, gpus: 1,
		},
		"image transformer in front of a TorchServe predictor": {
			file: "torchserve-image-transformer.yaml", components: map[string]int{"predictor": 1, "transformer": 1},
		},
		"explainer beside a custom predictor": {
			file: "aix-mnist-explainer.yaml", components: map[string]int{"predictor": 1, "explainer": 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			isvc := sample(t, tc.file)
			_, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Create(ctx, isvc, metav1.CreateOptions{})
			require.NoError(t, err)
			var seen []v1alpha1.State
			running := livecheck.WaitForState(ctx, t, readyTimeout, observer(ctx, t, c, def, isvc.GetName()), v1alpha1.StateRunning, &seen)
			require.Equal(t, []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateRunning}, seen)
			requireComponents(ctx, t, c, running, isvc.GetName(), tc.components, tc.gpus)
		})
	}

	t.Run("a model format no ClusterServingRuntime serves: Failed, no pods", func(t *testing.T) {
		// Not an upstream sample: the sklearn sample's shape with a format none of the shipped
		// runtimes lists, so KServe finds no runtime for it.
		isvc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
			"metadata": map[string]any{"name": "unserved-format", "namespace": namespace},
			"spec": map[string]any{"predictor": map[string]any{"model": map[string]any{
				"modelFormat": map[string]any{"name": "no-such-format"},
				"storageUri":  "gs://kfserving-examples/models/sklearn/1.0/model",
			}}},
		}}
		_, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Create(ctx, isvc, metav1.CreateOptions{})
		require.NoError(t, err)
		var seen []v1alpha1.State
		failed := livecheck.WaitForState(ctx, t, readyTimeout, observer(ctx, t, c, def, "unserved-format"), v1alpha1.StateFailed, &seen)
		require.Equal(t, []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateFailed}, seen)
		root, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Get(ctx, "unserved-format", metav1.GetOptions{})
		require.NoError(t, err)
		transition, _, _ := unstructured.NestedString(root.Object, "status", "modelStatus", "transitionStatus")
		require.Equal(t, "InvalidSpec", transition, "KServe's model status")
		failure, _, _ := unstructured.NestedString(root.Object, "status", "modelStatus", "lastFailureInfo", "reason")
		require.Equal(t, "NoSupportingRuntime", failure, "KServe's failure reason")
		require.Contains(t, failed.Workload.Status.Reason, failure, "workmap's reason names KServe's")
		require.Empty(t, livecheck.Pods(ctx, t, c, namespace, podsOf("unserved-format")), "KServe makes no Deployment")
	})

	t.Run("a served model loses its pod and gets it back, is stopped and resumed", func(t *testing.T) {
		// The custom predictor of the samples above (created here when run alone).
		isvc := sample(t, "custom-prebuilt-image.yaml")
		_, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Create(ctx, isvc, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		name := isvc.GetName()
		observe := observer(ctx, t, c, def, name)
		var seen []v1alpha1.State
		livecheck.WaitForState(ctx, t, readyTimeout, observe, v1alpha1.StateRunning, &seen)

		// Drain: no node takes new pods, the serving pod is evicted; its replacement stays
		// pending, so the Deployment is unavailable while a model copy has served before.
		setNodesUnschedulable(ctx, t, c, true)
		for _, p := range livecheck.Pods(ctx, t, c, namespace, podsOf(name)) {
			err := c.Kube.CoreV1().Pods(namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: namespace}})
			require.NoError(t, err)
		}
		degraded := livecheck.WaitForState(ctx, t, readyTimeout, observe, v1alpha1.StateDegraded, &seen)
		require.Contains(t, degraded.Workload.Status.Reason, "PredictorReady")
		setNodesUnschedulable(ctx, t, c, false)
		running := livecheck.WaitForState(ctx, t, readyTimeout, observe, v1alpha1.StateRunning, &seen)
		requireComponents(ctx, t, c, running, name, map[string]int{"predictor": 1}, 0)

		setStopAnnotation(ctx, t, c, name, true)
		livecheck.WaitForState(ctx, t, readyTimeout, observe, v1alpha1.StateSuspended, &seen)
		require.Eventually(t, func() bool {
			_, err := c.Kube.AppsV1().Deployments(namespace).Get(ctx, name+"-predictor", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && len(livecheck.Pods(ctx, t, c, namespace, podsOf(name))) == 0
		}, readyTimeout, 100*time.Millisecond, "stopped: KServe removes the Deployment and its pods")
		root, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, metav1.ConditionTrue, livecheck.Condition(root, stoppedCondition), "KServe's Stopped condition")
		requireComponents(ctx, t, c, observe(), name, map[string]int{}, 0)

		setStopAnnotation(ctx, t, c, name, false)
		running = livecheck.WaitForState(ctx, t, readyTimeout, observe, v1alpha1.StateRunning, &seen)
		requireComponents(ctx, t, c, running, name, map[string]int{"predictor": 1}, 0)
		// Stopping clears KServe's model status, so the resumed service starts over as Pending.
		require.Equal(t, []v1alpha1.State{
			v1alpha1.StateRunning, v1alpha1.StateDegraded, v1alpha1.StateRunning,
			v1alpha1.StateSuspended, v1alpha1.StatePending, v1alpha1.StateRunning,
		}, seen)
	})
}

// TestInferenceServiceSchedulesWithoutGang: KServe's components serve independently, so
// workmap-scheduler makes no PodGroup for them and binds each pod as it fits. With room for one
// of the sample's two pods (a predictor and a transformer of one CPU each), one binds and the
// other waits (the InferenceService stays Pending: KServe is Ready only when every component
// is); once a node is added it binds too and the InferenceService becomes Ready.
func TestInferenceServiceSchedulesWithoutGang(t *testing.T) {
	node := func(name string) harness.Node { return harness.Node{Name: name, CPU: "1500m"} }
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{node("cpu-node-0")}})
	c.StartWorkmapScheduler(harness.SchedulerOptions{})
	ctx := context.Background()
	kserve.Start(ctx, t, c)
	def := livecheck.Definition(t, kserve.InferenceServiceGroupKind)
	g := c.NewGangs(t, namespace)

	isvc := sample(t, "torchserve-image-transformer.yaml")
	livecheck.SetSchedulerName(t, def, isvc, harness.SchedulerName)
	_, err := c.Dynamic.Resource(kserve.InferenceServiceResource).Namespace(namespace).Create(ctx, isvc, metav1.CreateOptions{})
	require.NoError(t, err)
	name := isvc.GetName()
	observe := observer(ctx, t, c, def, name)

	g.WaitCreated(podsOf(name), 2)
	for _, p := range g.Pods(podsOf(name)) {
		require.Equal(t, harness.SchedulerName, p.Spec.SchedulerName, "KServe passes the component's schedulerName to pod %s", p.Name)
		require.Greater(t, p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(), int64(750), "pod %s: one fits a node, two do not", p.Name)
	}
	require.Eventually(t, func() bool { return harness.Bound(g.Pods(podsOf(name))) == 1 }, 30*time.Second, 100*time.Millisecond,
		"the pod that fits binds without waiting for the other")
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		require.Equal(t, 1, harness.Bound(g.Pods(podsOf(name))), "the second pod has no room")
		require.Equal(t, v1alpha1.StatePending, observe().Workload.Status.State, "one component has no pod yet")
	}
	require.Empty(t, g.PodGroups(), "no PodGroup for independent serving replicas")

	c.AddNode(ctx, node("cpu-node-1"))
	g.WaitBound(podsOf(name), 2, 60*time.Second)
	var seen []v1alpha1.State
	running := livecheck.WaitForState(ctx, t, readyTimeout, observe, v1alpha1.StateRunning, &seen)
	requireComponents(ctx, t, c, running, name, map[string]int{"predictor": 1, "transformer": 1}, 0)
	require.Empty(t, g.PodGroups(), "no PodGroup for independent serving replicas")
	for _, p := range g.Pods(podsOf(name)) {
		require.NotContains(t, p.Labels, scheduling.PodGroupLabel, "pod %s is in no gang", p.Name)
	}
}
