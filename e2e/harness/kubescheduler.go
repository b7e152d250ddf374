package harness

import (
	"context"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
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
	// FeatureGates are its --feature-gates ("Name=bool,..."), e.g. NativeGangGates to run
	// the GangScheduling plugin (in a cluster started with NativeGangs). The cluster's own
	// gates are not passed on by themselves.
	FeatureGates string
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
	args := opts.Args
	if opts.FeatureGates != "" {
		gates, err := mergeFeatureGates(opts.FeatureGates)
		if err != nil {
			c.t.Fatalf("KubeSchedulerOptions.FeatureGates: %v", err)
		}
		args = append([]string{"--feature-gates=" + gates}, args...)
	}
	p, url := c.startSchedulerProcess("kube-scheduler", c.binary("kube-scheduler"), cfg, opts.Verbosity, args)
	s := &KubeScheduler{p: p, url: url}
	return s
}

// Stop stops the scheduler gracefully.
func (s *KubeScheduler) Stop() { s.p.stop(10 * time.Second) }

// LogPath is the scheduler's log file.
func (s *KubeScheduler) LogPath() string { return s.p.logPath }

// CPUProfile records the scheduler's CPU profile (started with OpenEndpointsFlag) for d, in
// pprof's format.
func (s *KubeScheduler) CPUProfile(ctx context.Context, d time.Duration) ([]byte, error) {
	return cpuProfile(ctx, s.url, d)
}

// URL is the base URL of the scheduler's HTTPS endpoint (self-signed, loopback), e.g. for
// /metrics when it is among --authorization-always-allow-paths.
func (s *KubeScheduler) URL() string { return s.url }

// Metrics reads the scheduler's /metrics (started with OpenEndpointsFlag), by metric family name.
func (s *KubeScheduler) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	return scrapeMetrics(ctx, s.url)
}

// URL is the base URL of the scheduler's HTTPS endpoint (self-signed, loopback).
func (s *WorkmapScheduler) URL() string { return strings.TrimSuffix(s.healthz, "/healthz") }
