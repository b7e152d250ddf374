package deploy_test

// Tests of the kustomization (deploy/kustomization.yaml): it renders with the control plane's
// own kubectl, holds what workmap-scheduler needs wired together (generated ConfigMap, its
// ServiceAccount, every CRD), and every object it renders, and every object the Helm chart
// renders, passes the API server's admission and validation (server-side apply, dryRun: All).

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

func kindNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestKustomizationRenders: `kubectl kustomize deploy/` holds the namespace, every generated
// CRD, the RBAC, the configuration and the Deployment, wired to each other.
func TestKustomizationRenders(t *testing.T) {
	objs := kustomize(t, ".")

	// Every CRD controller-gen writes is installed.
	crdFiles, err := filepath.Glob("crds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, crdFiles)
	for _, crd := range readObjects(t, crdFiles...) {
		got := find(objs, schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, crd.GetName())
		if assert.NotNil(t, got, "CRD %s (add crds/ files to kustomization.yaml)", crd.GetName()) {
			assert.Equal(t, crd.Object, got.Object, "CRD %s is installed as generated", crd.GetName())
		}
	}
	// The RBAC is exactly the rbac/ folder's.
	for _, o := range readObjects(t, rbacFiles(t)...) {
		got := find(objs, o.GroupVersionKind().GroupKind(), o.GetName())
		if assert.NotNil(t, got, "%s %s", o.GetKind(), o.GetName()) {
			assert.Equal(t, o.Object, got.Object)
		}
	}

	var cm *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			require.Nil(t, cm, "one ConfigMap")
			cm = o
		}
	}
	require.NotNil(t, cm, "the configuration's ConfigMap")
	assert.True(t, strings.HasPrefix(cm.GetName(), "workmap-scheduler-config-"), "a content hash in the name rolls the Deployment on change: %s", cm.GetName())
	assert.Equal(t, namespace, cm.GetNamespace())
	shipped, err := os.ReadFile("scheduler/config.yaml")
	require.NoError(t, err)
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	assert.Equal(t, string(shipped), data["config.yaml"], "the shipped configuration, byte for byte")

	u := find(objs, schema.GroupKind{Group: "apps", Kind: "Deployment"}, "workmap-scheduler")
	require.NotNil(t, u)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	assert.Equal(t, namespace, d.Namespace)
	pod := d.Spec.Template.Spec
	assert.NotNil(t, find(objs, schema.GroupKind{Kind: "ServiceAccount"}, pod.ServiceAccountName), "runs as the ServiceAccount the RBAC binds")
	require.Len(t, pod.Containers, 1)
	ctr := pod.Containers[0]
	assert.Equal(t, "ghcr.io/workmap/workmap-scheduler:latest", ctr.Image)
	assert.Equal(t, []string{"--config=/etc/workmap/config.yaml"}, ctr.Args)
	// The flag's file is the ConfigMap's key, mounted where the flag points.
	var mount *corev1.VolumeMount
	for i := range ctr.VolumeMounts {
		if strings.HasPrefix("/etc/workmap/config.yaml", ctr.VolumeMounts[i].MountPath+"/") {
			mount = &ctr.VolumeMounts[i]
		}
	}
	require.NotNil(t, mount, "/etc/workmap is mounted")
	var volume *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == mount.Name {
			volume = &pod.Volumes[i]
		}
	}
	require.NotNil(t, volume)
	require.NotNil(t, volume.ConfigMap)
	assert.Equal(t, cm.GetName(), volume.ConfigMap.Name, "the generated (hashed) ConfigMap")
	// Health checks on kube-scheduler's secure port.
	require.NotNil(t, ctr.LivenessProbe)
	require.NotNil(t, ctr.ReadinessProbe)
	for path, probe := range map[string]*corev1.Probe{"/livez": ctr.LivenessProbe, "/readyz": ctr.ReadinessProbe} {
		require.NotNil(t, probe.HTTPGet, path)
		assert.Equal(t, path, probe.HTTPGet.Path)
		assert.Equal(t, corev1.URISchemeHTTPS, probe.HTTPGet.Scheme)
		assert.Equal(t, "https", probe.HTTPGet.Port.String())
	}
	require.Len(t, ctr.Ports, 1)
	assert.Equal(t, int32(10259), ctr.Ports[0].ContainerPort)
	// Hardened: non-root, read-only root, no capabilities, the runtime's seccomp profile.
	require.NotNil(t, pod.SecurityContext)
	assert.Equal(t, true, *pod.SecurityContext.RunAsNonRoot)
	assert.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
	require.NotNil(t, ctr.SecurityContext)
	assert.Equal(t, true, *ctr.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, false, *ctr.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, ctr.SecurityContext.Capabilities.Drop)
	assert.NotEmpty(t, ctr.Resources.Requests)

	assert.Equal(t, []string{
		"ClusterRole/workmap-edit", "ClusterRole/workmap-scheduler", "ClusterRole/workmap-scheduler-workloads", "ClusterRole/workmap-view",
		"ClusterRoleBinding/workmap-scheduler", "ClusterRoleBinding/workmap-scheduler-kube-scheduler",
		"ClusterRoleBinding/workmap-scheduler-volume-scheduler", "ClusterRoleBinding/workmap-scheduler-workloads",
		"ConfigMap/" + cm.GetName(),
		"CustomResourceDefinition/podgroups.scheduling.x-k8s.io", "CustomResourceDefinition/workloaddefinitions.workmap.dev",
		"Deployment/workmap-scheduler", "Namespace/workmap-system",
		"Role/workmap-scheduler-leader-election",
		"RoleBinding/workmap-scheduler-extension-apiserver-authentication-reader", "RoleBinding/workmap-scheduler-leader-election",
		"ServiceAccount/workmap-scheduler",
	}, kindNames(objs))
}

// TestManifestsApplyDryRun: the API server accepts every object of the kustomization and of the
// Helm chart, with and without workmap serve and workmap-webhook (server-side apply, dryRun:
// All: admission and validation run, nothing is stored), and the scheduler's, serve's and the
// webhook's pods pass the namespace's restricted Pod Security level.
func TestManifestsApplyDryRun(t *testing.T) {
	objs := kustomize(t, ".")
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
	ctx := context.Background()
	a := newApplier(c)

	// Namespaced objects need their namespace to exist even in a dry run.
	ns := find(objs, schema.GroupKind{Kind: "Namespace"}, namespace)
	require.NotNil(t, ns)
	require.NoError(t, a.apply(ctx, ns, false))

	t.Run("kustomization", func(t *testing.T) {
		for _, o := range objs {
			assert.NoError(t, a.apply(ctx, o, true), "%s %s", o.GetKind(), o.GetName())
		}
	})

	t.Run("helm chart", func(t *testing.T) {
		for _, o := range helmTemplate(t, releaseName, namespace) {
			assert.NoError(t, a.apply(ctx, o, true), "%s %s", o.GetKind(), o.GetName())
		}
	})

	t.Run("with-serve", func(t *testing.T) {
		for _, o := range kustomize(t, "with-serve") {
			assert.NoError(t, a.apply(ctx, o, true), "%s %s", o.GetKind(), o.GetName())
		}
	})

	t.Run("helm chart serve.enabled", func(t *testing.T) {
		for _, o := range helmTemplate(t, releaseName, namespace, "--set", "serve.enabled=true") {
			assert.NoError(t, a.apply(ctx, o, true), "%s %s", o.GetKind(), o.GetName())
		}
	})

	// workmap-webhook (webhook_test.go): its objects are accepted as shipped, its pods need
	// not run for that. cert-manager's Issuer and Certificate are left out: the control plane
	// has no cert-manager CRDs (webhook_test.go checks what they say).
	webhookVariants := map[string]func(t *testing.T) []*unstructured.Unstructured{
		"with-webhook":         func(t *testing.T) []*unstructured.Unstructured { return kustomize(t, "with-webhook") },
		"webhook-cert-manager": func(t *testing.T) []*unstructured.Unstructured { return kustomize(t, "webhook-cert-manager") },
		"helm chart webhook.enabled": func(t *testing.T) []*unstructured.Unstructured {
			return helmTemplate(t, releaseName, namespace, "--set", "webhook.enabled=true")
		},
		"helm chart webhook.certManager.enabled": func(t *testing.T) []*unstructured.Unstructured {
			return helmTemplate(t, releaseName, namespace, "--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true")
		},
	}
	for name, render := range webhookVariants {
		t.Run(name, func(t *testing.T) {
			applied := 0
			for _, o := range render(t) {
				if o.GroupVersionKind().Group == "cert-manager.io" {
					continue
				}
				assert.NoError(t, a.apply(ctx, o, true), "%s %s", o.GetKind(), o.GetName())
				if o.GetKind() == "MutatingWebhookConfiguration" {
					applied++
				}
			}
			assert.Equal(t, 1, applied, "the MutatingWebhookConfiguration is among them")
		})
	}

	t.Run("webhook pod security", func(t *testing.T) {
		// workmap-webhook's pod, as for the scheduler's below, in both certificate modes.
		for _, dir := range []string{"with-webhook", "webhook-cert-manager"} {
			objs := kustomize(t, dir)
			require.NoError(t, a.apply(ctx, find(objs, schema.GroupKind{Kind: "ServiceAccount"}, webhookName), false))
			var d appsv1.Deployment
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(
				find(objs, schema.GroupKind{Group: "apps", Kind: "Deployment"}, webhookName).Object, &d))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "workmap-webhook-probe", Namespace: namespace, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
			_, err := c.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			require.NoError(t, err, "%s: workmap-webhook's pod is admitted in %s (pod-security.kubernetes.io/enforce: restricted)", dir, namespace)
		}
	})

	t.Run("serve pod security", func(t *testing.T) {
		// workmap serve's pod, as for the scheduler's below.
		serve := kustomize(t, "with-serve")
		require.NoError(t, a.apply(ctx, find(serve, schema.GroupKind{Kind: "ServiceAccount"}, serveName), false))
		var d appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(
			find(serve, schema.GroupKind{Group: "apps", Kind: "Deployment"}, serveName).Object, &d))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "workmap-serve-probe", Namespace: namespace, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
		_, err := c.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, "workmap serve's pod is admitted in %s (pod-security.kubernetes.io/enforce: restricted)", namespace)
	})

	t.Run("pod security", func(t *testing.T) {
		// The pod the Deployment would make, created in dry run (the ServiceAccount must exist
		// for that, so it is applied for real).
		require.NoError(t, a.apply(ctx, find(objs, schema.GroupKind{Kind: "ServiceAccount"}, "workmap-scheduler"), false))
		var d appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(
			find(objs, schema.GroupKind{Group: "apps", Kind: "Deployment"}, "workmap-scheduler").Object, &d))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "workmap-scheduler-probe", Namespace: namespace, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
		_, err := c.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, "the scheduler's pod is admitted in %s (pod-security.kubernetes.io/enforce: restricted)", namespace)

		// The check is real: a pod that may escalate is refused there.
		bad := pod.DeepCopy()
		bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		_, err = c.Kube.CoreV1().Pods(namespace).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "allowPrivilegeEscalation")
	})
}
