// Package kserve runs the real KServe controller (github.com/kserve/kserve, cmd/manager) in a
// test control plane, in Standard mode (one Deployment per InferenceService component, no
// Knative or Istio), with its admission webhooks (InferenceService defaulting and validation,
// the pod mutator that adds the storage initializer, the ServingRuntime validators) served on
// loopback. Its live tests check workmap's view of InferenceServices against the objects the
// controller really makes.
package kserve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
)

// Namespace is where the controller runs and reads its ConfigMap (POD_NAMESPACE).
const Namespace = "kserve"

// InferenceServiceResource is the InferenceService API resource.
var InferenceServiceResource = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}

// InferenceServiceGroupKind is the InferenceService kind.
var InferenceServiceGroupKind = schema.GroupKind{Group: "serving.kserve.io", Kind: "InferenceService"}

var clusterServingRuntimeResource = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha1", Resource: "clusterservingruntimes"}

// Tool is the operator's tool module (hack/tools/kserve), which hack/build-operator.sh kserve
// builds into the kserve folder of the control plane's bin folder.
const Tool = "kserve"

// Start installs KServe's CRDs, its ConfigMap (in Standard mode) and its ClusterServingRuntimes,
// runs the controller with its webhooks on loopback and waits until the InferenceService
// webhooks answer. The controller is stopped with the cluster.
func Start(ctx context.Context, t harness.T, c *harness.Cluster) {
	t.Helper()
	manager := c.Bin(filepath.Join(Tool, "manager"))
	dir := filepath.Dir(manager)
	c.InstallCRDs(filepath.Join(dir, "crds"))

	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cm, err := standardModeConfig(filepath.Join(dir, "inferenceservice-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the KServe ConfigMap: %v", err)
	}

	// The pod mutator's own object selector (pods labelled serving.kserve.io/inferenceservice)
	// comes with the file.
	hooks := c.PrepareWebhooks([]string{filepath.Join(dir, "webhooks.yaml")}, nil)
	tmp, err := webhookTempDir(c.Dir, hooks.CertDir)
	if err != nil {
		t.Fatal(err)
	}
	probePort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// The manager has no flag for the webhook host or certificate folder: it listens on all
	// interfaces (the API server calls 127.0.0.1) and reads the certificate from
	// $TMPDIR/k8s-webhook-server/serving-certs, controller-runtime's default.
	c.Run("kserve-controller", filepath.Join(Tool, "manager"), []string{
		"KUBECONFIG=" + c.AdminKubeconfig("kserve-controller"),
		"POD_NAMESPACE=" + Namespace,
		"TMPDIR=" + tmp,
	},
		fmt.Sprintf("--webhook-port=%d", hooks.Port),
		"--metrics-addr=0",
		"--health-probe-addr="+harness.HostPort(probePort),
		"--leader-elect=false",
	)
	hooks.Install()
	if err := waitForWebhook(ctx, c); err != nil {
		t.Fatalf("KServe webhooks never answered: %v", err)
	}
	format := installRuntimes(ctx, t, c, filepath.Join(dir, "runtimes"))
	if err := waitForRuntimes(ctx, c, format); err != nil {
		t.Fatalf("KServe never saw its ClusterServingRuntimes: %v", err)
	}
}

// waitForRuntimes waits until KServe's cache holds the runtimes: an InferenceService of the
// model format of the runtime created last finds its runtime, so KServe makes its Deployment
// (KServe reads runtimes from a cache, so one created a moment before an InferenceService may
// not be there yet, and KServe then reports the InferenceService's spec invalid). The probe is
// deleted.
func waitForRuntimes(ctx context.Context, c *harness.Cluster, format string) error {
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
		"metadata": map[string]any{"name": "runtime-probe", "namespace": "default"},
		"spec": map[string]any{"predictor": map[string]any{"model": map[string]any{
			"modelFormat": map[string]any{"name": format}, "storageUri": "gs://workmap-probe/model",
		}}},
	}}
	isvcs := c.Dynamic.Resource(InferenceServiceResource).Namespace("default")
	if _, err := isvcs.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() { _ = isvcs.Delete(context.Background(), "runtime-probe", metav1.DeleteOptions{}) }()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		deployments, err := c.Kube.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{LabelSelector: "serving.kserve.io/inferenceservice=runtime-probe"})
		return err == nil && len(deployments.Items) > 0, nil
	})
}

// standardModeConfig reads the shipped inferenceservice-config ConfigMap and changes what a
// cluster without Knative or Istio needs: Standard (raw Deployment) mode by default and no
// Istio VirtualService. Ingress creation stays on: KServe makes a networking/v1 Ingress once
// every component is ready (and only then reports IngressReady, so Ready covers all
// components); no ingress controller is needed for that.
func standardModeConfig(path string) (*corev1.ConfigMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cm.Namespace = Namespace
	for key, set := range map[string]map[string]any{
		"deploy":  {"defaultDeploymentMode": "Standard"},
		"ingress": {"disableIstioVirtualHost": true},
	} {
		section := map[string]any{}
		if raw := cm.Data[key]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &section); err != nil {
				return nil, fmt.Errorf("%s: data.%s: %w", path, key, err)
			}
		}
		for k, v := range set {
			section[k] = v
		}
		out, err := json.Marshal(section)
		if err != nil {
			return nil, err
		}
		cm.Data[key] = string(out)
	}
	return &cm, nil
}

// webhookTempDir makes a folder to be the manager's TMPDIR, with the harness's serving
// certificate where controller-runtime looks for it by default.
func webhookTempDir(clusterDir, certDir string) (string, error) {
	tmp := filepath.Join(clusterDir, "kserve-tmp")
	certs := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		return "", err
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		data, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(certs, f), data, 0o600); err != nil {
			return "", err
		}
	}
	return tmp, nil
}

// waitForWebhook dry-runs an InferenceService create until the defaulting and validating
// webhooks answer.
func waitForWebhook(ctx context.Context, c *harness.Cluster) error {
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
		"metadata": map[string]any{"name": "webhook-probe", "namespace": "default"},
		"spec": map[string]any{"predictor": map[string]any{
			"containers": []any{map[string]any{"name": "kserve-container", "image": "probe"}},
		}},
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	err := harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.CheckProcesses(); err != nil {
			return false, err
		}
		_, last = c.Dynamic.Resource(InferenceServiceResource).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	return nil
}

// installRuntimes creates the shipped ClusterServingRuntimes (through the controller's
// validating webhook). Their images are kustomize placeholders (e.g. kserve-torchserve:replace);
// kwok runs pods without pulling images, so they stay as they are.
// It returns the first model format of the runtime created last.
func installRuntimes(ctx context.Context, t harness.T, c *harness.Cluster, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "kserve-*.yaml"))
	var last string
	if err != nil || len(files) == 0 {
		t.Fatalf("no ClusterServingRuntimes in %s (%v)", dir, err)
	}
	for _, f := range files {
		docs, err := manifest.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range docs {
			if d.Object.GetKind() != "ClusterServingRuntime" {
				continue
			}
			if _, err := c.Dynamic.Resource(clusterServingRuntimeResource).Create(ctx, d.Object, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating ClusterServingRuntime %s: %v", d.Object.GetName(), err)
			}
			formats, _, _ := unstructured.NestedSlice(d.Object.Object, "spec", "supportedModelFormats")
			if len(formats) > 0 {
				last, _, _ = unstructured.NestedString(formats[0].(map[string]any), "name")
			}
		}
	}
	return last
}
