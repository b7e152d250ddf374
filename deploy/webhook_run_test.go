package deploy_test

// The shipped webhook RBAC is not only tight (webhook_rbac_test.go) but enough: the real
// workmap-webhook, run with the Deployment's flags as the shipped ServiceAccount (a token from
// the TokenRequest API), makes its certificate Secret, fills in the caBundle of the shipped
// Mutating- and ValidatingWebhookConfiguration, puts a Job's pods into a native PodGroup it
// makes, records the event on the pods of a Job created before it ran, and makes `kubectl
// apply` refuse a WorkloadDefinition that does not compile, on a control plane that serves
// native PodGroups, without a single "forbidden".

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/webhook"
)

// TestWebhookRunsWithShippedRBAC runs workmap-webhook as workmap-system/workmap-webhook with
// nothing but deploy/with-webhook's RBAC, registered with its MutatingWebhookConfiguration
// (served on loopback instead of through the Service), on each release's native gang API.
func TestWebhookRunsWithShippedRBAC(t *testing.T) {
	for _, r := range harness.Releases {
		t.Run("Kubernetes "+r.Version, func(t *testing.T) { testWebhookRunsWithShippedRBAC(t, r) })
	}
}

func testWebhookRunsWithShippedRBAC(t *testing.T, release harness.Release) {
	c := harness.Start(t, harness.Options{NoScheduler: true, NativeGangs: true, Release: release, Nodes: []harness.Node{}})
	binary := harness.WebhookBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	objs := kustomize(t, "with-webhook")
	a := newApplier(c)
	require.NoError(t, a.apply(ctx, readObjects(t, "scheduler/namespace.yaml")[0], false))
	for _, o := range webhookRBAC(objs) {
		require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
	}
	kubeconfig := serviceAccountKubeconfig(ctx, t, c, namespace, webhookName)

	// The shipped configuration, without a caBundle; only the address differs (the test's
	// loopback port in place of the Service).
	cfg := convert[admissionregistrationv1.MutatingWebhookConfiguration](t, find(objs, webhookCfgKind, webhookName))
	port := freePort(t)
	c.RegisterWebhook(cfg, fmt.Sprintf("https://127.0.0.1:%d/mutate-pods", port), nil)
	validating := convert[admissionregistrationv1.ValidatingWebhookConfiguration](t, find(objs, validatingKind, webhookName))
	c.RegisterValidatingWebhook(validating, fmt.Sprintf("https://127.0.0.1:%d/validate-workloaddefinitions", port), nil)

	// A Job's pods created before the webhook runs: the API server admits them unchanged.
	before := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
	_, err := c.Kube.BatchV1().Jobs("default").Create(ctx, before, metav1.CreateOptions{})
	require.NoError(t, err)
	var beforePods []corev1.Pod
	require.Eventually(t, func() bool {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=before"})
		beforePods = pods.Items
		return err == nil && len(pods.Items) == 2
	}, time.Minute, 200*time.Millisecond, "the Job's 2 pods, created while no webhook runs")

	// The Deployment's flags, on loopback, with the token's kubeconfig in place of the pod's
	// in-cluster configuration and the loopback address in the certificate.
	d := convert[appsv1.Deployment](t, find(objs, deploymentKind, webhookName))
	probePort := freePort(t)
	var args []string
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(arg, "--bind-address="):
			arg = fmt.Sprintf("--bind-address=127.0.0.1:%d", port)
		case strings.HasPrefix(arg, "--probe-address="):
			arg = fmt.Sprintf("--probe-address=127.0.0.1:%d", probePort)
		}
		args = append(args, arg)
	}
	args = append(args, "--kubeconfig="+kubeconfig, "--cert-ips=127.0.0.1", "-v=2")
	exited, logText := startComponent(t, "workmap-webhook", binary, args...)

	// The Deployment's probes: the probe port opens once caches and certificate are ready.
	client := &http.Client{Timeout: time.Second}
	probe := func(path string) bool {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", probePort, path))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	// Polled here rather than with require.Eventually, so that an exit or a refusal fails
	// the test at once (t.Fatal must run on the test's goroutine).
	for deadline := time.Now().Add(2 * time.Minute); !probe("/healthz") || !probe("/readyz"); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("workmap-webhook exited: %v", err)
		default:
		}
		// A refused list holds the webhook's start forever (its caches never fill): say so now.
		for _, line := range strings.Split(logText(), "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				t.Fatalf("the shipped RBAC refused workmap-webhook something before it served:\n%s", line)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/healthz and /readyz do not answer 200 within 2 minutes (the startup probe's budget)")
		}
	}
	assert.True(t, probe("/metrics"))

	// A second replica, as the Deployment runs two (its own ports, the same Secret): the
	// Lease elects one of them to report the pods created without their gang, so that each
	// gets one event, not one per replica.
	secondProbe := freePort(t)
	var second []string
	for _, arg := range args {
		switch {
		case strings.HasPrefix(arg, "--bind-address="):
			arg = fmt.Sprintf("--bind-address=127.0.0.1:%d", freePort(t))
		case strings.HasPrefix(arg, "--probe-address="):
			arg = fmt.Sprintf("--probe-address=127.0.0.1:%d", secondProbe)
		}
		second = append(second, arg)
	}
	_, secondLog := startComponent(t, "workmap-webhook-2", binary, second...)
	reporting := func(log func() string) bool {
		return strings.Contains(log(), "this replica reports the pods created without their gang")
	}
	require.Eventually(t, func() bool {
		standby := strings.Contains(secondLog(), "another replica reports the pods created without their gang") ||
			strings.Contains(logText(), "another replica reports the pods created without their gang")
		return standby && reporting(logText) != reporting(secondLog)
	}, 2*time.Minute, 200*time.Millisecond, "one replica reports, the other stands by")
	leaseNS, leaseName, _ := strings.Cut(webhookArgs(t, d.Spec.Template.Spec.Containers[0])["--report-lease"], "/")
	lease, err := c.Kube.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metav1.GetOptions{})
	require.NoError(t, err, "the replicas made the Lease --report-lease names")
	assert.NotEmpty(t, ptr.Deref(lease.Spec.HolderIdentity, ""))

	// Its certificate: the Secret --cert-secret names, and its CA in the caBundle.
	secretNS, secretName, _ := strings.Cut(webhookArgs(t, d.Spec.Template.Spec.Containers[0])["--cert-secret"], "/")
	secret, err := c.Kube.CoreV1().Secrets(secretNS).Get(ctx, secretName, metav1.GetOptions{})
	require.NoError(t, err, "the webhook made its Secret")
	assert.NotEmpty(t, secret.Data["ca-bundle.crt"])
	require.Eventually(t, func() bool {
		got, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
		return err == nil && string(got.Webhooks[0].ClientConfig.CABundle) == string(secret.Data["ca-bundle.crt"])
	}, time.Minute, 200*time.Millisecond, "the caBundle is the Secret's")
	require.Eventually(t, func() bool {
		got, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
		return err == nil && string(got.Webhooks[0].ClientConfig.CABundle) == string(secret.Data["ca-bundle.crt"])
	}, time.Minute, 200*time.Millisecond, "the validating configuration's caBundle is the Secret's")

	checkDefinitionsRefused(ctx, t, c)

	// A Job of 2 pods: each joins the native PodGroup the webhook makes for it. Indexed, so
	// that it can be scaled below.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "gang", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Suspend: ptr.To(true),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
	job, err = c.Kube.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	require.NoError(t, err)
	// Until the API server calls the webhook (a dry run makes no PodGroup).
	probePod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	require.NoError(t, c.WaitForPodWebhook(ctx, probePod, func(p *corev1.Pod) bool { return p.Spec.SchedulingGroup != nil }))
	_, err = c.Kube.BatchV1().Jobs("default").Patch(ctx, job.Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	var group string
	require.Eventually(t, func() bool {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=gang"})
		if err != nil || len(pods.Items) != 2 {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.SchedulingGroup == nil || ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "") == "" {
				return false
			}
			group = *p.Spec.SchedulingGroup.PodGroupName
		}
		return true
	}, time.Minute, 200*time.Millisecond, "the Job's 2 pods point at their native PodGroup")
	gvr, ok, err := webhook.ServedNativePodGroups(c.Kube.Discovery())
	require.NoError(t, err)
	require.True(t, ok, "the control plane serves native PodGroups")
	pg, err := c.Dynamic.Resource(gvr).Namespace("default").Get(ctx, group, metav1.GetOptions{})
	require.NoError(t, err, "the webhook made the PodGroup %s", group)
	minCount, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
	assert.Equal(t, int64(2), minCount)
	require.Len(t, pg.GetOwnerReferences(), 1)
	assert.Equal(t, job.UID, pg.GetOwnerReferences()[0].UID, "owned by the Job: garbage-collected with it")

	// Scaled to 3, where minCount may change (v1beta1) the PodGroup follows (a patch the
	// RBAC must allow); where it may not, it keeps 2.
	_, err = c.Kube.BatchV1().Jobs("default").Patch(ctx, job.Name, types.MergePatchType, []byte(`{"spec":{"parallelism":3,"completions":3}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	want := int64(2)
	if release.Native.MinCountMutable {
		want = 3
	}
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		pg, err := c.Dynamic.Resource(gvr).Namespace("default").Get(ctx, group, metav1.GetOptions{})
		require.NoError(t, err)
		minCount, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
		assert.Equal(t, want, minCount)
	}, time.Minute, 200*time.Millisecond, "the PodGroup's minCount after the Job was scaled to 3")

	// The pods created before it ran get their event (it may record events).
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		list, err := c.Kube.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		got := map[types.UID]int{}
		for _, e := range list.Items {
			if e.Reason == webhook.ReasonCreatedWithoutGang {
				got[e.Regarding.UID]++
			}
		}
		assert.Equal(t, map[types.UID]int{beforePods[0].UID: 1, beforePods[1].UID: 1}, got)
	}, time.Minute, 200*time.Millisecond, "a CreatedWithoutGang event on each pod created before the webhook ran, from one of the two replicas")

	// Nothing either replica tried was refused.
	for _, line := range strings.Split(logText()+secondLog(), "\n") {
		assert.NotContains(t, strings.ToLower(line), "forbidden", "the shipped RBAC refused workmap-webhook something")
	}
}

// checkDefinitionsRefused: `kubectl apply` of a WorkloadDefinition with a CEL typo fails with
// the webhook's refusal naming the field; a valid one is created, and changing it into the
// broken one is refused too, leaving it as it was.
func checkDefinitionsRefused(ctx context.Context, t *testing.T, c *harness.Cluster) {
	t.Helper()
	const valid = `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: widgets.example.com}
spec:
  workload: {group: example.com, kind: Widget, versions: [v1]}
  roles:
  - name: worker
    podTemplate: spec.template
    replicas: "self.spec.replicas"
`
	broken := strings.Replace(valid, `"self.spec.replicas"`, `"sise(self.spec.replicas)"`, 1)
	dir := t.TempDir()
	apply := func(manifest string) (string, error) {
		file := filepath.Join(dir, "definition.yaml")
		require.NoError(t, os.WriteFile(file, []byte(manifest), 0o600))
		cmd := exec.CommandContext(ctx, filepath.Join(harness.BinDir(t), "kubectl"), "--kubeconfig", c.AdminKubeconfig("kubectl"), "apply", "-f", file)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Until the API server calls the webhook: it is called a moment after it is registered.
	var out string
	var err error
	require.Eventually(t, func() bool {
		out, err = apply(broken)
		return err != nil
	}, time.Minute, 200*time.Millisecond, "kubectl apply of a definition that does not compile is refused (last output: %s)", out)
	assert.Equal(t, `The WorkloadDefinition "widgets.example.com" is invalid: spec.roles[0].replicas: Invalid value: "sise(self.spec.replicas)": undeclared reference to 'sise' (at column 5)`+"\n", out,
		"kubectl prints the refusal as it prints the API server's own validation: the field and what is wrong there")

	out, err = apply(valid)
	require.NoError(t, err, out)
	assert.Contains(t, out, "workloaddefinition.workmap.dev/widgets.example.com created")
	out, err = apply(broken)
	require.Error(t, err, "an update into a definition that does not compile is refused: %s", out)
	assert.Contains(t, out, `spec.roles[0].replicas`)
	wd, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "workmap.dev", Version: "v1alpha1", Resource: "workloaddefinitions"}).
		Get(ctx, "widgets.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	roles, _, _ := unstructured.NestedSlice(wd.Object, "spec", "roles")
	require.Len(t, roles, 1)
	replicas, _, _ := unstructured.NestedString(roles[0].(map[string]any), "replicas")
	assert.Equal(t, "self.spec.replicas", replicas, "the definition is as it was")
}
