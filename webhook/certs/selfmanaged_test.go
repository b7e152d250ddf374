package certs

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func TestFirstStart(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev", "pods2.workmap.dev"),
		webhookConfig("second", "other.workmap.dev"), webhookConfig("unrelated", "x.example.com"),
		validatingConfig("checks", "definitions.workmap.dev"), validatingConfig("unrelated", "y.example.com"))
	opts := testOptions(c, clk)
	opts.MutatingWebhookConfigurations = []string{testConfig, "second", "missing"}
	opts.ValidatingWebhookConfigurations = []string{"checks", "missing"}
	m := startManager(t, opts)

	s := getSecret(t, c)
	assert.Equal(t, corev1.SecretTypeTLS, s.Type)
	for _, k := range []string{keyTLSCert, keyTLSKey, keyCACert, keyCAKey, keyCABundle} {
		assert.NotEmpty(t, s.Data[k], k)
	}
	bundle := m.CABundle()
	assert.Equal(t, s.Data[keyCABundle], bundle)
	for _, name := range []string{testConfig, "second"} {
		for _, wh := range getConfig(t, c, name).Webhooks {
			assert.Equal(t, bundle, wh.ClientConfig.CABundle, "%s/%s", name, wh.Name)
		}
	}
	assert.Empty(t, getConfig(t, c, "unrelated").Webhooks[0].ClientConfig.CABundle)
	assert.Equal(t, bundle, getValidatingConfig(t, c, "checks").Webhooks[0].ClientConfig.CABundle, "the validating configuration")
	assert.Empty(t, getValidatingConfig(t, c, "unrelated").Webhooks[0].ClientConfig.CABundle)

	leaf := served(t, m)
	assert.Equal(t, []string{"workmap-webhook.workmap-system.svc", "workmap-webhook.workmap-system.svc.cluster.local"}, leaf.DNSNames)
	for _, n := range []string{"workmap-webhook.workmap-system.svc", "workmap-webhook.workmap-system.svc.cluster.local", "127.0.0.1"} {
		assert.NoError(t, verify(leaf, bundle, n, clk.Now()), n)
	}
	assert.Equal(t, clk.Now().Add(DefaultServingValidity), leaf.NotAfter)
}

func TestSecondManagerReuses(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	first := startManager(t, testOptions(c, clk))
	c.ClearActions()
	clk.Step(30 * day)
	second := startManager(t, testOptions(c, clk))

	assert.True(t, served(t, first).Equal(served(t, second)), "same certificate")
	assert.Equal(t, first.CABundle(), second.CABundle())
	for _, a := range c.Actions() {
		assert.Contains(t, []string{"get", "list", "watch"}, a.GetVerb(), "second manager changed %s", a.GetResource().Resource)
	}
}

func TestStartTogether(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	managers := make([]*Manager, 3)
	var wg sync.WaitGroup
	for i := range managers {
		wg.Go(func() { managers[i] = startManager(t, testOptions(c, clk)) })
	}
	wg.Wait()
	leaf := served(t, managers[0])
	for _, m := range managers[1:] {
		assert.True(t, leaf.Equal(served(t, m)), "same certificate")
	}
	assert.Equal(t, getSecret(t, c).Data[keyTLSCert], encodeCert(leaf))
}

func TestServingRenewal(t *testing.T) {
	tests := map[string]struct {
		after   time.Duration
		renewed bool
	}{
		"a month later":                  {after: 30 * day},
		"just before the renewal window": {after: 240 * day},
		"in the renewal window":          {after: 250 * day, renewed: true},
		"after expiry":                   {after: 400 * day, renewed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
			m := startManager(t, testOptions(c, clk))
			before, bundle := served(t, m), m.CABundle()

			clk.Step(tc.after)
			m.check(t.Context())
			after := served(t, m)
			assert.Equal(t, tc.renewed, !before.Equal(after), "renewed")
			assert.Equal(t, bundle, m.CABundle(), "same CA")
			assert.Equal(t, encodeCert(after), getSecret(t, c).Data[keyTLSCert])
			assert.NoError(t, verify(after, m.CABundle(), "127.0.0.1", clk.Now()))
		})
	}
}

func TestCARenewal(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	data, oldCA := seed(t, clk.Now(), 7*365*day, 10*day)
	createSecret(t, c, data)
	m := startManager(t, testOptions(c, clk))

	// The new CA is trusted at once, next to the old one, but the serving certificate stays.
	bundle := parseCerts(m.CABundle())
	require.Len(t, bundle, 2)
	newCA := bundle[0]
	assert.False(t, newCA.Equal(oldCA.cert))
	assert.True(t, bundle[1].Equal(oldCA.cert))
	assert.Equal(t, m.CABundle(), getConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle)
	oldServing := served(t, m)
	assert.Equal(t, data[keyTLSCert], encodeCert(oldServing))

	// Once API servers had time to see the new bundle, the serving certificate moves.
	clk.Step(caPropagation + time.Minute)
	m.check(t.Context())
	newServing := served(t, m)
	assert.False(t, newServing.Equal(oldServing))
	assert.NoError(t, newServing.CheckSignatureFrom(newCA))
	assert.NoError(t, verify(oldServing, m.CABundle(), "127.0.0.1", clk.Now()), "old certificate still trusted")
	assert.NoError(t, verify(newServing, m.CABundle(), "127.0.0.1", clk.Now()))

	// The old CA leaves the bundle when it expires.
	clk.Step(3*365*day + 30*day)
	m.check(t.Context())
	require.Len(t, parseCerts(m.CABundle()), 1)
	assert.True(t, parseCerts(m.CABundle())[0].Equal(newCA))
	assert.Equal(t, m.CABundle(), getConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle)
}

func TestUpdateConflictRetried(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	// The fake clientset does not allow adding reactors while in use.
	var armed atomic.Bool
	var updates atomic.Int32
	c.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if armed.Load() && updates.Add(1) == 1 {
			return true, nil, apierrors.NewConflict(secretsGVR.GroupResource(), testSecret, nil)
		}
		return false, nil, nil
	})
	m := startManager(t, testOptions(c, clk))
	before := served(t, m)

	armed.Store(true)
	clk.Step(250 * day)
	m.check(t.Context())
	assert.EqualValues(t, 2, updates.Load(), "updates")
	after := served(t, m)
	assert.False(t, before.Equal(after), "renewed")
	assert.Equal(t, encodeCert(after), getSecret(t, c).Data[keyTLSCert])
}

func TestRenewTogether(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	managers := []*Manager{startManager(t, testOptions(c, clk)), startManager(t, testOptions(c, clk)), startManager(t, testOptions(c, clk))}
	before := served(t, managers[0])
	clk.Step(250 * day)
	var wg sync.WaitGroup
	for _, m := range managers {
		wg.Go(func() { m.check(t.Context()) })
	}
	wg.Wait()
	stored := getSecret(t, c).Data[keyTLSCert]
	for _, m := range managers {
		leaf := served(t, m)
		assert.False(t, before.Equal(leaf), "renewed")
		assert.Equal(t, stored, encodeCert(leaf), "serves the stored certificate")
	}
}

func TestDeletedSecretRecreated(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	m := startManager(t, testOptions(c, clk))
	before, bundle := served(t, m), m.CABundle()
	require.NoError(t, c.CoreV1().Secrets(testNamespace).Delete(context.Background(), testSecret, metav1.DeleteOptions{}))

	m.check(t.Context())
	assert.True(t, before.Equal(served(t, m)), "same certificate")
	assert.Equal(t, bundle, getSecret(t, c).Data[keyCABundle], "same CA")
}

func TestCABundleRestored(t *testing.T) {
	tests := map[string]func(t *testing.T, ctx context.Context, m *Manager) error{
		"caBundle reset": func(t *testing.T, ctx context.Context, m *Manager) error {
			api := m.opts.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
			cfg, err := api.Get(ctx, testConfig, metav1.GetOptions{})
			require.NoError(t, err)
			cfg.Webhooks[0].ClientConfig.CABundle = nil
			_, err = api.Update(ctx, cfg, metav1.UpdateOptions{})
			return err
		},
		"validating configuration reinstalled": func(t *testing.T, ctx context.Context, m *Manager) error {
			api := m.opts.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
			require.NoError(t, api.Delete(ctx, testConfig, metav1.DeleteOptions{}))
			_, err := api.Create(ctx, validatingConfig(testConfig, "definitions.workmap.dev"), metav1.CreateOptions{})
			return err
		},
		"configuration reinstalled": func(t *testing.T, ctx context.Context, m *Manager) error {
			api := m.opts.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
			require.NoError(t, api.Delete(ctx, testConfig, metav1.DeleteOptions{}))
			_, err := api.Create(ctx, webhookConfig(testConfig, "pods.workmap.dev"), metav1.CreateOptions{})
			return err
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			c := newClient(webhookConfig(testConfig, "pods.workmap.dev"), validatingConfig(testConfig, "definitions.workmap.dev"))
			opts := testOptions(c, clk)
			opts.ValidatingWebhookConfigurations = []string{testConfig}
			m := startManager(t, opts)
			require.Equal(t, m.CABundle(), getConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle)
			require.Equal(t, m.CABundle(), getValidatingConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle)

			require.NoError(t, change(t, t.Context(), m))
			assert.Eventually(t, func() bool {
				return string(getConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle) == string(m.CABundle()) &&
					string(getValidatingConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle) == string(m.CABundle())
			}, 10*time.Second, 20*time.Millisecond)
		})
	}
}

func TestConfigurationCreatedLater(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := newClient()
	m := startManager(t, testOptions(c, clk))
	_, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(t.Context(),
		webhookConfig(testConfig, "pods.workmap.dev", "more.workmap.dev"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		for _, wh := range getConfig(t, c, testConfig).Webhooks {
			if string(wh.ClientConfig.CABundle) != string(m.CABundle()) {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
}
