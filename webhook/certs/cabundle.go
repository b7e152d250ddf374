package certs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// webhookCA is what the caBundle sync needs of one webhook of a configuration.
type webhookCA struct {
	name     string
	caBundle []byte
}

// configurationKind is one kind of admission webhook configuration, mutating or validating,
// whose webhooks' caBundle a Manager keeps current.
type configurationKind struct {
	kind     string
	get      func(ctx context.Context, c kubernetes.Interface, name string) (any, error)
	patch    func(ctx context.Context, c kubernetes.Interface, name string, body []byte) error
	informer func(f informers.SharedInformerFactory) cache.SharedIndexInformer
	// webhooks are the name and webhooks of obj, when it is a configuration of this kind.
	webhooks func(obj any) (string, []webhookCA, bool)
}

var mutatingConfigurations = configurationKind{
	kind: "MutatingWebhookConfiguration",
	get: func(ctx context.Context, c kubernetes.Interface, name string) (any, error) {
		return c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	},
	patch: func(ctx context.Context, c kubernetes.Interface, name string, body []byte) error {
		_, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		return err
	},
	informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
	},
	webhooks: func(obj any) (string, []webhookCA, bool) {
		cfg, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
		if !ok || cfg == nil {
			return "", nil, false
		}
		hooks := make([]webhookCA, len(cfg.Webhooks))
		for i, wh := range cfg.Webhooks {
			hooks[i] = webhookCA{name: wh.Name, caBundle: wh.ClientConfig.CABundle}
		}
		return cfg.Name, hooks, true
	},
}

var validatingConfigurations = configurationKind{
	kind: "ValidatingWebhookConfiguration",
	get: func(ctx context.Context, c kubernetes.Interface, name string) (any, error) {
		return c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	},
	patch: func(ctx context.Context, c kubernetes.Interface, name string, body []byte) error {
		_, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		return err
	},
	informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()
	},
	webhooks: func(obj any) (string, []webhookCA, bool) {
		cfg, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		if !ok || cfg == nil {
			return "", nil, false
		}
		hooks := make([]webhookCA, len(cfg.Webhooks))
		for i, wh := range cfg.Webhooks {
			hooks[i] = webhookCA{name: wh.Name, caBundle: wh.ClientConfig.CABundle}
		}
		return cfg.Name, hooks, true
	},
}

// namedConfiguration is one configuration the Manager keeps current.
type namedConfiguration struct {
	kind *configurationKind
	name string
}

// configurations are the configurations of the options, mutating first.
func (o *Options) configurations() []namedConfiguration {
	var out []namedConfiguration
	for _, n := range o.MutatingWebhookConfigurations {
		out = append(out, namedConfiguration{&mutatingConfigurations, n})
	}
	for _, n := range o.ValidatingWebhookConfigurations {
		out = append(out, namedConfiguration{&validatingConfigurations, n})
	}
	return out
}

// syncCABundles writes the current caBundle into every named webhook configuration.
func (m *Manager) syncCABundles(ctx context.Context) error {
	bundle := m.CABundle()
	var errs []error
	for _, c := range m.opts.configurations() {
		if err := m.syncCABundle(ctx, c, bundle); err != nil {
			errs = append(errs, fmt.Errorf("setting caBundle of %s %s: %w", c.kind.kind, c.name, err))
		}
	}
	return errors.Join(errs...)
}

// syncCABundle patches the caBundle of every webhook of configuration c that has another.
// A configuration that does not exist yet is skipped: the watch sees it when it is created.
func (m *Manager) syncCABundle(ctx context.Context, c namedConfiguration, bundle []byte) error {
	obj, err := c.kind.get(ctx, m.opts.Client, c.name)
	if apierrors.IsNotFound(err) {
		klog.V(2).InfoS("Webhook configuration not found; its caBundle is set once it is created", "kind", c.kind.kind, "name", c.name)
		return nil
	}
	if err != nil {
		return err
	}
	_, hooks, _ := c.kind.webhooks(obj)
	ops := caBundlePatch(hooks, bundle)
	if len(ops) == 0 {
		return nil
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := c.kind.patch(ctx, m.opts.Client, c.name, body); err != nil {
		return err
	}
	klog.InfoS("Updated caBundle", "kind", c.kind.kind, "name", c.name, "webhooks", len(ops)/2)
	return nil
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// caBundlePatch is a JSON patch setting the caBundle of each of the webhooks that has another;
// each change first tests the webhook's name, so that a concurrent reordering fails the patch
// rather than changing the wrong webhook.
func caBundlePatch(hooks []webhookCA, bundle []byte) []patchOp {
	if len(bundle) == 0 {
		return nil
	}
	var ops []patchOp
	for i, wh := range hooks {
		if bytes.Equal(wh.caBundle, bundle) {
			continue
		}
		ops = append(ops,
			patchOp{Op: "test", Path: fmt.Sprintf("/webhooks/%d/name", i), Value: wh.name},
			patchOp{Op: "add", Path: fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), Value: bundle})
	}
	return ops
}

// watchWebhookConfigurations watches each named configuration (one informer each, selected
// by name, so that RBAC can be limited to these names) and asks for a check when one's
// caBundle differs from the current one, e.g. after a reinstall. The check reads the Secret
// first, so a replica that missed a renewal by another catches up instead of writing back
// its older bundle.
func (m *Manager) watchWebhookConfigurations(ctx context.Context) {
	for _, c := range m.opts.configurations() {
		factory := informers.NewSharedInformerFactoryWithOptions(m.opts.Client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", c.name).String()
			}))
		informer := c.kind.informer(factory)
		onChange := func(obj any) {
			name, hooks, ok := c.kind.webhooks(obj)
			if ok && name == c.name && len(caBundlePatch(hooks, m.CABundle())) > 0 {
				select {
				case m.kick <- struct{}{}:
				default:
				}
			}
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    onChange,
			UpdateFunc: func(_, obj any) { onChange(obj) },
		}); err != nil {
			klog.ErrorS(err, "Watching a webhook configuration failed; its caBundle is checked periodically", "kind", c.kind.kind, "name", c.name)
			continue
		}
		factory.Start(ctx.Done())
	}
}
