package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
)

// webhookProbeNamespace holds the suspended Job whose pod the bench dry-runs until
// workmap-webhook answers.
const webhookProbeNamespace = "bench-webhook"

// startWebhook starts workmap-webhook for the whole throughput step, registered for the
// namespaces of D's and E's runs only, and waits until the API server calls it.
func startWebhook(ctx context.Context, c config, cl *harness.Cluster) error {
	step("workmap-webhook for D and E (namespaces labelled %s)", bench.WebhookNamespaceLabel)
	cfg := harness.WebhookConfiguration()
	cfg.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{bench.WebhookNamespaceLabel: "true"}}
	w := cl.StartWorkmapWebhook(harness.WebhookOptions{Binary: c.webhook, Configuration: cfg,
		// As the schedulers' clients: a PodGroup per gang must not wait for client-go's
		// default limit of 5 requests a second.
		// Its namespaceSelector picks D's and E's namespaces by label, so the report of pods
		// created without their gang, which takes every namespace for one the webhook is called
		// for, would report every pod of A's runs: it is off.
		Args: []string{fmt.Sprintf("--kube-api-qps=%g", c.qps), fmt.Sprintf("--kube-api-burst=%d", c.burst), "--report-ungrouped=false"}})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.WaitReady(ctx); err != nil {
		return err
	}
	if err := bench.CreateNamespace(ctx, cl.Kube, webhookProbeNamespace, map[string]string{bench.WebhookNamespaceLabel: "true"}); err != nil {
		return err
	}
	job := bench.Gangs{Namespace: webhookProbeNamespace, Count: 1, PodsPerGang: 2, SchedulerName: corev1.DefaultSchedulerName}.Job(0)
	job.Spec.Suspend = ptr.To(true)
	job, err := cl.Kube.BatchV1().Jobs(webhookProbeNamespace).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("the webhook's probe Job: %w", err)
	}
	probe := bench.PodOf(job)
	if err := cl.WaitForPodWebhook(ctx, probe, func(p *corev1.Pod) bool { return p.Spec.SchedulingGroup != nil }); err != nil {
		return fmt.Errorf("%w (webhook log %s)", err, w.LogPath())
	}
	return nil
}
