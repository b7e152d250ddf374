package harness

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegisterWebhook creates, or replaces, a mutating webhook configuration whose webhooks are
// all served at url (https, typically a process of the test's on 127.0.0.1) with a
// certificate signed by the CA in caBundle (PEM). Whatever client configuration cfg's
// webhooks had is replaced; cfg itself is left as it is. Operators' webhooks from manifest
// files are better served by PrepareWebhooks.
//
// kube-apiserver starts calling a new configuration a moment after it is stored: wait with
// WaitForPodWebhook (or a probe of your own) before relying on it.
func (c *Cluster) RegisterWebhook(cfg *admissionv1.MutatingWebhookConfiguration, url string, caBundle []byte) {
	c.t.Helper()
	cfg = cfg.DeepCopy()
	cfg.ResourceVersion = ""
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	old, err := api.Get(ctx, cfg.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, cfg, metav1.CreateOptions{})
	case err == nil:
		cfg.ResourceVersion = old.ResourceVersion
		_, err = api.Update(ctx, cfg, metav1.UpdateOptions{})
	}
	if err != nil {
		c.t.Fatalf("registering mutating webhook configuration %s: %v", cfg.Name, err)
	}
}

// WaitForPodWebhook dry-runs the creation of probe until mutated says the answer shows the
// webhook's work (a webhook is called on dry runs when its sideEffects are None or
// NoneOnDryRun), or ctx ends. Use it after RegisterWebhook so no pod slips past the webhook.
func (c *Cluster) WaitForPodWebhook(ctx context.Context, probe *corev1.Pod, mutated func(*corev1.Pod) bool) error {
	ns := probe.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	var last error
	err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		if err := c.checkProcesses(); err != nil {
			return false, err
		}
		got, err := c.Kube.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err
			return false, nil
		}
		last = nil
		return mutated(got), nil
	})
	if err != nil {
		return fmt.Errorf("pod webhook never mutated pod %s/%s: %w (last answer: %v)", ns, probe.Name, err, last)
	}
	return nil
}
