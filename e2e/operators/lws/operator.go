// Package lws runs the real LeaderWorkerSet controller (sigs.k8s.io/lws) in a local test
// control plane, with its webhooks served on loopback, and holds the live tests of the
// LeaderWorkerSet catalog definition against it.
package lws

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

// Resource is the LeaderWorkerSet API resource.
var Resource = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// GroupKind is the LeaderWorkerSet kind.
var GroupKind = schema.GroupKind{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}

// Labels the controller and its pod webhook put on every pod of a LeaderWorkerSet.
const (
	NameLabel        = "leaderworkerset.sigs.k8s.io/name"
	GroupIndexLabel  = "leaderworkerset.sigs.k8s.io/group-index"
	WorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	sizeAnnotation   = "leaderworkerset.sigs.k8s.io/size"
)

// Tool is the operator's tool module (hack/tools/lws), which hack/build-operator.sh lws
// builds into the lws folder of the control plane's bin folder.
const Tool = "lws"

// binary is the manager in the Tool folder; crds/ and webhooks.yaml lie beside it.
const binary = Tool + "/manager"

// podSelector limits the pod webhooks to the pods of LeaderWorkerSets, as lws' kustomize
// overlay (config/webhook/*-patch.yaml) does: every other pod of the cluster is left alone.
var podSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: NameLabel, Operator: metav1.LabelSelectorOpExists}}}

// Start installs the LeaderWorkerSet CRD, runs the controller with its webhooks (defaulting
// and validating LeaderWorkerSets; labelling their pods with group and worker indexes) served
// on 127.0.0.1 with a certificate made by the harness, and waits until both webhooks answer.
// The controller's own certificate management and leader election are off, and so is its
// metrics endpoint.
func Start(ctx context.Context, t harness.T, c *harness.Cluster) {
	t.Helper()
	manager := c.Bin(binary)
	dir := filepath.Dir(manager)
	c.InstallCRDs(filepath.Join(dir, "crds"))
	hooks := c.PrepareWebhooks([]string{filepath.Join(dir, "webhooks.yaml")}, map[string]*metav1.LabelSelector{
		"mpod.kb.io": podSelector, "vpod.kb.io": podSelector,
	})
	cfgPath := c.WriteManagerConfig("lws", "config.lws.x-k8s.io/v1alpha1", hooks)
	c.Run("lws-controller", binary, []string{"KUBECONFIG=" + c.AdminKubeconfig("lws-controller")}, "--config="+cfgPath)
	hooks.Install()
	if err := waitForWebhooks(ctx, c); err != nil {
		t.Fatalf("LeaderWorkerSet webhooks never answered: %v", err)
	}
}

// waitForWebhooks dry-runs a LeaderWorkerSet create and a leader pod create until the
// defaulting webhooks answer: the LeaderWorkerSet one must accept, the pod one must give the
// pod its group index (the controller registers the pod webhook last).
func waitForWebhooks(ctx context.Context, c *harness.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "webhook-probe", "namespace": metav1.NamespaceDefault},
		"spec": map[string]any{"leaderWorkerTemplate": map[string]any{"workerTemplate": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "c", "image": "probe"}},
		}}}},
	}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "webhook-probe-0", Namespace: metav1.NamespaceDefault,
			Labels:      map[string]string{NameLabel: "webhook-probe", WorkerIndexLabel: "0"},
			Annotations: map[string]string{sizeAnnotation: "1"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "probe"}}},
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	err := harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		if _, last = c.Dynamic.Resource(Resource).Namespace(metav1.NamespaceDefault).Create(ctx, lws, dryRun); last != nil {
			return false, nil
		}
		got, err := c.Kube.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, dryRun)
		if last = err; err != nil {
			return false, nil
		}
		if got.Labels[GroupIndexLabel] != "0" {
			last = fmt.Errorf("the pod webhook did not label the probe pod yet (labels %v)", got.Labels)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	return nil
}
