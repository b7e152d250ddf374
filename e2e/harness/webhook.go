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
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	if err := createOrReplace(c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations(), cfg); err != nil {
		c.t.Fatalf("registering mutating webhook configuration %s: %v", cfg.Name, err)
	}
}

// RegisterValidatingWebhook is RegisterWebhook for a validating webhook configuration.
func (c *Cluster) RegisterValidatingWebhook(cfg *admissionv1.ValidatingWebhookConfiguration, url string, caBundle []byte) {
	c.t.Helper()
	cfg = cfg.DeepCopy()
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	if err := createOrReplace(c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), cfg); err != nil {
		c.t.Fatalf("registering validating webhook configuration %s: %v", cfg.Name, err)
	}
}

// clusterObjects is the part of a typed client of cluster-scoped objects createOrReplace uses.
type clusterObjects[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrReplace creates obj, or replaces the object of its name.
func createOrReplace[T metav1.Object](api clusterObjects[T], obj T) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj.SetResourceVersion("")
	old, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		obj.SetResourceVersion(old.GetResourceVersion())
		_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
	}
	return err
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
