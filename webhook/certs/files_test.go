package certs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeServing writes a new serving certificate and key into dir the way the kubelet updates a
// mounted Secret: files are written aside and renamed into place.
func writeServing(t *testing.T, dir string) *keyPair {
	t.Helper()
	ca, err := newCA(time.Now(), DefaultCAValidity)
	require.NoError(t, err)
	srv, err := newServing(ca, []string{"workmap-webhook.workmap-system.svc"}, nil, time.Now(), DefaultServingValidity)
	require.NoError(t, err)
	for name, data := range map[string][]byte{"tls.key": srv.keyPEM, "tls.crt": srv.certPEM} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		require.NoError(t, os.WriteFile(tmp, data, 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
	return srv
}

func TestFilesReload(t *testing.T) {
	dir := t.TempDir()
	first := writeServing(t, dir)
	m := startManager(t, Options{Dir: dir})
	assert.True(t, first.cert.Equal(served(t, m)))
	assert.Nil(t, m.CABundle())

	second := writeServing(t, dir)
	assert.Eventually(t, func() bool { return second.cert.Equal(served(t, m)) }, 30*time.Second, 50*time.Millisecond)
}

func TestFilesStartWaits(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Options{Dir: dir})
	require.NoError(t, err)
	_, err = m.TLSConfig().GetCertificate(nil)
	require.Error(t, err, "no certificate before Start")

	written := make(chan *keyPair, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		written <- writeServing(t, dir)
	}()
	require.NoError(t, m.Start(t.Context()))
	assert.True(t, (<-written).cert.Equal(served(t, m)))
}

func TestFilesStartTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	m, err := New(Options{Dir: dir, StartTimeout: 1500 * time.Millisecond})
	require.NoError(t, err)
	err = m.Start(t.Context())
	require.ErrorContains(t, err, dir)
	require.Error(t, m.Start(t.Context()), "second Start")
}
