package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Manager provides the webhook's serving certificate; see the package documentation.
type Manager struct {
	opts    Options
	policy  policy
	started atomic.Bool

	// files mode
	watcher atomic.Pointer[certwatcher.CertWatcher]

	// self-managed mode
	cert   atomic.Pointer[tls.Certificate]
	bundle atomic.Pointer[[]byte]
	// data is the Secret data last loaded, to recreate the Secret from if it is deleted.
	data atomic.Pointer[map[string][]byte]
	// kick asks the background loop for a check now.
	kick chan struct{}
}

// New checks opts and returns a Manager; nothing happens until Start.
func New(opts Options) (*Manager, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	return &Manager{
		opts: opts,
		policy: policy{
			dnsNames:        opts.dnsNames(),
			ips:             opts.IPs,
			servingValidity: opts.ServingValidity,
			caValidity:      opts.CAValidity,
		},
		kick: make(chan struct{}, 1),
	}, nil
}

// Start blocks until the first serving certificate is available (giving up after
// Options.StartTimeout) and then keeps it current in the background until ctx is done.
func (m *Manager) Start(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("certs: Manager already started")
	}
	startCtx, cancel := context.WithTimeout(ctx, m.opts.StartTimeout)
	defer cancel()
	if m.opts.selfManaged() {
		return m.startSelfManaged(ctx, startCtx)
	}
	return m.startFiles(ctx, startCtx)
}

// TLSConfig returns a new TLS configuration that serves the current certificate.
func (m *Manager) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.getCertificate}
}

// CABundle returns the PEM CA certificates that clients should trust, as written to the
// caBundle of the webhook configurations. It is nil in files mode and before Start.
func (m *Manager) CABundle() []byte {
	if b := m.bundle.Load(); b != nil {
		return append([]byte(nil), *b...)
	}
	return nil
}

func (m *Manager) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if w := m.watcher.Load(); w != nil {
		if c, err := w.GetCertificate(hello); c != nil || err != nil {
			return c, err
		}
	} else if c := m.cert.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("certs: no serving certificate yet")
}

// startFiles waits for tls.crt and tls.key in the directory (giving up when startCtx is done)
// and then watches them until ctx is done.
func (m *Manager) startFiles(ctx, startCtx context.Context) error {
	certPath, keyPath := filepath.Join(m.opts.Dir, "tls.crt"), filepath.Join(m.opts.Dir, "tls.key")
	var w *certwatcher.CertWatcher
	var readErr error
	if err := wait.PollUntilContextCancel(startCtx, time.Second, true, func(context.Context) (bool, error) {
		var err error
		if w, err = certwatcher.New(certPath, keyPath); err == nil {
			return true, nil
		}
		if readErr == nil {
			klog.InfoS("Waiting for the serving certificate files", "dir", m.opts.Dir, "err", err)
		}
		readErr = err
		return false, nil
	}); err != nil {
		return fmt.Errorf("certs: reading serving certificate from %s: %w", m.opts.Dir, readErr)
	}
	w.RegisterCallback(func(c tls.Certificate) {
		if c.Leaf != nil {
			klog.InfoS("Serving certificate loaded", "dir", m.opts.Dir, "dnsNames", c.Leaf.DNSNames, "notAfter", c.Leaf.NotAfter)
		}
	})
	m.watcher.Store(w)
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := w.Start(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Watching the serving certificate files failed; retrying", "dir", m.opts.Dir)
		}
	}, 10*time.Second)
	return nil
}
