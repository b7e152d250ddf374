package harness

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// WebhookOptions say how to run workmap-webhook against the cluster.
type WebhookOptions struct {
	// Binary is the workmap-webhook binary (WebhookBinary: the prebuilt one or one built for the test).
	Binary string
	// Configuration is registered for it (without a caBundle: workmap-webhook fills it in
	// from its own certificate); default WebhookConfiguration().
	Configuration *admissionv1.MutatingWebhookConfiguration
	// Args are extra flags (--native-schedulers, --kube-api-qps, ...).
	Args []string
}

// WorkmapWebhook is a workmap-webhook process serving the cluster on loopback, which a test
// can stop and start again on the same port.
type WorkmapWebhook struct {
	c            *Cluster
	o            WebhookOptions
	port, probes int
	p            *process
	starts       int
}

// WebhookConfiguration is workmap-webhook's configuration as deploy/webhook ships it: pod
// CREATE, Ignore on failure, workmap's and the system's namespaces left out. Its client
// configuration is filled in by StartWorkmapWebhook.
func WebhookConfiguration() *admissionv1.MutatingWebhookConfiguration {
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "workmap-webhook"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "pods.workmap.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionv1.SideEffectClassNoneOnDryRun),
			FailurePolicy:           ptr.To(admissionv1.Ignore),
			TimeoutSeconds:          ptr.To[int32](5),
			ReinvocationPolicy:      ptr.To(admissionv1.NeverReinvocationPolicy),
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionv1.NamespacedScope)},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "workmap-system"},
			}}},
		}},
	}
}

// DefinitionsWebhookConfiguration is workmap-webhook's validating configuration as
// deploy/webhook ships it: WorkloadDefinition CREATE and UPDATE, Ignore on failure. Its client
// configuration is filled in by StartWorkmapWebhook.
func DefinitionsWebhookConfiguration() *admissionv1.ValidatingWebhookConfiguration {
	return &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "workmap-webhook"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "workloaddefinitions.workmap.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionv1.Ignore),
			TimeoutSeconds:          ptr.To[int32](5),
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{"workmap.dev"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"workloaddefinitions"}, Scope: ptr.To(admissionv1.ClusterScope)},
			}},
		}},
	}
}

// StartWorkmapWebhook registers the webhook's configurations (the pods' and, as
// DefinitionsWebhookConfiguration, the WorkloadDefinitions') and starts it. It keeps its own
// certificate in the Secret default/workmap-webhook-certs and puts its CA into the
// configuration; wait for it with WaitForPodWebhook before relying on it.
func (c *Cluster) StartWorkmapWebhook(o WebhookOptions) *WorkmapWebhook {
	c.t.Helper()
	if o.Configuration == nil {
		o.Configuration = WebhookConfiguration()
	}
	w := &WorkmapWebhook{c: c, o: o}
	var err error
	if w.port, err = freePort(); err != nil {
		c.t.Fatal(err)
	}
	if w.probes, err = freePort(); err != nil {
		c.t.Fatal(err)
	}
	c.RegisterWebhook(o.Configuration, fmt.Sprintf("https://%s/mutate-pods", hostPort(w.port)), nil)
	c.RegisterValidatingWebhook(DefinitionsWebhookConfiguration(), fmt.Sprintf("https://%s/validate-workloaddefinitions", hostPort(w.port)), nil)
	w.Start()
	c.t.Cleanup(w.Stop)
	return w
}

// Start starts the webhook again after Stop (a no-op while it runs).
func (w *WorkmapWebhook) Start() {
	w.c.t.Helper()
	if w.p != nil {
		return
	}
	w.starts++
	args := append([]string{
		"--kubeconfig", w.c.kubeconfig("workmap-webhook"),
		"--bind-address", hostPort(w.port), "--probe-address", hostPort(w.probes),
		"--cert-secret", "default/workmap-webhook-certs", "--service", "workmap-webhook", "--cert-ips", "127.0.0.1",
		"--report-lease", "default/workmap-webhook-report",
		"--webhook-configuration", w.o.Configuration.Name, "--validating-webhook-configuration", DefinitionsWebhookConfiguration().Name, "-v", "4",
	}, w.o.Args...)
	// Each start logs to a file of its own (workmap-webhook.log, then workmap-webhook-2.log).
	name := "workmap-webhook"
	if w.starts > 1 {
		name += "-" + strconv.Itoa(w.starts)
	}
	p, err := startProcess(name, w.o.Binary, w.c.Dir, "", []string{"HOME=" + w.c.Dir}, args...)
	if err != nil {
		w.c.t.Fatal(err)
	}
	w.p = p
}

// Stop stops the webhook: the API server then admits pods as they come (failurePolicy
// Ignore).
func (w *WorkmapWebhook) Stop() {
	if w.p != nil {
		w.p.stop(10 * time.Second)
		w.p = nil
	}
}

// LogPath is the log of the running (or last) process.
func (w *WorkmapWebhook) LogPath() string {
	if w.p == nil {
		return filepath.Join(w.c.Dir, "workmap-webhook.log")
	}
	return w.p.logPath
}

// HeapProfile reads the webhook's heap profile (started with --profiling), after a garbage
// collection, in pprof's format.
func (w *WorkmapWebhook) HeapProfile(ctx context.Context) ([]byte, error) {
	return heapProfile(ctx, w.probesURL())
}

// Goroutines reads the webhook's goroutines, grouped by stack, as text (with --profiling).
func (w *WorkmapWebhook) Goroutines(ctx context.Context) ([]byte, error) {
	return goroutines(ctx, w.probesURL())
}

// probesURL is the base URL of the webhook's probe address (plain HTTP on loopback).
func (w *WorkmapWebhook) probesURL() string { return "http://" + hostPort(w.probes) }

// Metrics reads the webhook's /metrics, by metric family name.
func (w *WorkmapWebhook) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	return scrapeMetrics(ctx, w.probesURL())
}

// WaitReady waits until the webhook answers /readyz, or ctx ends.
func (w *WorkmapWebhook) WaitReady(ctx context.Context) error {
	url := w.probesURL() + "/readyz"
	return poll(ctx, 100*time.Millisecond, func() (bool, error) {
		if w.p == nil {
			return false, fmt.Errorf("workmap-webhook is stopped")
		}
		if done, err := w.p.exited(); done {
			return false, fmt.Errorf("workmap-webhook exited (%v, log %s)", err, w.p.logPath)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
