// Command serve is `make serve`: a local cluster to try workmap on, kept up until Ctrl-C. It
// starts a control plane with kwok GPU nodes, the JobSet controller and every framework
// operator the e2e tests run, workmap-scheduler, the example JobSet (gang-scheduled), and
// `workmap serve`, then prints the page's URL and the KUBECONFIG line to apply workloads of
// your own and compare workmap's tree and GPU totals with kubectl's view.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/kserve"
	"github.com/workmap/workmap/e2e/operators/kuberay"
	"github.com/workmap/workmap/e2e/operators/lws"
	"github.com/workmap/workmap/e2e/operators/milvus"
	"github.com/workmap/workmap/e2e/operators/mpijob"
	"github.com/workmap/workmap/e2e/operators/pytorchjob"
)

// operators are started in this order; each installs its CRDs and waits until it answers.
var operators = []operator{
	{"lws", "LeaderWorkerSet", lws.Tool, lws.Start},
	{"kuberay", "KubeRay", kuberay.Tool, kuberay.Start},
	{"pytorchjob", "Kubeflow training-operator (PyTorchJob)", pytorchjob.Tool, pytorchjob.Start},
	{"mpijob", "MPI operator", mpijob.Tool, mpijob.Start},
	{"kserve", "KServe (Standard mode)", kserve.Tool, kserve.Start},
	{"milvus", "Milvus operator", milvus.Tool, milvus.Start},
}

type operator struct {
	flag, name string
	// tool is the tool module hack/build-operator.sh builds the operator from.
	tool  string
	start func(context.Context, harness.T, *harness.Cluster)
}

// tools are the tool modules of operators, for `make serve` to build before it starts serve.
func tools(operators []operator) string {
	return joined(operators, func(o operator) string { return o.tool }, " ")
}

// operatorNames are the names -operators knows.
func operatorNames() string { return joined(operators, func(o operator) string { return o.flag }, ",") }

// joined is one field of each operator, joined with sep.
func joined(operators []operator, field func(operator) string, sep string) string {
	names := make([]string, len(operators))
	for i, o := range operators {
		names[i] = field(o)
	}
	return strings.Join(names, sep)
}

// selectOperators reads the -operators flag.
func selectOperators(only string) ([]operator, error) {
	switch only {
	case "all":
		return operators, nil
	case "none", "":
		return nil, nil
	}
	var out []operator
	for _, name := range strings.Split(only, ",") {
		i := slices.IndexFunc(operators, func(o operator) bool { return o.flag == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-operators: unknown operator %q (known: %s)", name, operatorNames())
		}
		out = append(out, operators[i])
	}
	return out, nil
}

func main() {
	workmap := flag.String("workmap", "bin/workmap", "the workmap CLI binary")
	addr := flag.String("addr", "127.0.0.1:8090", "where workmap serve listens")
	finishAfter := flag.Duration("finish-after", 2*time.Minute, "how long the pods of run-to-completion kinds (owned by a Job or a PyTorchJob) run before they succeed (0: until you finish them); a pod's "+harness.RunForAnnotation+" annotation says it for that pod")
	only := flag.String("operators", "all", "the operators to start: all, none, or a comma-separated list of "+operatorNames())
	printBuilds := flag.Bool("print-builds", false, "print the tool modules of the operators -operators selects (what hack/build-operator.sh builds for them) and exit; `make serve` builds those")
	flag.Parse()
	selected, err := selectOperators(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *printBuilds {
		fmt.Println(tools(selected))
		return
	}
	// The harness installs CRDs and webhooks with controller-runtime, whose log goes nowhere.
	ctrllog.SetLogger(logr.Discard())
	p := &harness.Program{}
	p.TeardownOnSignal() // kept up until a stop signal tears it down
	err = p.Run(func() error { return up(context.Background(), p, *workmap, *addr, selected, *finishAfter) })
	if err == nil || p.Interrupted() {
		select {}
	}
	fmt.Println("\n==> Tearing down the control plane")
	p.Teardown()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nserve FAILED: %v\n", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func up(ctx context.Context, p *harness.Program, workmap, addr string, operators []operator, finishAfter time.Duration) error {
	step("Starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (4 nodes x 8 GPUs), JobSet")
	if finishAfter > 0 {
		step("Pods of run-to-completion kinds (Jobs, PyTorchJobs) succeed %s after they start (-finish-after; a pod's %s annotation says it for that pod)", finishAfter, harness.RunForAnnotation)
	}
	c := harness.Start(p, harness.Options{JobSet: true, FinishRunToCompletionAfter: finishAfter, Nodes: []harness.Node{
		{Name: "gpu-node-0", GPUs: 8}, {Name: "gpu-node-1", GPUs: 8}, {Name: "gpu-node-2", GPUs: 8}, {Name: "gpu-node-3", GPUs: 8},
	}})
	for _, o := range operators {
		step("Starting %s", o.name)
		o.start(ctx, p, c)
	}
	step("Starting workmap-scheduler")
	c.StartWorkmapScheduler(harness.SchedulerOptions{})

	step("Applying the example JobSet (1 leader + 2 workers, 4 GPUs each, gang-scheduled by workmap-scheduler)")
	js, err := harness.ExampleJobSet("leader-workers", harness.SchedulerName, 0)
	if err != nil {
		return err
	}
	if _, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the example JobSet: %w", err)
	}

	step("Starting workmap serve")
	log, err := os.Create(filepath.Join(c.Dir, "workmap-serve.log"))
	if err != nil {
		return err
	}
	p.Cleanup(func() { log.Close() })
	serve := exec.Command(workmap, "serve", "-A", "--addr", addr, "--kubeconfig", c.Kubeconfig)
	serve.Stdout, serve.Stderr = log, log
	if err := serve.Start(); err != nil {
		return fmt.Errorf("starting %s serve: %w", workmap, err)
	}
	p.Cleanup(func() { _ = serve.Process.Signal(syscall.SIGTERM); _ = serve.Wait() })
	url := "http://" + addr + "/"
	if err := waitHealthy(ctx, url+"healthz"); err != nil {
		return fmt.Errorf("workmap serve never answered at %s (log %s): %w", url, log.Name(), err)
	}

	fmt.Printf(`
workmap serve:  %s   (metrics at %smetrics)
Use the cluster from another terminal:
  export KUBECONFIG=%s
  export PATH=%s:$PATH   # kubectl of the control plane
  kubectl apply -f your-workload.yaml; bin/workmap tree <kind>/<name>
Logs of every component: %s
Press Ctrl-C to stop.
`, url, url, c.Kubeconfig, harness.BinDir(p), c.Dir)
	return nil
}

// waitHealthy polls url until it answers 200.
func waitHealthy(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
