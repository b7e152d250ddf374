package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/grouper"
)

// SchedulerName is the profile (spec.schedulerName) of the shipped configuration.
const SchedulerName = "workmap-scheduler"

// SchedulerOptions adjust the shipped scheduler configuration (deploy/scheduler/config.yaml)
// for a test. Zero values keep the shipped values.
type SchedulerOptions struct {
	// PermitWaitingTimeSeconds and PodGroupBackoffSeconds override the plugin's arguments.
	PermitWaitingTimeSeconds int64
	PodGroupBackoffSeconds   int64
	// LeaderElect keeps leader election on (its Lease lives in the namespace workmap-system,
	// which is created).
	LeaderElect bool
	// LeaseDuration and RenewDeadline override leader election's (15s and 10s): a leader
	// that cannot renew its Lease within RenewDeadline (kube-apiserver away) exits.
	LeaseDuration, RenewDeadline time.Duration
	// QPS and Burst set the client rate limits (clientConnection).
	QPS   float32
	Burst int32
	// Verbosity is the klog level (default 2).
	Verbosity int
	// Args are extra command-line flags (kube-scheduler's).
	Args []string
	// Kubeconfig replaces the scheduler's own kubeconfig (e.g. an APIRecorder's).
	Kubeconfig string
	// TopologyLevels are the plugin's topologyLevels, broad to narrow.
	TopologyLevels []TopologyLevel
}

// TopologyLevel is one of the plugin's topology levels: a name and its node label.
type TopologyLevel = grouper.TopologyLevel

// WorkmapScheduler is a running workmap-scheduler process.
type WorkmapScheduler struct {
	p       *process
	c       *Cluster
	healthz string
}

// SchedulerConfig renders the shipped configuration for this cluster.
func (c *Cluster) SchedulerConfig(opts SchedulerOptions) ([]byte, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "scheduler", "config.yaml"))
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("deploy/scheduler/config.yaml: %w", err)
	}
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = c.kubeconfig("workmap-scheduler")
	}
	conn := map[string]any{"kubeconfig": kubeconfig}
	if opts.QPS > 0 {
		conn["qps"], conn["burst"] = opts.QPS, opts.Burst
	}
	cfg["clientConnection"] = conn
	election := cfg["leaderElection"].(map[string]any)
	election["leaderElect"] = opts.LeaderElect
	if opts.LeaseDuration > 0 {
		election["leaseDuration"] = opts.LeaseDuration.String()
	}
	if opts.RenewDeadline > 0 {
		election["renewDeadline"] = opts.RenewDeadline.String()
	}
	profiles, _ := cfg["profiles"].([]any)
	for _, p := range profiles {
		pcs, _ := p.(map[string]any)["pluginConfig"].([]any)
		for _, pc := range pcs {
			args, _ := pc.(map[string]any)["args"].(map[string]any)
			if pc.(map[string]any)["name"] != "WorkmapGang" || args == nil {
				continue
			}
			if opts.PermitWaitingTimeSeconds > 0 {
				args["permitWaitingTimeSeconds"] = opts.PermitWaitingTimeSeconds
			}
			if opts.PodGroupBackoffSeconds > 0 {
				args["podGroupBackoffSeconds"] = opts.PodGroupBackoffSeconds
			}
			if len(opts.TopologyLevels) > 0 {
				args["topologyLevels"] = opts.TopologyLevels
			}
		}
	}
	return yaml.Marshal(cfg)
}

// StartWorkmapScheduler runs workmap-scheduler against the cluster and waits until it
// answers its health check. It is stopped with the cluster.
func (c *Cluster) StartWorkmapScheduler(opts SchedulerOptions) *WorkmapScheduler {
	c.t.Helper()
	binary, err := SchedulerBinary()
	if err != nil {
		c.t.Fatal(err)
	}
	cfg, err := c.SchedulerConfig(opts)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if opts.LeaderElect {
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workmap-system"}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			c.t.Fatal(err)
		}
	}
	p, url := c.startSchedulerProcess("workmap-scheduler", binary, cfg, opts.Verbosity, opts.Args)
	s := &WorkmapScheduler{p: p, c: c, healthz: url + "/healthz"}
	return s
}

// startSchedulerProcess runs a scheduler binary with a configuration on a free loopback port,
// registers it for teardown and waits until it answers its health check. It returns the
// process and the base URL of its HTTPS endpoint.
func (c *Cluster) startSchedulerProcess(name, binary string, config []byte, verbosity int, extraArgs []string) (*process, string) {
	c.t.Helper()
	cfgPath := filepath.Join(c.Dir, name+".yaml")
	if err := os.WriteFile(cfgPath, config, 0o644); err != nil {
		c.t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		c.t.Fatal(err)
	}
	if verbosity == 0 {
		verbosity = 2
	}
	args := append([]string{
		"--config=" + cfgPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--v=" + strconv.Itoa(verbosity),
	}, extraArgs...)
	p, err := startProcess(name, binary, c.Dir, "", []string{"HOME=" + c.Dir, "KUBECACHEDIR=" + filepath.Join(c.Dir, "cache")}, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.procs = append(c.procs, p)
	url := "https://" + hostPort(port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := waitHealthy(ctx, p, url+"/healthz"); err != nil {
		c.t.Fatalf("%s did not become healthy: %v (log %s)", name, err, p.logPath)
	}
	return p, url
}

// waitHealthy waits until a scheduler's health check answers OK.
func waitHealthy(ctx context.Context, p *process, healthz string) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed
	return poll(ctx, 100*time.Millisecond, func() (bool, error) {
		if done, err := p.exited(); done {
			return false, fmt.Errorf("exited: %v", err)
		}
		resp, err := client.Get(healthz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// Kill stops the scheduler at once (SIGKILL): no cleanup, as in a crash.
func (s *WorkmapScheduler) Kill() {
	_ = syscall.Kill(-s.p.cmd.Process.Pid, syscall.SIGKILL)
	<-s.p.done
}

// Stop stops the scheduler gracefully.
func (s *WorkmapScheduler) Stop() { s.p.stop(10 * time.Second) }

// Exited reports whether the scheduler process has stopped (killed, stopped, or exited on
// its own, as kube-scheduler does when it loses its leadership).
func (s *WorkmapScheduler) Exited() bool {
	done, _ := s.p.exited()
	return done
}

// LogPath is the scheduler's log file.
func (s *WorkmapScheduler) LogPath() string { return s.p.logPath }

// OpenEndpointsFlag lets a scheduler serve /metrics and its profiles (/debug/pprof) without
// authorization (on loopback, for tests and benchmarks).
const OpenEndpointsFlag = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*"

// Metrics reads the scheduler's /metrics (started with OpenEndpointsFlag) (Prometheus text format), by metric family name.
func (s *WorkmapScheduler) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	return scrapeMetrics(ctx, s.URL())
}

// CPUProfile records the scheduler's CPU profile (started with OpenEndpointsFlag) for d, in
// pprof's format.
func (s *WorkmapScheduler) CPUProfile(ctx context.Context, d time.Duration) ([]byte, error) {
	return cpuProfile(ctx, s.URL(), d)
}

// HeapProfile reads the scheduler's heap profile (started with OpenEndpointsFlag), after a
// garbage collection, in pprof's format.
func (s *WorkmapScheduler) HeapProfile(ctx context.Context) ([]byte, error) {
	return heapProfile(ctx, s.URL())
}

// Goroutines reads the scheduler's goroutines, grouped by stack, as text.
func (s *WorkmapScheduler) Goroutines(ctx context.Context) ([]byte, error) {
	return goroutines(ctx, s.URL())
}

// goroutines reads a Go process's goroutines, grouped by stack (debug=1), from its base URL.
func goroutines(ctx context.Context, base string) ([]byte, error) {
	return loopbackRead(ctx, base+"/debug/pprof/goroutine?debug=1", 30*time.Second)
}

// heapProfile reads a Go process's heap profile, after a garbage collection, from its base URL.
func heapProfile(ctx context.Context, base string) ([]byte, error) {
	return loopbackRead(ctx, base+"/debug/pprof/heap?gc=1", 30*time.Second)
}

// cpuProfile records a scheduler's CPU profile for d from its base URL.
func cpuProfile(ctx context.Context, base string, d time.Duration) ([]byte, error) {
	return loopbackRead(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, max(int(d.Seconds()), 1)), d+30*time.Second)
}

// loopbackRead is loopbackGet's whole body.
func loopbackRead(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	body, err := loopbackGet(ctx, url, timeout)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// loopbackTransport is the one transport of loopbackGet: its connections are reused, not left
// open and idle in a new transport per request (which holds a goroutine in the server for
// each, until the server's idle timeout closes it).
var loopbackTransport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // loopback, self-signed

// loopbackGet GETs a URL of a component on loopback (self-signed) and returns the body of
// its 200 answer.
func loopbackGet(ctx context.Context, url string, timeout time.Duration) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: timeout, Transport: loopbackTransport}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// scrapeMetrics reads a scheduler's /metrics at its base URL, by metric family name.
func scrapeMetrics(ctx context.Context, base string) (map[string]*dto.MetricFamily, error) {
	body, err := loopbackGet(ctx, base+"/metrics", 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(body)
}

// Counter sums a metric family's samples (counters and gauges) whose labels include the
// given ones; a family the process does not export fails the test (a counter that vanished
// must not read as zero).
func Counter(t T, families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := CounterOf(families, name, labels)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// CounterOf is Counter for callers that handle a missing family themselves.
func CounterOf(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, error) {
	family, ok := families[name]
	if !ok {
		return 0, fmt.Errorf("metric %s is not exported", name)
	}
	total := 0.0
	for _, m := range family.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total, nil
}
