package deploy_test

// Tests of workmap-webhook's deployment (webhook/, with-webhook/, webhook-cert-manager/ and
// the Helm chart's webhook.enabled): with-webhook is deploy/ plus the webhook; the
// MutatingWebhookConfiguration is the one the webhook is tested with (pod CREATE, Ignore, a
// short timeout, the system's and workmap's namespaces left out, no caBundle), the
// ValidatingWebhookConfiguration sends it WorkloadDefinition CREATE and UPDATE; the Deployment
// is hardened and its flags name the Secret, Service and configuration the manifests make and
// the RBAC grants; the cert-manager variant swaps the self-managed certificate's flags and
// grants for cert-manager's Certificate.

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const webhookName = "workmap-webhook"

// The webhook's objects' kinds.
var (
	deploymentKind   = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	serviceKind      = schema.GroupKind{Kind: "Service"}
	webhookCfgKind   = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "MutatingWebhookConfiguration"}
	validatingKind   = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "ValidatingWebhookConfiguration"}
	roleKind         = schema.GroupKind{Group: rbacv1.GroupName, Kind: "Role"}
	clusterRoleKind  = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}
	certificateKind  = schema.GroupKind{Group: "cert-manager.io", Kind: "Certificate"}
	issuerKind       = schema.GroupKind{Group: "cert-manager.io", Kind: "Issuer"}
	webhookCertsRBAC = []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
)

// webhookComponentFiles are deploy/webhook's manifests.
var webhookComponentFiles = []string{
	"webhook/service_account.yaml", "webhook/cluster_role.yaml", "webhook/cluster_role_binding.yaml",
	"webhook/certificates.yaml", "webhook/report_lease.yaml", "webhook/deployment.yaml", "webhook/service.yaml",
	"webhook/mutating_webhook_configuration.yaml", "webhook/validating_webhook_configuration.yaml",
}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	require.NotNil(t, u)
	var out T
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out))
	return &out
}

// webhookArgs are the flags of the webhook's container as name → value.
func webhookArgs(t *testing.T, ctr corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range ctr.Args {
		name, value, ok := strings.Cut(a, "=")
		require.True(t, ok && strings.HasPrefix(name, "--"), "flags are --name=value: %q", a)
		require.NotContains(t, out, name, "%s twice", name)
		out[name] = value
	}
	return out
}

// checkWebhookObjects checks the webhook's Deployment, Service and MutatingWebhookConfiguration
// among rendered objects (named name, in ns), and that the Deployment's flags name what the
// other objects are; certManager says which certificate mode is rendered.
func checkWebhookObjects(t *testing.T, objs []*unstructured.Unstructured, ns, name string, certManager bool) {
	t.Helper()
	d := convert[appsv1.Deployment](t, find(objs, deploymentKind, name))
	assert.Equal(t, ns, d.Namespace)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas, "two replicas: pods stay grouped through a rollout")
	pod := d.Spec.Template.Spec
	assert.Equal(t, name, pod.ServiceAccountName)
	assert.NotNil(t, find(objs, schema.GroupKind{Kind: "ServiceAccount"}, name), "runs as the ServiceAccount the RBAC binds")
	require.Len(t, pod.Containers, 1)
	ctr := pod.Containers[0]
	assert.Equal(t, "ghcr.io/workmap/workmap-webhook:latest", ctr.Image)
	assert.Equal(t, corev1.PullIfNotPresent, ctr.ImagePullPolicy)
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, map[string]int32{"https": 9443, "probes": 8081}, ports)
	for probeName, want := range map[string]struct {
		probe *corev1.Probe
		path  string
	}{"startup": {ctr.StartupProbe, "/healthz"}, "liveness": {ctr.LivenessProbe, "/healthz"}, "readiness": {ctr.ReadinessProbe, "/readyz"}} {
		require.NotNil(t, want.probe, probeName)
		require.NotNil(t, want.probe.HTTPGet, probeName)
		assert.Equal(t, want.path, want.probe.HTTPGet.Path, probeName)
		assert.Equal(t, "probes", want.probe.HTTPGet.Port.String(), probeName)
	}
	// The probe port opens only after the caches and certificate (up to two minutes for it).
	assert.GreaterOrEqual(t, ctr.StartupProbe.PeriodSeconds*ctr.StartupProbe.FailureThreshold, int32(150))
	// Hardened as the scheduler is.
	require.NotNil(t, pod.SecurityContext)
	assert.Equal(t, true, *pod.SecurityContext.RunAsNonRoot)
	assert.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
	require.NotNil(t, ctr.SecurityContext)
	assert.Equal(t, true, *ctr.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, false, *ctr.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, ctr.SecurityContext.Capabilities.Drop)
	assert.Empty(t, ctr.SecurityContext.Capabilities.Add)
	assert.NotEmpty(t, ctr.Resources.Requests)

	args := webhookArgs(t, ctr)
	assert.Equal(t, ":9443", args["--bind-address"])
	assert.Equal(t, ":8081", args["--probe-address"])
	assert.Equal(t, "workmap-scheduler", args["--workmap-schedulers"])
	assert.Equal(t, "default-scheduler", args["--native-schedulers"])

	// The Service sends 443 to the pods' https port, and selects only this Deployment's pods.
	svc := convert[corev1.Service](t, find(objs, serviceKind, name))
	assert.Equal(t, ns, svc.Namespace)
	assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(443), svc.Spec.Ports[0].Port)
	assert.Equal(t, "https", svc.Spec.Ports[0].TargetPort.String())
	assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)), "the Service selects the pods")
	assert.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector, "and only them")

	cfg := convert[admissionregistrationv1.MutatingWebhookConfiguration](t, find(objs, webhookCfgKind, name))
	checkWebhookConfiguration(t, cfg, ns, svc.Name)
	validating := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, find(objs, validatingKind, name))
	checkValidatingConfiguration(t, validating, ns, svc.Name)

	if certManager {
		checkCertManager(t, objs, ns, name, d, args)
		return
	}
	// Self-managed: the flags name this Service, this configuration and the Secret the Role
	// grants, and no certificate directory.
	assert.NotContains(t, args, "--cert-dir")
	assert.Equal(t, svc.Name, args["--service"])
	assert.Equal(t, cfg.Name, args["--webhook-configuration"])
	assert.Equal(t, validating.Name, args["--validating-webhook-configuration"])
	secretNS, secretName, ok := strings.Cut(args["--cert-secret"], "/")
	require.True(t, ok, "--cert-secret=NAMESPACE/NAME")
	assert.Equal(t, ns, secretNS, "the Secret is in the webhook's namespace, where the Service is (--service names a Service there)")
	role := convert[rbacv1.Role](t, find(objs, roleKind, name+"-certs"))
	assert.Equal(t, ns, role.Namespace)
	assert.True(t, slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Equal(r.ResourceNames, []string{secretName}) }),
		"the Role grants the Secret --cert-secret names")
	cr := convert[rbacv1.ClusterRole](t, find(objs, clusterRoleKind, name+"-certs"))
	require.Len(t, cr.Rules, 1)
	assert.Equal(t, []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, cr.Rules[0].Resources)
	assert.Equal(t, []string{cfg.Name}, cr.Rules[0].ResourceNames, "the ClusterRole grants the configurations --webhook-configuration and --validating-webhook-configuration name")
	assert.Equal(t, cfg.Name, validating.Name, "one name, granted for both kinds")
	assert.Empty(t, pod.Volumes, "the certificate is kept in the Secret and in memory")
	assert.Empty(t, cfg.Annotations["cert-manager.io/inject-ca-from"])
	assert.Empty(t, validating.Annotations["cert-manager.io/inject-ca-from"])
	assert.Nil(t, find(objs, certificateKind, name))
}

// checkValidatingConfiguration: WorkloadDefinition CREATE and UPDATE go to service in ns at
// /validate-workloaddefinitions; a webhook that is down lets definitions through (the scheduler
// keeps the last valid generation of one that does not compile).
func checkValidatingConfiguration(t *testing.T, cfg *admissionregistrationv1.ValidatingWebhookConfiguration, ns, service string) {
	t.Helper()
	require.Len(t, cfg.Webhooks, 1)
	wh := cfg.Webhooks[0]
	assert.Equal(t, "workloaddefinitions.workmap.dev", wh.Name)
	assert.Equal(t, []string{"v1"}, wh.AdmissionReviewVersions)
	require.NotNil(t, wh.ClientConfig.Service, "called through the Service")
	assert.Equal(t, admissionregistrationv1.ServiceReference{Namespace: ns, Name: service, Path: ptrTo("/validate-workloaddefinitions"), Port: ptrTo[int32](443)}, *wh.ClientConfig.Service)
	assert.Empty(t, wh.ClientConfig.CABundle, "the webhook (or cert-manager) fills the caBundle in")
	require.Len(t, wh.Rules, 1)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, wh.Rules[0].Operations)
	assert.Equal(t, []string{"workmap.dev"}, wh.Rules[0].APIGroups)
	assert.Equal(t, []string{"v1alpha1"}, wh.Rules[0].APIVersions)
	assert.Equal(t, []string{"workloaddefinitions"}, wh.Rules[0].Resources, "no status: the scheduler's writes are not checked")
	require.NotNil(t, wh.Rules[0].Scope)
	assert.Equal(t, admissionregistrationv1.ClusterScope, *wh.Rules[0].Scope)
	require.NotNil(t, wh.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Ignore, *wh.FailurePolicy)
	require.NotNil(t, wh.SideEffects)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *wh.SideEffects, "called on dry runs too")
	require.NotNil(t, wh.TimeoutSeconds)
	assert.LessOrEqual(t, *wh.TimeoutSeconds, int32(10))
}

// checkWebhookConfiguration: the shape the webhook is tested with (webhook/native_e2e_test.go),
// calling service in ns at /mutate-pods.
func checkWebhookConfiguration(t *testing.T, cfg *admissionregistrationv1.MutatingWebhookConfiguration, ns, service string) {
	t.Helper()
	require.Len(t, cfg.Webhooks, 1)
	wh := cfg.Webhooks[0]
	assert.Equal(t, "pods.workmap.dev", wh.Name)
	assert.Equal(t, []string{"v1"}, wh.AdmissionReviewVersions)
	require.NotNil(t, wh.ClientConfig.Service, "called through the Service")
	assert.Nil(t, wh.ClientConfig.URL)
	assert.Equal(t, admissionregistrationv1.ServiceReference{Namespace: ns, Name: service, Path: ptrTo("/mutate-pods"), Port: ptrTo[int32](443)}, *wh.ClientConfig.Service)
	assert.Empty(t, wh.ClientConfig.CABundle, "the webhook (or cert-manager) fills the caBundle in")
	require.Len(t, wh.Rules, 1)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, wh.Rules[0].Operations, "pod CREATE only")
	assert.Equal(t, []string{""}, wh.Rules[0].APIGroups)
	assert.Equal(t, []string{"v1"}, wh.Rules[0].APIVersions)
	assert.Equal(t, []string{"pods"}, wh.Rules[0].Resources, "pods, no subresources")
	require.NotNil(t, wh.Rules[0].Scope)
	assert.Equal(t, admissionregistrationv1.NamespacedScope, *wh.Rules[0].Scope)
	require.NotNil(t, wh.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Ignore, *wh.FailurePolicy, "a webhook that is down must not stop pod creation")
	require.NotNil(t, wh.SideEffects)
	assert.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, *wh.SideEffects)
	require.NotNil(t, wh.TimeoutSeconds)
	assert.Equal(t, int32(5), *wh.TimeoutSeconds)
	assert.LessOrEqual(t, *wh.TimeoutSeconds, int32(10), "a slow webhook holds every pod creation that long")
	require.NotNil(t, wh.ReinvocationPolicy)
	assert.Equal(t, admissionregistrationv1.NeverReinvocationPolicy, *wh.ReinvocationPolicy)
	assert.Nil(t, wh.ObjectSelector)
	require.NotNil(t, wh.NamespaceSelector)
	assert.Empty(t, wh.NamespaceSelector.MatchLabels)
	assert.Equal(t, []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", ns},
	}}, wh.NamespaceSelector.MatchExpressions, "the system's and the webhook's own namespace are left out")
	sel, err := metav1.LabelSelectorAsSelector(wh.NamespaceSelector)
	require.NoError(t, err)
	for namespace, called := range map[string]bool{"default": true, "ml": true, "kube-system": false, ns: false} {
		assert.Equal(t, called, sel.Matches(labels.Set{"kubernetes.io/metadata.name": namespace}), "namespace %s", namespace)
	}
}

// checkCertManager: the Deployment reads cert-manager's Certificate for the Service from
// /certs, the cainjector fills the caBundle from it, and the self-managed certificate's
// flags and grants are gone.
func checkCertManager(t *testing.T, objs []*unstructured.Unstructured, ns, name string, d *appsv1.Deployment, args map[string]string) {
	t.Helper()
	assert.Equal(t, "/certs", args["--cert-dir"])
	for _, flag := range []string{"--cert-secret", "--service", "--webhook-configuration", "--validating-webhook-configuration"} {
		assert.NotContains(t, args, flag, "self-managed mode only")
	}
	for _, kind := range webhookCertsRBAC {
		assert.Nil(t, find(objs, schema.GroupKind{Group: rbacv1.GroupName, Kind: kind}, name+"-certs"), "no %s for the self-managed certificate", kind)
	}
	u := find(objs, certificateKind, name)
	require.NotNil(t, u, "the Certificate %s", name)
	assert.Equal(t, ns, u.GetNamespace())
	secretName, _, _ := unstructured.NestedString(u.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
	assert.Equal(t, []string{name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"}, dnsNames, "the Service's names")
	issuer, _, _ := unstructured.NestedStringMap(u.Object, "spec", "issuerRef")
	assert.Equal(t, map[string]string{"kind": "Issuer", "name": name + "-selfsigned"}, issuer)
	iu := find(objs, issuerKind, issuer["name"])
	require.NotNil(t, iu, "the Issuer the Certificate names")
	assert.Equal(t, ns, iu.GetNamespace())
	selfSigned, found, _ := unstructured.NestedMap(iu.Object, "spec", "selfSigned")
	assert.True(t, found)
	assert.Empty(t, selfSigned)

	for _, kind := range []schema.GroupKind{webhookCfgKind, validatingKind} {
		cfg := find(objs, kind, name)
		assert.Equal(t, ns+"/"+name, cfg.GetAnnotations()["cert-manager.io/inject-ca-from"], "the cainjector fills the %s's caBundle from the Certificate", kind.Kind)
	}

	pod := d.Spec.Template.Spec
	require.Len(t, pod.Volumes, 1)
	require.NotNil(t, pod.Volumes[0].Secret)
	assert.Equal(t, secretName, pod.Volumes[0].Secret.SecretName, "the Certificate's Secret is mounted")
	assert.Equal(t, []corev1.VolumeMount{{Name: pod.Volumes[0].Name, MountPath: "/certs", ReadOnly: true}}, pod.Containers[0].VolumeMounts)
}

func ptrTo[T any](v T) *T { return &v }

// helmRenders reports whether the chart renders with these values (helmTemplate fails the test
// when it does not).
func helmRenders(t *testing.T, release, ns string, args ...string) bool {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", release, chartDir, "--namespace", ns}, args...)...)
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("helm template refused: %s", bytes.TrimSpace(out))
	}
	return err == nil
}

// TestWebhookKustomization: `kubectl kustomize deploy/with-webhook` is everything deploy/
// renders, unchanged, plus the webhook component's objects, exactly as its files have them,
// labelled as the scheduler's are; they and the chart's with webhook.enabled=true (as this
// release and another) are wired to each other.
func TestWebhookKustomization(t *testing.T) {
	base := kustomize(t, ".")
	objs := kustomize(t, "with-webhook")
	for _, o := range base {
		got := find(objs, o.GroupVersionKind().GroupKind(), o.GetName())
		if assert.NotNil(t, got, "with-webhook installs deploy/'s %s %s", o.GetKind(), o.GetName()) {
			assert.Equal(t, o.Object, got.Object, "%s %s as deploy/ renders it", o.GetKind(), o.GetName())
		}
	}
	var added []string
	for _, o := range objs {
		if find(base, o.GroupVersionKind().GroupKind(), o.GetName()) != nil {
			continue
		}
		added = append(added, o.GetKind()+"/"+o.GetName())
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": webhookName, "app.kubernetes.io/part-of": "workmap"}, o.GetLabels(), "%s %s", o.GetKind(), o.GetName())
	}
	assert.ElementsMatch(t, []string{
		"ServiceAccount/workmap-webhook", "ClusterRole/workmap-webhook", "ClusterRoleBinding/workmap-webhook",
		"ClusterRoleBinding/workmap-webhook-workloads",
		"ClusterRole/workmap-webhook-certs", "ClusterRoleBinding/workmap-webhook-certs", "Role/workmap-webhook-certs", "RoleBinding/workmap-webhook-certs",
		"Role/workmap-webhook-report", "RoleBinding/workmap-webhook-report",
		"Deployment/workmap-webhook", "Service/workmap-webhook", "MutatingWebhookConfiguration/workmap-webhook",
		"ValidatingWebhookConfiguration/workmap-webhook",
	}, added)
	files := readObjects(t, webhookComponentFiles...)
	assert.Len(t, files, len(added), "the component renders its files and nothing else")
	for _, o := range files {
		got := find(objs, o.GroupVersionKind().GroupKind(), o.GetName())
		if assert.NotNil(t, got, "%s %s", o.GetKind(), o.GetName()) {
			assert.Equal(t, o.Object, got.Object)
		}
	}
	// The owner kinds are the scheduler's, not a copy of them.
	b := convert[rbacv1.ClusterRoleBinding](t, find(objs, schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}, "workmap-webhook-workloads"))
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "workmap-scheduler-workloads"}, b.RoleRef)
	assert.NotNil(t, find(objs, clusterRoleKind, b.RoleRef.Name))

	tests := map[string]struct {
		objs     []*unstructured.Unstructured
		ns, name string
	}{
		"kustomize with-webhook": {objs: objs, ns: namespace, name: webhookName},
		"helm webhook.enabled":   {objs: helmTemplate(t, releaseName, namespace, "--set", "webhook.enabled=true"), ns: namespace, name: webhookName},
		"helm another release":   {objs: helmTemplate(t, "team-workmap-scheduler", "team", "--set", "webhook.enabled=true"), ns: "team", name: "team-workmap-webhook"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { checkWebhookObjects(t, tc.objs, tc.ns, tc.name, false) })
	}
	t.Run("helm default", func(t *testing.T) {
		for _, o := range helmTemplate(t, releaseName, namespace) {
			assert.NotEqual(t, webhookName, o.GetLabels()["app.kubernetes.io/name"], "the webhook is off by default: %s %s", o.GetKind(), o.GetName())
			assert.NotContains(t, o.GetName(), "-webhook", "the webhook is off by default: %s %s", o.GetKind(), o.GetName())
		}
	})
}

// TestWebhookCertManager: deploy/webhook-cert-manager is with-webhook without the
// self-managed certificate's four grants, plus cert-manager's Issuer and Certificate, with the
// Deployment and configuration changed only where cert-manager needs it; the chart with
// webhook.certManager.enabled=true renders the same (annotations included).
func TestWebhookCertManager(t *testing.T) {
	plain := kustomize(t, "with-webhook")
	objs := kustomize(t, "webhook-cert-manager")
	var removed, added []string
	for _, o := range plain {
		if find(objs, o.GroupVersionKind().GroupKind(), o.GetName()) == nil {
			removed = append(removed, o.GetKind()+"/"+o.GetName())
		}
	}
	for _, o := range objs {
		if find(plain, o.GroupVersionKind().GroupKind(), o.GetName()) == nil {
			added = append(added, o.GetKind()+"/"+o.GetName())
		}
	}
	var certsRBAC []string
	for _, kind := range webhookCertsRBAC {
		certsRBAC = append(certsRBAC, kind+"/workmap-webhook-certs")
	}
	assert.ElementsMatch(t, certsRBAC, removed)
	assert.ElementsMatch(t, []string{"Issuer/workmap-webhook-selfsigned", "Certificate/workmap-webhook"}, added)
	for _, o := range objs {
		p := find(plain, o.GroupVersionKind().GroupKind(), o.GetName())
		if p == nil || o.GetKind() == "Deployment" || strings.HasSuffix(o.GetKind(), "WebhookConfiguration") {
			continue
		}
		assert.Equal(t, p.Object, o.Object, "%s %s is with-webhook's", o.GetKind(), o.GetName())
	}
	// The Deployment differs in its flags and the mounted Secret; the configuration in the
	// cainjector's annotation.
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		if strings.HasSuffix(c.GetKind(), "WebhookConfiguration") {
			c.SetAnnotations(nil)
			return c.Object
		}
		containers, _, _ := unstructured.NestedSlice(c.Object, "spec", "template", "spec", "containers")
		ctr := containers[0].(map[string]any)
		delete(ctr, "volumeMounts")
		var args []any
		for _, a := range ctr["args"].([]any) {
			flag, _, _ := strings.Cut(a.(string), "=")
			if !slices.Contains([]string{"--cert-dir", "--cert-secret", "--service", "--webhook-configuration", "--validating-webhook-configuration"}, flag) {
				args = append(args, a)
			}
		}
		ctr["args"] = args
		require.NoError(t, unstructured.SetNestedSlice(c.Object, containers, "spec", "template", "spec", "containers"))
		unstructured.RemoveNestedField(c.Object, "spec", "template", "spec", "volumes")
		return c.Object
	}
	for _, gk := range []schema.GroupKind{deploymentKind, webhookCfgKind, validatingKind} {
		assert.Equal(t, strip(find(plain, gk, webhookName)), strip(find(objs, gk, webhookName)), "%s differs only where cert-manager needs it", gk.Kind)
	}

	tests := map[string]struct {
		objs     []*unstructured.Unstructured
		ns, name string
	}{
		"kustomize webhook-cert-manager": {objs: objs, ns: namespace, name: webhookName},
		"helm webhook.certManager.enabled": {objs: helmTemplate(t, releaseName, namespace,
			"--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true"), ns: namespace, name: webhookName},
		"helm another release": {objs: helmTemplate(t, "team-workmap-scheduler", "team",
			"--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true"), ns: "team", name: "team-workmap-webhook"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { checkWebhookObjects(t, tc.objs, tc.ns, tc.name, true) })
	}
}

// TestHelmWebhookValues: the chart's webhook values change what they say and only that.
func TestHelmWebhookValues(t *testing.T) {
	render := func(t *testing.T, values ...string) []*unstructured.Unstructured {
		return helmTemplate(t, releaseName, namespace, append([]string{"--set", "webhook.enabled=true"}, values...)...)
	}
	webhookOf := func(t *testing.T, objs []*unstructured.Unstructured) admissionregistrationv1.MutatingWebhook {
		cfg := convert[admissionregistrationv1.MutatingWebhookConfiguration](t, find(objs, webhookCfgKind, webhookName))
		require.Len(t, cfg.Webhooks, 1)
		return cfg.Webhooks[0]
	}
	argsOf := func(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
		d := convert[appsv1.Deployment](t, find(objs, deploymentKind, webhookName))
		return webhookArgs(t, d.Spec.Template.Spec.Containers[0])
	}

	t.Run("failurePolicy and timeoutSeconds", func(t *testing.T) {
		wh := webhookOf(t, render(t, "--set", "webhook.failurePolicy=Fail", "--set", "webhook.timeoutSeconds=8"))
		assert.Equal(t, admissionregistrationv1.Fail, *wh.FailurePolicy)
		assert.Equal(t, int32(8), *wh.TimeoutSeconds)
		v := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, find(render(t, "--set", "webhook.failurePolicy=Fail", "--set", "webhook.timeoutSeconds=8"), validatingKind, webhookName))
		assert.Equal(t, int32(8), *v.Webhooks[0].TimeoutSeconds)
		assert.Equal(t, admissionregistrationv1.Ignore, *v.Webhooks[0].FailurePolicy, "definitions keep their last valid generation when the webhook is down")
	})
	t.Run("excluded namespaces keep the release's", func(t *testing.T) {
		wh := webhookOf(t, render(t, "--set-json", `webhook.namespaceSelector.excludedNamespaces=["kube-system","ml"]`))
		assert.Equal(t, []string{"kube-system", "ml", namespace}, wh.NamespaceSelector.MatchExpressions[0].Values)
	})
	t.Run("schedulers", func(t *testing.T) {
		args := argsOf(t, render(t, "--set", "schedulerName=gangs"))
		assert.Equal(t, "gangs", args["--workmap-schedulers"], "the chart's scheduler by default")
		args = argsOf(t, render(t, "--set-json", `webhook.workmapSchedulers=["a","b"]`, "--set-json", `webhook.nativeSchedulers=["default-scheduler","c"]`))
		assert.Equal(t, "a,b", args["--workmap-schedulers"])
		assert.Equal(t, "default-scheduler,c", args["--native-schedulers"])
	})
	t.Run("replicas", func(t *testing.T) {
		d := convert[appsv1.Deployment](t, find(render(t, "--set", "webhook.replicas=3"), deploymentKind, webhookName))
		assert.Equal(t, int32(3), *d.Spec.Replicas)
	})
	t.Run("cert-manager issuer of one's own", func(t *testing.T) {
		objs := render(t, "--set", "webhook.certManager.enabled=true",
			"--set", "webhook.certManager.issuerRef.kind=ClusterIssuer", "--set", "webhook.certManager.issuerRef.name=corp-ca")
		assert.Nil(t, find(objs, issuerKind, webhookName+"-selfsigned"), "no Issuer of the chart's")
		issuer, _, _ := unstructured.NestedStringMap(find(objs, certificateKind, webhookName).Object, "spec", "issuerRef")
		assert.Equal(t, map[string]string{"kind": "ClusterIssuer", "name": "corp-ca"}, issuer)
	})

	// Values the chart refuses.
	refused := map[string][]string{
		"an unknown failurePolicy":           {"--set", "webhook.failurePolicy=Sometimes"},
		"a timeout the API server refuses":   {"--set", "webhook.timeoutSeconds=31"},
		"a timeout below the decision's":     {"--set", "webhook.timeoutSeconds=1"},
		"Fail without kube-system left out":  {"--set", "webhook.failurePolicy=Fail", "--set-json", `webhook.namespaceSelector.excludedNamespaces=["ml"]`},
		"a scheduler name with a comma":      {"--set-json", `webhook.nativeSchedulers=["a,b"]`},
		"a namespace that cannot be a label": {"--set-json", `webhook.namespaceSelector.excludedNamespaces=["Kube System"]`},
	}
	for name, values := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			assert.False(t, helmRenders(t, releaseName, namespace, append([]string{"--set", "webhook.enabled=true"}, values...)...))
		})
	}
}

// TestHelmWebhookLabels: the chart labels the webhook's objects as its own app, part of
// workmap.
func TestHelmWebhookLabels(t *testing.T) {
	for _, o := range helmTemplate(t, releaseName, namespace, "--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true") {
		if !strings.HasPrefix(o.GetName(), webhookName) {
			continue
		}
		l := o.GetLabels()
		assert.Equal(t, webhookName, l["app.kubernetes.io/name"], "%s %s", o.GetKind(), o.GetName())
		assert.Equal(t, "workmap", l["app.kubernetes.io/part-of"], "%s %s", o.GetKind(), o.GetName())
		assert.Equal(t, "Helm", l["app.kubernetes.io/managed-by"], "%s %s", o.GetKind(), o.GetName())
	}
}
