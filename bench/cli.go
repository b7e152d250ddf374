package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/live"
)

// CLIOptions size the CLI measurement: `workmap tree` on one JobSet of Jobs × PodsPerJob
// pods, made by the real JobSet and Job controllers.
type CLIOptions struct {
	Workmap          string // the CLI binary
	Jobs, PodsPerJob int
	// Runs is how many timed runs the median is taken over.
	Runs    int
	Timeout time.Duration
	Log     io.Writer
}

// CLIResult is the measurement.
type CLIResult struct {
	Pods       int `json:"pods"`
	Jobs       int `json:"jobs"`
	PodsPerJob int `json:"pods_per_job"`
	// ChildKinds is the number of child kinds of the JobSet definition: the request target
	// is ChildKinds + 3.
	ChildKinds int      `json:"child_kinds"`
	Requests   int      `json:"requests"`
	Paths      []string `json:"paths"`
	// Ms is the median wall time of Runs runs (process start to exit), RunsMs all of them.
	Ms     float64   `json:"ms"`
	RunsMs []float64 `json:"runs_ms"`
	// SetupSeconds is how long the controllers took to create every pod.
	SetupSeconds float64 `json:"setup_seconds"`
	// OfflineMs is the median wall time of `tree -f` on the example JobSet (no cluster:
	// process start, the JobSet definition compiled, one small expansion), VersionMs of `version`
	// (process start).
	OfflineMs float64 `json:"offline_ms"`
	VersionMs float64 `json:"version_ms"`
	// ListPodsMs and ResolveMs are parts of the live tree timed in the bench's own (warm)
	// process, medians of Runs: one list of the JobSet's pods as protobuf, as the CLI lists
	// them (the API server's answer and its decoding), and the whole resolution the CLI makes
	// once it holds the JobSet and its definition (every list, the pods turned into
	// unstructured objects for the definition's expressions, the expansion).
	ListPodsMs float64 `json:"list_pods_ms,omitempty"`
	ResolveMs  float64 `json:"resolve_ms,omitempty"`
}

const cliNamespace, cliJobSet = "cli", "train"

// MeasureCLI creates the JobSet, waits for all its pods (left unscheduled: no scheduler
// serves their schedulerName), counts the requests of one `workmap tree` through a counting
// proxy and times Runs runs against the API server directly.
func MeasureCLI(ctx context.Context, c *harness.Cluster, o CLIOptions) (CLIResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res := CLIResult{Pods: o.Jobs * o.PodsPerJob, Jobs: o.Jobs, PodsPerJob: o.PodsPerJob}
	reg, err := catalog.Registry()
	if err != nil {
		return res, err
	}
	def, ok := reg.Lookup(schema.GroupKind{Group: harness.JobSetResource.Group, Kind: "JobSet"})
	if !ok {
		return res, fmt.Errorf("the catalog has no JobSet definition")
	}
	res.ChildKinds = len(def.Source.Spec.Children)

	if err := CreateNamespace(ctx, c.Kube, cliNamespace, nil); err != nil {
		return res, err
	}
	w, err := WatchPods(ctx, c.Kube, cliNamespace, res.Pods)
	if err != nil {
		return res, err
	}
	defer w.Stop()
	start := time.Now()
	if _, err := c.Dynamic.Resource(harness.JobSetResource).Namespace(cliNamespace).Create(ctx, cliJobSetObject(o), metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("creating the JobSet: %w", err)
	}
	if err := w.WaitAdded(ctx); err != nil {
		return res, err
	}
	res.SetupSeconds = round(time.Since(start).Seconds(), 1)
	fmt.Fprintf(o.Log, "  the controllers made %d pods in %.0fs\n", res.Pods, res.SetupSeconds)

	home, err := tempDir()
	if err != nil {
		return res, err
	}
	defer removeAll(home)
	proxy, err := startCountingProxy(c.Config)
	if err != nil {
		return res, err
	}
	defer proxy.close()
	proxyConfig := filepath.Join(home, "proxy.kubeconfig")
	if err := os.WriteFile(proxyConfig, []byte(proxy.kubeconfig()), 0o600); err != nil {
		return res, err
	}
	workmap := func(args ...string) ([]byte, time.Duration, error) {
		cmd := exec.CommandContext(ctx, o.Workmap, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "KUBECACHEDIR="+filepath.Join(home, "cache"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t := time.Now()
		err := cmd.Run()
		d := time.Since(t)
		if err != nil {
			return nil, d, fmt.Errorf("%s %v: %w\n%s", o.Workmap, args, err, out.Bytes())
		}
		return out.Bytes(), d, nil
	}
	tree := func(kubeconfig string, extra ...string) ([]byte, time.Duration, error) {
		return workmap(append([]string{"tree", "jobset/" + cliJobSet, "-n", cliNamespace, "--kubeconfig", kubeconfig}, extra...)...)
	}
	timed := func(args ...string) (float64, error) {
		var runs []float64
		for range max(o.Runs, 1) {
			_, d, err := workmap(args...)
			if err != nil {
				return 0, err
			}
			runs = append(runs, ms(d))
		}
		return round(median(runs), 1), nil
	}
	out, _, err := tree(proxyConfig, "-o", "json")
	if err != nil {
		return res, err
	}
	if err := checkTree(out, res.Pods); err != nil {
		return res, err
	}
	proxy.reset()
	if _, _, err := tree(proxyConfig); err != nil {
		return res, err
	}
	res.Paths = proxy.requests()
	res.Requests = len(res.Paths)
	for range max(o.Runs, 1) {
		_, d, err := tree(c.Kubeconfig)
		if err != nil {
			return res, err
		}
		res.RunsMs = append(res.RunsMs, round(ms(d), 1))
	}
	res.Ms = round(median(res.RunsMs), 1)
	if res.OfflineMs, err = timed("tree", "-f", "examples/jobset-leader-workers.yaml"); err != nil {
		return res, err
	}
	if res.VersionMs, err = timed("version"); err != nil {
		return res, err
	}
	res.ListPodsMs, res.ResolveMs, err = measureTreeParts(ctx, c, def, o.Runs)
	return res, err
}

// measureTreeParts times, in this process, one list of the JobSet's pods as the CLI makes it
// and the whole resolution the CLI makes once it holds the JobSet and its definition: medians
// of runs.
func measureTreeParts(ctx context.Context, c *harness.Cluster, def *definitions.Definition, runs int) (listMs, resolveMs float64, err error) {
	pods, err := live.NewPodsClient(c.Config)
	if err != nil {
		return 0, 0, err
	}
	root, err := c.Dynamic.Resource(harness.JobSetResource).Namespace(cliNamespace).Get(ctx, cliJobSet, metav1.GetOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("reading the JobSet: %w", err)
	}
	sel, err := def.PodLabelSelector(root)
	if err != nil {
		return 0, 0, err
	}
	list := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()}
	resolver := &live.Resolver{Client: c.Dynamic, Pods: pods}
	var lists, resolves []float64
	for range max(runs, 1) {
		t := time.Now()
		if _, err := pods.Pods(cliNamespace).List(ctx, list); err != nil {
			return 0, 0, fmt.Errorf("listing the pods: %w", err)
		}
		lists = append(lists, ms(time.Since(t)))
		t = time.Now()
		if _, err := resolver.Resolve(ctx, def, root); err != nil {
			return 0, 0, fmt.Errorf("resolving the JobSet: %w", err)
		}
		resolves = append(resolves, ms(time.Since(t)))
	}
	return round(median(lists), 1), round(median(resolves), 1), nil
}

func cliJobSetObject(o CLIOptions) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": cliJobSet, "namespace": cliNamespace},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(o.Jobs),
			"template": map[string]any{"spec": map[string]any{
				"parallelism": int64(o.PodsPerJob), "completions": int64(o.PodsPerJob), "backoffLimit": int64(0),
				"template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never",
					// No scheduler serves this name: the pods stay Pending.
					"schedulerName": "bench-unscheduled",
					"containers": []any{map[string]any{
						"name": "trainer", "image": "registry.example.com/trainer:1.0",
						"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": int64(1)}},
					}},
				}},
			}},
		}}},
	}}
}

// checkTree checks that `tree -o json` found every pod.
func checkTree(out []byte, pods int) error {
	var tree struct {
		Totals struct {
			Pods int `json:"pods"`
		} `json:"totals"`
		Roles []struct {
			PodsFound *int `json:"podsFound"`
		} `json:"roles"`
	}
	if err := json.Unmarshal(out, &tree); err != nil {
		return fmt.Errorf("workmap tree -o json: %w", err)
	}
	found := 0
	for _, r := range tree.Roles {
		if r.PodsFound != nil {
			found += *r.PodsFound
		}
	}
	if tree.Totals.Pods != pods || found != pods {
		return fmt.Errorf("workmap tree: %d pods expected and %d found, want %d", tree.Totals.Pods, found, pods)
	}
	return nil
}

// countingProxy forwards plain-HTTP requests to the API server with the admin credentials
// and records them: the CLI's requests, counted from outside the process.
type countingProxy struct {
	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	seen []string
}

func startCountingProxy(cfg *rest.Config) (*countingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{ln: ln}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }, Transport: rt}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.URL.RequestURI())
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *countingProxy) kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster: {server: "http://%s"}
users:
- name: proxy
  user: {}
contexts:
- name: proxy
  context: {cluster: proxy, user: proxy}
current-context: proxy
`, p.ln.Addr())
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = nil
}

func (p *countingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *countingProxy) close() { _ = p.srv.Close() }
