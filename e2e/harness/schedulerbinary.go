package harness

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"
)

// BinaryOptions start any kube-scheduler-compatible binary (kube-scheduler itself, or a
// scheduler built on its framework such as scheduler-plugins') with a configuration of the
// caller's.
type BinaryOptions struct {
	// Name names the process (its log file and configuration file in the cluster's folder).
	Name string
	// Binary is the scheduler binary.
	Binary string
	// Config is a KubeSchedulerConfiguration (YAML or JSON). Its clientConnection and
	// leader election are replaced: see RenderSchedulerConfig.
	Config []byte
	// QPS and Burst set the client rate limits (clientConnection); zero keeps the binary's
	// defaults.
	QPS   float32
	Burst int32
	// Verbosity is the klog level (default 2).
	Verbosity int
	// Args are extra command-line flags.
	Args []string
}

// SchedulerProcess is a scheduler started by StartSchedulerBinary.
type SchedulerProcess struct {
	p   *process
	url string
}

// RenderSchedulerConfig returns config with clientConnection set to kubeconfig (and qps,
// burst when qps > 0) and leader election off, the way the harness runs kube-scheduler and
// workmap-scheduler; everything else (profiles, plugins, their arguments) is kept.
func RenderSchedulerConfig(config []byte, kubeconfig string, qps float32, burst int32) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if kind, _ := cfg["kind"].(string); kind != "" && kind != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("scheduler configuration: kind %s, want KubeSchedulerConfiguration", kind)
	}
	if cfg["apiVersion"] == nil {
		cfg["apiVersion"] = "kubescheduler.config.k8s.io/v1"
	}
	cfg["kind"] = "KubeSchedulerConfiguration"
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	conn["kubeconfig"] = kubeconfig
	if qps > 0 {
		conn["qps"], conn["burst"] = qps, burst
	}
	cfg["clientConnection"] = conn
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
	}
	le["leaderElect"] = false
	cfg["leaderElection"] = le
	return yaml.Marshal(cfg)
}

// StartSchedulerBinary runs a scheduler binary against the cluster with opts.Config (a
// kubeconfig of its own, system:masters; no leader election) and waits until it answers its
// health check. It is also stopped with the cluster.
func (c *Cluster) StartSchedulerBinary(opts BinaryOptions) *SchedulerProcess {
	c.t.Helper()
	cfg, err := RenderSchedulerConfig(opts.Config, c.kubeconfig(opts.Name), opts.QPS, opts.Burst)
	if err != nil {
		c.t.Fatal(err)
	}
	p, url := c.startSchedulerProcess(opts.Name, opts.Binary, cfg, opts.Verbosity, opts.Args)
	return &SchedulerProcess{p: p, url: url}
}

// Stop stops the scheduler gracefully.
func (s *SchedulerProcess) Stop() { s.p.stop(10 * time.Second) }

// LogPath is the scheduler's log file.
func (s *SchedulerProcess) LogPath() string { return s.p.logPath }

// URL is the base URL of the scheduler's HTTPS endpoint (self-signed, loopback).
func (s *SchedulerProcess) URL() string { return s.url }

// CPUProfile records the scheduler's CPU profile (started with OpenEndpointsFlag) for d, in
// pprof's format.
func (s *SchedulerProcess) CPUProfile(ctx context.Context, d time.Duration) ([]byte, error) {
	return cpuProfile(ctx, s.url, d)
}
