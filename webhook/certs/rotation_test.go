package certs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

// TestCARotationKeepsEveryReplicaTrusted follows two replicas through a CA's renewal and the
// expiry of the CA it replaced, checking at staggered times as their loops would, and after
// every check connects to both over TLS as an API server does: trusting only a caBundle, the
// one the webhook configurations had before that check or the one they have after it (an API
// server may still hold the previous one). No connection may fail at any step: the new CA is
// trusted before any replica serves a certificate it signed, and the old one stays trusted
// until no certificate it signed is left.
func TestCARotationKeepsEveryReplicaTrusted(t *testing.T) {
	tests := map[string]struct {
		caAge time.Duration // of the CA in the Secret at the start
		step  time.Duration // between the replicas' checks
		span  time.Duration // followed for this long
	}{
		"checked twice a day through the CA's renewal":     {caAge: 2400 * day, step: 12 * time.Hour, span: 60 * day},
		"checked every five days until the old CA expires": {caAge: 2400 * day, step: 5 * day, span: 1300 * day},
		"checked minutes apart through the renewal":        {caAge: 2433*day + 8*time.Hour - 5*time.Minute, step: 3 * time.Minute, span: 2 * caPropagation},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
			data, firstCA := seed(t, clk.Now(), tc.caAge, 10*day)
			createSecret(t, c, data)
			replicas := []*Manager{startManager(t, testOptions(c, clk)), startManager(t, testOptions(c, clk))}
			addrs := make([]string, len(replicas))
			for i, m := range replicas {
				addrs[i] = serveTLS(t, m)
			}
			caBundle := func() []byte { return getConfig(t, c, testConfig).Webhooks[0].ClientConfig.CABundle }
			require.NotEmpty(t, caBundle())

			var newCAs, caDropped, servingMoved bool
			for i := 0; clk.Now().Before(t0.Add(tc.span)); i++ {
				clk.Step(tc.step)
				before := caBundle()
				replicas[i%2].check(t.Context())
				after := caBundle()
				for r, addr := range addrs {
					for which, bundle := range map[string][]byte{"before": before, "after": after} {
						require.NoError(t, handshake(addr, bundle, clk.Now()),
							"%s: replica %d against the caBundle %s the check of replica %d", clk.Now().Format(time.DateTime), r, which, i%2)
					}
				}
				cas := parseCerts(after)
				newCAs = newCAs || len(cas) > 1
				caDropped = caDropped || newCAs && len(cas) == 1
				servingMoved = servingMoved || served(t, replicas[i%2]).CheckSignatureFrom(firstCA.cert) != nil
			}
			assert.True(t, newCAs, "a new CA was made and trusted next to the first")
			assert.True(t, servingMoved, "the serving certificate moved to the new CA")
			if tc.span > 3*365*day {
				assert.True(t, caDropped, "the first CA left the caBundle once expired")
			}
		})
	}
}

// serveTLS serves m's certificate on a loopback port until the test ends, and returns the
// address.
func serveTLS(t *testing.T, m *Manager) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", m.TLSConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = conn.(*tls.Conn).Handshake()
				_ = conn.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// handshake connects to addr trusting only bundle, at now, for the Service's name.
func handshake(addr string, bundle []byte, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{
		RootCAs: roots, ServerName: "workmap-webhook.workmap-system.svc", Time: func() time.Time { return now },
	})
	if err != nil {
		return err
	}
	return conn.Close()
}
