package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/workmap/workmap/internal/needs"
)

// The primitives below let a framework operator's starter (one package per operator under
// e2e/operators/) run the operator the way the JobSet controller is run here: its binary and
// manifests from the bin folder `make controlplane` fills, its CRDs installed in the running
// cluster, its webhooks served on loopback.

// Bin returns the path of a file in the control-plane bin folder, skipping the test (failing
// it in CI) when it is missing: operators are built there by `make controlplane`.
func (c *Cluster) Bin(rel string) string {
	c.t.Helper()
	p := filepath.Join(c.bin, rel)
	if _, err := os.Stat(p); err != nil {
		needs.Skip(c.t, "%s missing in %s: run `make controlplane`", rel, c.bin)
	}
	return p
}

// Run starts a component from the bin folder (binary is relative to it) with the given
// environment and arguments, logs into the cluster's folder, and stops it with the cluster.
func (c *Cluster) Run(name, binary string, env []string, args ...string) {
	c.t.Helper()
	c.run(name, binary, env, args...)
}

// RunIn is Run in a working directory (for operators that read files relative to it).
func (c *Cluster) RunIn(workDir, name, binary string, env []string, args ...string) {
	c.t.Helper()
	c.runIn(workDir, name, binary, env, args...)
}

// AdminKubeconfig provisions a system:masters user for a component and returns the path of
// its kubeconfig file.
func (c *Cluster) AdminKubeconfig(name string) string { return c.kubeconfig(name) }

// InstallCRDs installs the CRDs in the given files or folders and waits until they are served.
func (c *Cluster) InstallCRDs(paths ...string) {
	c.t.Helper()
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: time.Minute}); err != nil {
		c.t.Fatalf("installing CRDs %v: %v", paths, err)
	}
}

// CheckProcesses returns an error naming every component that has exited.
func (c *Cluster) CheckProcesses() error { return c.checkProcesses() }

// FreePort is a free loopback port not handed out before.
func FreePort() (int, error) { return freePort() }

// HostPort is "127.0.0.1:port".
func HostPort(port int) string { return hostPort(port) }

// Poll calls check every interval (first at once) until it returns true, an error, or ctx ends.
func Poll(ctx context.Context, interval time.Duration, check func() (bool, error)) error {
	return poll(ctx, interval, check)
}

// Webhooks are an operator's admission webhooks, served by the operator on loopback with
// a certificate made here.
type Webhooks struct {
	// Port is where the operator must serve them, on 127.0.0.1.
	Port int
	// CertDir holds tls.crt and tls.key for the operator's webhook server.
	CertDir string

	opts *envtest.WebhookInstallOptions
	c    *Cluster
}

// PrepareWebhooks reads an operator's webhook configurations (the files or folders in
// paths), points them at 127.0.0.1 and a free port, and makes a serving certificate. Every
// webhook whose name has a key in objectSelectors gets that object selector (operators
// usually narrow their pod webhooks in their kustomize overlays, which these files lack).
// Install them once the operator runs. The configurations are named after the folder of the
// first path (the operator's, in the bin folder), so several operators' can live side by side.
func (c *Cluster) PrepareWebhooks(paths []string, objectSelectors map[string]*metav1.LabelSelector) *Webhooks {
	c.t.Helper()
	hooks := &envtest.WebhookInstallOptions{Paths: paths, LocalServingHost: "127.0.0.1", MaxTime: 60 * time.Second}
	if err := hooks.PrepWithoutInstalling(); err != nil {
		c.t.Fatalf("preparing webhooks %v: %v", paths, err)
	}
	c.t.Cleanup(func() { _ = hooks.Cleanup() })
	fix := func(cc *admissionv1.WebhookClientConfig, name string, sel **metav1.LabelSelector) {
		fixWebhookURL(cc)
		if s, ok := objectSelectors[name]; ok {
			*sel = s
		}
	}
	// Operators scaffolded by kubebuilder all name their configurations
	// mutating-webhook-configuration and validating-webhook-configuration: in one cluster the
	// last installed would replace the others, so each is named after its operator's folder.
	owner := filepath.Base(filepath.Dir(paths[0]))
	for _, m := range hooks.MutatingWebhooks {
		m.Name = owner + "-" + m.Name
		for i := range m.Webhooks {
			fix(&m.Webhooks[i].ClientConfig, m.Webhooks[i].Name, &m.Webhooks[i].ObjectSelector)
		}
	}
	for _, v := range hooks.ValidatingWebhooks {
		v.Name = owner + "-" + v.Name
		for i := range v.Webhooks {
			fix(&v.Webhooks[i].ClientConfig, v.Webhooks[i].Name, &v.Webhooks[i].ObjectSelector)
		}
	}
	return &Webhooks{Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir, opts: hooks, c: c}
}

// Install creates the webhook configurations in the cluster.
func (w *Webhooks) Install() {
	w.c.t.Helper()
	if err := w.opts.Install(w.c.Config); err != nil {
		w.c.t.Fatalf("installing webhooks: %v (%v)", err, w.c.checkProcesses())
	}
}

// CABundle is the PEM of the CA that signed the serving certificate (for operators that
// patch webhook or CRD conversion configurations themselves).
func (w *Webhooks) CABundle() []byte { return w.opts.LocalServingCAData }

// WriteManagerConfig writes, into the cluster's folder as <name>-config.yaml, the
// Configuration file that kubernetes-sigs controllers built on controller-runtime read
// (JobSet's config.jobset.x-k8s.io, LeaderWorkerSet's config.lws.x-k8s.io, ...; apiVersion
// names it): leader election and the controller's own certificate management off, webhooks
// served on 127.0.0.1 with w's certificate, metrics off, health probes on a free loopback
// port. It returns the file's path.
func (c *Cluster) WriteManagerConfig(name, apiVersion string, w *Webhooks) string {
	c.t.Helper()
	probePort, err := freePort()
	if err != nil {
		c.t.Fatal(err)
	}
	config := fmt.Sprintf(`apiVersion: %s
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: %s
`, apiVersion, w.Port, w.CertDir, hostPort(probePort))
	path := filepath.Join(c.Dir, name+"-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}
