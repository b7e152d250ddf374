package harness

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// KubeSchedulerOptions configure a plain kube-scheduler started on demand (for clusters
// started with NoScheduler): the default profile, no leader election.
type KubeSchedulerOptions struct {
	// QPS and Burst set the client rate limits (clientConnection); zero keeps
	// kube-scheduler's defaults (50 and 100).
	QPS   float32
	Burst int32
	// Verbosity is the klog level (default 2, as for workmap-scheduler).
	Verbosity int
	// Args are extra command-line flags.
	Args []string
}

// KubeScheduler is a running kube-scheduler started by StartKubeScheduler.
type KubeScheduler struct {
	p   *process
	url string
}

// KubeSchedulerConfig renders the KubeSchedulerConfiguration of a plain kube-scheduler for
// this cluster: its own kubeconfig, the given client rate limits, the default profile.
func (c *Cluster) KubeSchedulerConfig(opts KubeSchedulerOptions) ([]byte, error) {
	conn := map[string]any{"kubeconfig": c.kubeconfig("kube-scheduler")}
	if opts.QPS > 0 {
		conn["qps"], conn["burst"] = opts.QPS, opts.Burst
	}
	return yaml.Marshal(map[string]any{
		"apiVersion":       "kubescheduler.config.k8s.io/v1",
		"kind":             "KubeSchedulerConfiguration",
		"clientConnection": conn,
		"leaderElection":   map[string]any{"leaderElect": false},
	})
}

// StartKubeScheduler runs the control plane's kube-scheduler binary against the cluster and
// waits until it answers its health check. It can be stopped and started again; it is also
// stopped with the cluster.
func (c *Cluster) StartKubeScheduler(opts KubeSchedulerOptions) *KubeScheduler {
	c.t.Helper()
	cfg, err := c.KubeSchedulerConfig(opts)
	if err != nil {
		c.t.Fatal(err)
	}
	cfgPath := filepath.Join(c.Dir, "kube-scheduler.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		c.t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		c.t.Fatal(err)
	}
	verbosity := opts.Verbosity
	if verbosity == 0 {
		verbosity = 2
	}
	args := append([]string{
		"--config=" + cfgPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--v=" + strconv.Itoa(verbosity),
	}, opts.Args...)
	p, err := startProcess("kube-scheduler", filepath.Join(c.bin, "kube-scheduler"), c.Dir,
		[]string{"HOME=" + c.Dir, "KUBECACHEDIR=" + filepath.Join(c.Dir, "cache")}, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.procs = append(c.procs, p)
	s := &KubeScheduler{p: p, url: "https://" + hostPort(port)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The health check is the same as workmap-scheduler's.
	if err := (&WorkmapScheduler{p: p, c: c, healthz: s.url + "/healthz"}).waitHealthy(ctx); err != nil {
		c.t.Fatalf("kube-scheduler did not become healthy: %v (log %s)", err, p.logPath)
	}
	return s
}

// Stop stops the scheduler gracefully.
func (s *KubeScheduler) Stop() { s.p.stop(10 * time.Second) }

// LogPath is the scheduler's log file.
func (s *KubeScheduler) LogPath() string { return s.p.logPath }

// URL is the base URL of the scheduler's HTTPS endpoint (self-signed, loopback), e.g. for
// /metrics when it is among --authorization-always-allow-paths.
func (s *KubeScheduler) URL() string { return s.url }

// URL is the base URL of the scheduler's HTTPS endpoint (self-signed, loopback).
func (s *WorkmapScheduler) URL() string { return strings.TrimSuffix(s.healthz, "/healthz") }
