package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

const (
	testNamespace = "workmap-system"
	testSecret    = "workmap-webhook-certs"
	testConfig    = "workmap-webhook"
)

var (
	t0         = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day        = 24 * time.Hour
	loopback   = net.ParseIP("127.0.0.1")
	secretsGVR = corev1.SchemeGroupVersion.WithResource("secrets")
)

// newClient is a fake clientset holding objs whose Secrets honour resourceVersion as an API
// server does: Update fails with Conflict unless it carries the stored one.
func newClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var mu sync.Mutex
	rv := 0
	c.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).DeepCopy()
		rv++
		s.ResourceVersion = strconv.Itoa(rv)
		if err := c.Tracker().Create(secretsGVR, s, s.Namespace); err != nil {
			return true, nil, err
		}
		return true, s, nil
	})
	c.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		s := a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret).DeepCopy()
		cur, err := c.Tracker().Get(secretsGVR, s.Namespace, s.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*corev1.Secret).ResourceVersion != s.ResourceVersion {
			return true, nil, apierrors.NewConflict(secretsGVR.GroupResource(), s.Name, nil)
		}
		rv++
		s.ResourceVersion = strconv.Itoa(rv)
		if err := c.Tracker().Update(secretsGVR, s, s.Namespace); err != nil {
			return true, nil, err
		}
		return true, s, nil
	})
	return c
}

// webhookConfig is a MutatingWebhookConfiguration with the named webhooks.
func webhookConfig(name string, webhooks ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, wh := range webhooks {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{Name: wh})
	}
	return cfg
}

// validatingConfig is a ValidatingWebhookConfiguration with the named webhooks.
func validatingConfig(name string, webhooks ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, wh := range webhooks {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: wh})
	}
	return cfg
}

func testOptions(c *fake.Clientset, clk *testingclock.FakeClock) Options {
	return Options{
		Client:                        c,
		SecretNamespace:               testNamespace,
		SecretName:                    testSecret,
		MutatingWebhookConfigurations: []string{testConfig},
		ServiceName:                   "workmap-webhook",
		IPs:                           []net.IP{loopback},
		Now:                           clk.Now,
	}
}

// startManager starts a Manager with opts; it stops with the test.
func startManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	return m
}

// served is the leaf certificate m serves now.
func served(t *testing.T, m *Manager) *x509.Certificate {
	t.Helper()
	c, err := m.TLSConfig().GetCertificate(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	require.NoError(t, err)
	return leaf
}

func getSecret(t *testing.T, c *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := c.CoreV1().Secrets(testNamespace).Get(context.Background(), testSecret, metav1.GetOptions{})
	require.NoError(t, err)
	return s
}

func getConfig(t *testing.T, c *fake.Clientset, name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	cfg, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return cfg
}

// verify checks that leaf chains to a CA in bundle at now and is valid for name.
func verify(leaf *x509.Certificate, bundle []byte, name string, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: now})
	return err
}

// seed is Secret data made at now from a CA made caAge ago and a serving certificate made
// servingAge ago (signed by that CA) for the names of testOptions.
func seed(t *testing.T, now time.Time, caAge, servingAge time.Duration) (map[string][]byte, *keyPair) {
	t.Helper()
	ca, err := newCA(now.Add(-caAge), DefaultCAValidity)
	require.NoError(t, err)
	srv, err := newServing(ca, []string{"workmap-webhook.workmap-system.svc", "workmap-webhook.workmap-system.svc.cluster.local"},
		[]net.IP{loopback}, now.Add(-servingAge), DefaultServingValidity)
	require.NoError(t, err)
	return map[string][]byte{
		keyCACert: ca.certPEM, keyCAKey: ca.keyPEM, keyCABundle: ca.certPEM,
		keyTLSCert: srv.certPEM, keyTLSKey: srv.keyPEM,
	}, ca
}

func createSecret(t *testing.T, c *fake.Clientset, data map[string][]byte) {
	t.Helper()
	_, err := c.CoreV1().Secrets(testNamespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testSecret, Namespace: testNamespace}, Data: data,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func getValidatingConfig(t *testing.T, c *fake.Clientset, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	cfg, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return cfg
}
