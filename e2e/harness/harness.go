package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/workmap/workmap/internal/needs"
)

// Options say what the cluster runs besides etcd and kube-apiserver.
type Options struct {
	// JobSet runs the real JobSet controller with its webhooks and installs its CRD.
	JobSet bool
	// CRDPaths are extra CRD files or folders to install (workmap's own are always installed).
	CRDPaths []string
	// CustomKinds are schemaless custom resource kinds to install.
	CustomKinds []CustomKind
	// Nodes are the kwok nodes to create. Default: DefaultNodes.
	Nodes []Node
	// NoScheduler leaves pods unscheduled (for tests that run their own scheduler).
	NoScheduler bool
	// NoGarbageCollector runs kube-controller-manager without its garbage collector: pods
	// whose owner references name missing objects stay (a test of how they are handled).
	NoGarbageCollector bool
	// APIServerFeatureGates are kube-apiserver's --feature-gates (e.g. to turn a beta
	// feature off, as an older or differently configured cluster would have it). They are
	// merged with those NativeGangs turns on; a gate named here wins.
	APIServerFeatureGates string
	// NativeGangs turns on Kubernetes' own gang scheduling (the release's NativeGangGates):
	// kube-apiserver serves its native API's Workloads and PodGroups,
	// kube-controller-manager runs the PodGroup protection controller, and the cluster's
	// kube-scheduler gang-schedules. Pods join a gang through spec.schedulingGroup.podGroupName.
	NativeGangs bool
	// Release is the Kubernetes release whose API server, controller manager and
	// kube-scheduler the cluster runs (default Release136).
	Release Release
	// FinishRunToCompletionAfter, when set, makes kwok finish the pods of run-to-completion
	// kinds (owned by a Job or a PyTorchJob) that long after they started running: they
	// succeed, as a training run ends. A pod's own RunForAnnotation (a duration, "90s") says
	// how long it runs instead. Unset, such pods run until a test finishes them
	// (OutcomeAnnotation).
	FinishRunToCompletionAfter time.Duration
	// FeatureGates are --feature-gates of every Kubernetes component the cluster starts:
	// kube-apiserver, kube-controller-manager and the cluster's own kube-scheduler (e.g.
	// NativeTopologyGates beside NativeGangs). They are merged with those NativeGangs turns
	// on; a gate named here wins, and APIServerFeatureGates win over them for kube-apiserver.
	// Schedulers started on demand (StartKubeScheduler) take their own.
	FeatureGates string
}

// Cluster is a running local control plane.
type Cluster struct {
	// Config is an admin rest.Config.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	Kube       kubernetes.Interface
	Dynamic    dynamic.Interface
	// Dir holds the logs, kubeconfigs and certificates of this cluster.
	Dir string

	env   *envtest.Environment
	procs []*process
	// bin is the default release's folder; releaseBin the folder of the release's own
	// components (the same folder for the default release).
	bin, releaseBin string
	release         Release
	t               T
	// gates are the --feature-gates of kube-controller-manager and kube-scheduler.
	gates string
	// apiServer is kube-apiserver once RestartAPIServer started it again (envtest's before);
	// restarts counts those restarts.
	apiServer *process
	restarts  int
}

// Start brings up a cluster for the test and tears it down when the test ends.
func Start(t T, opts Options) *Cluster {
	t.Helper()
	bin := BinDir(t)
	if opts.JobSet {
		if _, err := os.Stat(filepath.Join(bin, jobSetBinary)); err != nil {
			needs.Skip(t, "JobSet controller missing in %s: run `make controlplane`", bin)
		}
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "workmap-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	release := opts.Release.orDefault()
	c := &Cluster{Dir: dir, bin: bin, releaseBin: release.binDir(t, bin), release: release, t: t}
	t.Cleanup(c.stop)

	crds := append([]string{filepath.Join(root, "deploy", "crds")}, opts.CRDPaths...)
	if len(opts.CustomKinds) > 0 {
		crds = append(crds, c.writeCustomKinds(opts.CustomKinds))
	}
	if opts.JobSet {
		crds = append(crds, filepath.Join(bin, "jobset", "crds"))
	}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: true,
		// envtest waits 10 s by default for the CRDs to be served, which a loaded machine (the
		// test packages run side by side) can miss: a minute, as for operators' CRDs.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: time.Minute},
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: c.binary("kube-apiserver"), Out: c.logFile("kube-apiserver"), Err: c.logFile("kube-apiserver")},
			Etcd:      &envtest.Etcd{Out: c.logFile("etcd"), Err: c.logFile("etcd")},
		},
	}
	gates := ""
	if opts.NativeGangs {
		gates = release.NativeGangGates
		c.env.ControlPlane.APIServer.Configure().Set("runtime-config", release.NativeGangAPI()+"=true")
	}
	if c.gates, err = mergeFeatureGates(gates, opts.FeatureGates); err != nil {
		t.Fatalf("FeatureGates: %v", err)
	}
	apiServerGates, err := mergeFeatureGates(c.gates, opts.APIServerFeatureGates)
	if err != nil {
		t.Fatalf("APIServerFeatureGates: %v", err)
	}
	if apiServerGates != "" {
		c.env.ControlPlane.APIServer.Configure().Set("feature-gates", apiServerGates)
	}
	cfg, err := c.env.Start()
	if err != nil {
		// What started before the failure (etcd, kube-apiserver when the CRDs were not served
		// in time) is stopped, not left running after the test.
		if stopErr := c.env.Stop(); stopErr != nil {
			t.Logf("stopping what started: %v", stopErr)
		}
		c.env = nil
		t.Fatalf("starting etcd and kube-apiserver: %v", err)
	}
	c.Config = cfg
	c.Kubeconfig = c.kubeconfig("admin")
	c.Kube = kubernetes.NewForConfigOrDie(cfg)
	c.Dynamic = dynamic.NewForConfigOrDie(cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.startControllerManager(opts.NativeGangs, opts.NoGarbageCollector)
	if !opts.NoScheduler {
		c.startScheduler()
	}
	c.startKwok(opts.FinishRunToCompletionAfter)
	nodes := opts.Nodes
	if nodes == nil {
		nodes = DefaultNodes()
	}
	for _, n := range nodes {
		c.AddNode(ctx, n)
	}
	if err := c.waitForDefaultServiceAccount(ctx); err != nil {
		t.Fatalf("waiting for the default service account: %v", err)
	}
	if opts.JobSet {
		c.startJobSet(ctx)
	}
	return c
}

// binary is the path of a component's binary for the cluster's release.
func (c *Cluster) binary(name string) string { return c.release.binary(c.bin, c.releaseBin, name) }

// Release is the Kubernetes release the cluster runs.
func (c *Cluster) Release() Release { return c.release }

// logFile opens a component's log file for writing (appending).
func (c *Cluster) logFile(name string) *os.File {
	f, err := os.OpenFile(filepath.Join(c.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { f.Close() })
	return f
}

// kubeconfig provisions a system:masters user and writes its kubeconfig file.
func (c *Cluster) kubeconfig(name string) string {
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		c.t.Fatalf("adding user %s: %v", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		c.t.Fatal(err)
	}
	path := filepath.Join(c.Dir, name+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// run starts a component and registers it for teardown.
func (c *Cluster) run(name, binary string, env []string, args ...string) {
	c.runIn("", name, binary, env, args...)
}

// runIn starts a component in a working directory ("" is the test's).
func (c *Cluster) runIn(workDir, name, binary string, env []string, args ...string) {
	p, err := startProcess(name, c.binary(binary), c.Dir, workDir, append(env, "HOME="+c.Dir, "KUBECACHEDIR="+filepath.Join(c.Dir, "cache")), args...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.procs = append(c.procs, p)
}

// stop tears the cluster down in reverse order of start: controllers first, then
// kube-apiserver, then etcd. On failure it prints the end of every log.
func (c *Cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(10 * time.Second)
	}
	if c.apiServer != nil {
		c.apiServer.stop(10 * time.Second)
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			c.t.Logf("stopping kube-apiserver and etcd: %v", err)
		}
	}
	if c.t.Failed() {
		c.printLogs()
		c.t.Logf("control-plane logs kept in %s", c.Dir)
		return
	}
	_ = os.RemoveAll(c.Dir)
}

func (c *Cluster) printLogs() {
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "*.log"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		c.t.Logf("--- last lines of %s:\n%s", filepath.Base(l), bytes.Join(lines, []byte("\n")))
	}
}

// checkProcesses fails the test when a component has exited.
func (c *Cluster) checkProcesses() error {
	var dead []string
	for _, p := range c.procs {
		if done, err := p.exited(); done {
			dead = append(dead, fmt.Sprintf("%s (%v, log %s)", p.name, err, p.logPath))
		}
	}
	if len(dead) > 0 {
		return fmt.Errorf("component exited: %s", strings.Join(dead, "; "))
	}
	return nil
}
