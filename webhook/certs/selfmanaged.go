package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// retryAfterError is how soon a failed check is tried again.
const retryAfterError = time.Minute

// startSelfManaged makes sure the Secret holds good certificates (retrying until startCtx is
// done), then checks them periodically and on webhook configuration changes until ctx is done.
func (m *Manager) startSelfManaged(ctx, startCtx context.Context) error {
	secret := klog.KRef(m.opts.SecretNamespace, m.opts.SecretName)
	var recheck time.Duration
	var syncErr error
	// Tried at once, then after 1s, 2s, 4s, 8s and every 15s.
	retries := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 15 * time.Second, Steps: math.MaxInt32}
	if err := retries.DelayFunc().Until(startCtx, true, true, func(context.Context) (bool, error) {
		if recheck, syncErr = m.syncSecret(startCtx); syncErr != nil {
			klog.ErrorS(syncErr, "Getting the webhook serving certificate failed; retrying", "secret", secret)
			return false, nil
		}
		return true, nil
	}); err != nil {
		if syncErr == nil {
			syncErr = err
		}
		return fmt.Errorf("certs: getting serving certificate from Secret %s: %w", secret, syncErr)
	}
	next := m.opts.CheckInterval
	if err := m.syncCABundles(startCtx); err != nil {
		klog.ErrorS(err, "Setting caBundle failed; retrying", "in", retryAfterError)
		next = retryAfterError
	}
	if recheck > 0 && recheck < next {
		next = recheck
	}
	m.watchWebhookConfigurations(ctx)
	go m.loop(ctx, next)
	return nil
}

// loop checks the Secret and the caBundles after next, and again at every CheckInterval or
// kick, until ctx is done.
func (m *Manager) loop(ctx context.Context, next time.Duration) {
	timer := time.NewTimer(next)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-m.kick:
		}
		timer.Reset(m.check(ctx))
	}
}

// check syncs the Secret and then the caBundles, and returns when to check next.
func (m *Manager) check(ctx context.Context) time.Duration {
	next := m.opts.CheckInterval
	recheck, err := m.syncSecret(ctx)
	if err == nil {
		err = m.syncCABundles(ctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			klog.ErrorS(err, "Checking the webhook certificates failed; retrying", "in", retryAfterError)
		}
		next = retryAfterError
	}
	if recheck > 0 && recheck < next {
		next = recheck
	}
	return next
}

// syncSecret reads the Secret, renews what is due, stores the result and loads it. It returns
// when a postponed renewal becomes due (zero if none is).
//
// Replicas race only through the API server: Create fails with AlreadyExists and Update (which
// carries the resourceVersion that was read) with Conflict when another replica was first;
// then the Secret is read again and checked anew.
func (m *Manager) syncSecret(ctx context.Context) (recheck time.Duration, err error) {
	secrets := m.opts.Client.CoreV1().Secrets(m.opts.SecretNamespace)
	raced := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err = retry.OnError(retry.DefaultBackoff, raced, func() error {
		cur, err := secrets.Get(ctx, m.opts.SecretName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		exists := err == nil
		var old map[string][]byte
		if exists {
			old = cur.Data
		} else if last := m.data.Load(); last != nil {
			// Recreate a deleted Secret with the certificates this replica has, so that the
			// CA other replicas' certificates chain to stays trusted.
			old = *last
		}
		p, err := m.policy.plan(old, m.opts.Now())
		if err != nil {
			return err
		}
		recheck = p.recheck
		var stored *corev1.Secret
		switch {
		case !exists:
			stored, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name:      m.opts.SecretName,
					Namespace: m.opts.SecretNamespace,
					Labels:    map[string]string{"app.kubernetes.io/managed-by": "workmap-webhook"},
				},
				Type: corev1.SecretTypeTLS,
				Data: p.data,
			}, metav1.CreateOptions{})
		case len(p.changes) > 0:
			upd := cur.DeepCopy()
			upd.Data = p.data
			stored, err = secrets.Update(ctx, upd, metav1.UpdateOptions{})
		default:
			stored = cur
		}
		if err != nil {
			return err
		}
		if len(p.changes) > 0 {
			klog.InfoS("Renewed webhook certificates", "secret", klog.KObj(stored), "changes", p.changes)
		}
		return m.load(stored.Data)
	})
	return recheck, err
}

// load makes data's serving certificate and caBundle current.
func (m *Manager) load(data map[string][]byte) error {
	cert, err := tls.X509KeyPair(data[keyTLSCert], data[keyTLSKey])
	if err != nil {
		return fmt.Errorf("loading serving certificate: %w", err)
	}
	bundle := data[keyCABundle]
	if len(bundle) == 0 {
		return errors.New("loading serving certificate: no " + keyCABundle)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("loading serving certificate: %w", err)
		}
	}
	if prev := m.cert.Load(); prev == nil || !prev.Leaf.Equal(cert.Leaf) {
		klog.InfoS("Serving certificate loaded", "secret", klog.KRef(m.opts.SecretNamespace, m.opts.SecretName),
			"dnsNames", cert.Leaf.DNSNames, "ips", cert.Leaf.IPAddresses, "notAfter", cert.Leaf.NotAfter)
	}
	m.cert.Store(&cert)
	m.bundle.Store(&bundle)
	m.data.Store(&data)
	return nil
}
