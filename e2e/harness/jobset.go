package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// jobSetBinary is the JobSet controller built by `make controlplane`; its CRD and webhook
// manifests are copied beside it into jobset/.
const jobSetBinary = "jobset-controller"

// JobSetResource is the JobSet API resource.
var JobSetResource = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// jobSetNameLabel is on every pod of a JobSet; the pod webhooks only look at those.
const jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"

// startJobSet runs the JobSet controller with its webhooks served on loopback, with
// certificates made here and webhook configurations pointing at it, and waits until the
// webhooks answer.
func (c *Cluster) startJobSet(ctx context.Context) {
	hooks := c.PrepareWebhooks([]string{filepath.Join(c.bin, "jobset", "webhooks.yaml")}, map[string]*metav1.LabelSelector{
		"mpod.kb.io": jobSetPodSelector, "vpod.kb.io": jobSetPodSelector,
	})
	cfgPath := c.WriteManagerConfig("jobset", "config.jobset.x-k8s.io/v1alpha1", hooks)
	c.run("jobset-controller", jobSetBinary, []string{"KUBECONFIG=" + c.kubeconfig("jobset-controller")}, "--config="+cfgPath)
	hooks.Install()
	if err := c.waitForJobSetWebhook(ctx); err != nil {
		c.t.Fatalf("JobSet webhooks never answered: %v", err)
	}
}

// jobSetPodSelector limits the pod webhooks to JobSet pods, as the JobSet deployment does.
var jobSetPodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: jobSetNameLabel, Operator: metav1.LabelSelectorOpExists}}}

// fixWebhookURL turns envtest's URL (host + "/" + path) into a clean one.
func fixWebhookURL(cc *admissionv1.WebhookClientConfig) {
	if cc.URL != nil {
		u := strings.Replace(*cc.URL, ":"+portOf(*cc.URL)+"//", ":"+portOf(*cc.URL)+"/", 1)
		cc.URL = &u
	}
}

func portOf(url string) string {
	rest := strings.TrimPrefix(url, "https://")
	hostport, _, _ := strings.Cut(rest, "/")
	_, port, _ := strings.Cut(hostport, ":")
	return port
}

// waitForJobSetWebhook dry-runs a JobSet create until the defaulting webhook answers.
func (c *Cluster) waitForJobSetWebhook(ctx context.Context) error {
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "webhook-probe", "namespace": "default"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "probe", "replicas": int64(1),
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "probe"}},
			}}}},
		}}},
	}}
	var last error
	err := poll(ctx, 200*time.Millisecond, func() (bool, error) {
		if err := c.checkProcesses(); err != nil {
			return false, err
		}
		_, last = c.Dynamic.Resource(JobSetResource).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %v)", err, last)
	}
	return nil
}

// JobSetGroupKind is the JobSet kind.
var JobSetGroupKind = schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}
