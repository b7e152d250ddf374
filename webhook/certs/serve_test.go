package certs

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"
)

// TestServeHTTPS serves HTTPS on 127.0.0.1 with TLSConfig and connects as the API server
// does: trusting only CABundle.
func TestServeHTTPS(t *testing.T) {
	c := newClient(webhookConfig(testConfig, "pods.workmap.dev"))
	opts := testOptions(c, testingclock.NewFakeClock(time.Now()))
	opts.Now = time.Now
	m := startManager(t, opts)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(tls.NewListener(ln, m.TLSConfig())) }()
	t.Cleanup(func() { _ = srv.Close() })

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(m.CABundle()))
	addr := ln.Addr().String()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Get("https://" + addr + "/")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(body))
	require.NotEmpty(t, resp.TLS.VerifiedChains)
	chain := resp.TLS.VerifiedChains[0]
	assert.True(t, chain[0].IPAddresses[0].Equal(loopback), "IP SAN")
	assert.True(t, chain[len(chain)-1].IsCA, "chain ends at the CA")

	tests := map[string]struct {
		config  *tls.Config
		wantErr string
	}{
		"Service name":             {config: &tls.Config{RootCAs: roots, ServerName: "workmap-webhook.workmap-system.svc"}},
		"Service name with domain": {config: &tls.Config{RootCAs: roots, ServerName: "workmap-webhook.workmap-system.svc.cluster.local"}},
		"another name":             {config: &tls.Config{RootCAs: roots, ServerName: "workmap-webhook.default.svc"}, wantErr: "certificate is valid for workmap-webhook.workmap-system.svc"},
		"not trusting the bundle":  {config: &tls.Config{RootCAs: x509.NewCertPool()}, wantErr: "unknown authority"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", addr, tc.config)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			_ = conn.Close()
		})
	}
}
