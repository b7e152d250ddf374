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
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// syncCABundles writes the current caBundle into every named MutatingWebhookConfiguration.
func (m *Manager) syncCABundles(ctx context.Context) error {
	bundle := m.CABundle()
	var errs []error
	for _, name := range m.opts.WebhookConfigurations {
		if err := m.syncCABundle(ctx, name, bundle); err != nil {
			errs = append(errs, fmt.Errorf("setting caBundle of MutatingWebhookConfiguration %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// syncCABundle patches the caBundle of every webhook of configuration name that has another.
// A configuration that does not exist yet is skipped: the watch sees it when it is created.
func (m *Manager) syncCABundle(ctx context.Context, name string, bundle []byte) error {
	api := m.opts.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		klog.V(2).InfoS("MutatingWebhookConfiguration not found; its caBundle is set once it is created", "name", name)
		return nil
	}
	if err != nil {
		return err
	}
	ops := caBundlePatch(cfg, bundle)
	if len(ops) == 0 {
		return nil
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := api.Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{}); err != nil {
		return err
	}
	klog.InfoS("Updated caBundle", "mutatingWebhookConfiguration", name, "webhooks", len(ops)/2)
	return nil
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// caBundlePatch is a JSON patch setting the caBundle of each webhook of cfg that has another;
// each change first tests the webhook's name, so that a concurrent reordering fails the patch
// rather than changing the wrong webhook.
func caBundlePatch(cfg *admissionregistrationv1.MutatingWebhookConfiguration, bundle []byte) []patchOp {
	if len(bundle) == 0 {
		return nil
	}
	var ops []patchOp
	for i, wh := range cfg.Webhooks {
		if bytes.Equal(wh.ClientConfig.CABundle, bundle) {
			continue
		}
		ops = append(ops,
			patchOp{Op: "test", Path: fmt.Sprintf("/webhooks/%d/name", i), Value: wh.Name},
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
	for _, name := range m.opts.WebhookConfigurations {
		factory := informers.NewSharedInformerFactoryWithOptions(m.opts.Client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			}))
		informer := factory.Admissionregistration().V1().MutatingWebhookConfigurations().Informer()
		onChange := func(obj any) {
			cfg, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			if ok && cfg.Name == name && len(caBundlePatch(cfg, m.CABundle())) > 0 {
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
			klog.ErrorS(err, "Watching MutatingWebhookConfiguration failed; its caBundle is checked periodically", "name", name)
			continue
		}
		factory.Start(ctx.Done())
	}
}
