// Command demo is `make demo`: it starts a local control plane (etcd, kube-apiserver,
// kube-controller-manager, kwok GPU nodes and the real JobSet controller), runs
// workmap-scheduler, applies the example JobSet, waits until its 3 pods are bound as one
// gang, prints the live `workmap tree` and the PodGroup, and tears everything down. It exits 0
// only if all of that happened.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

const (
	example   = "examples/jobset-leader-workers.yaml"
	jobSet    = "leader-workers"
	podGroup  = "leader-workers-all"
	gangSize  = 3
	wantGPUs  = 12
	waitLimit = 2 * time.Minute
)

func main() {
	workmap := flag.String("workmap", "bin/workmap", "the workmap CLI binary")
	flag.Parse()
	d := &demo{}
	d.TeardownOnSignal()
	err := d.run(*workmap)
	d.teardown()
	if d.Interrupted() {
		select {} // the signal's teardown exits
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo FAILED: %v\n", err)
		if d.dir != "" {
			fmt.Fprintf(os.Stderr, "control-plane logs: %s\n", d.dir)
		}
		os.Exit(1)
	}
	fmt.Println("\ndemo passed: the example JobSet was gang-scheduled by workmap-scheduler (3 pods, 12 GPUs).")
}

// demo is one run of the demo; its harness.Program stands in for a test.
type demo struct {
	harness.Program
	dir string
}

func (d *demo) teardown() {
	fmt.Println("\n==> Tearing down the control plane")
	d.Teardown()
}

func step(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

func (d *demo) run(workmap string) error { return d.Run(func() error { return d.steps(workmap) }) }

func (d *demo) steps(workmap string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	step("Starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kwok (2 nodes x 8 GPUs), JobSet v0.12.0")
	start := time.Now()
	c := harness.Start(d, harness.Options{
		JobSet: true, NoScheduler: true,
		Nodes: []harness.Node{{Name: "gpu-node-0", GPUs: 8}, {Name: "gpu-node-1", GPUs: 8}},
	})
	d.dir = c.Dir
	fmt.Printf("    ready in %s (logs in %s)\n", time.Since(start).Round(100*time.Millisecond), c.Dir)

	step("Starting workmap-scheduler (kube-scheduler + WorkmapGang plugin + pod-grouper, deploy/scheduler/config.yaml)")
	c.StartWorkmapScheduler(harness.SchedulerOptions{})

	step("Applying %s (1 leader + 2 workers, 4 GPUs each, schedulerName: workmap-scheduler)", example)
	docs, err := manifest.ReadFile(example)
	if err != nil {
		return err
	}
	created := time.Now()
	if _, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, docs[0].Object, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the JobSet: %w", err)
	}

	step("Waiting for the gang: all %d pods bound, or none", gangSize)
	pods, err := waitForGang(ctx, c)
	if err != nil {
		return err
	}
	first, last := pods[0].bound, pods[0].bound
	for _, p := range pods {
		fmt.Printf("    %-40s -> %s\n", p.name, p.node)
		first, last = minTime(first, p.bound), maxTime(last, p.bound)
	}
	fmt.Printf("    %d pods bound %s after create; never a partial gang while waiting\n", len(pods), last.Sub(created).Round(time.Millisecond))

	// The PodGroup's status follows the bindings: the tree shows it once it has.
	if err := waitForPodGroupStatus(ctx, c); err != nil {
		return err
	}
	step("workmap tree jobset/%s (live, through the kubeconfig)", jobSet)
	tree, err := runCommand(workmap, "tree", "jobset/"+jobSet, "-n", "default", "--kubeconfig", c.Kubeconfig)
	if err != nil {
		return err
	}
	fmt.Print(tree)
	if err := checkTotals(workmap, c.Kubeconfig); err != nil {
		return err
	}

	step("The PodGroup workmap-scheduler made and keeps current")
	kubectl := filepath.Join(harness.BinDir(d), "kubectl")
	out, err := runCommand(kubectl, "--kubeconfig", c.Kubeconfig, "get", "podgroups.scheduling.x-k8s.io", podGroup, "-n", "default")
	if err != nil {
		return err
	}
	fmt.Print(out)
	return nil
}

type boundPod struct {
	name, node string
	bound      time.Time
}

// waitForGang waits until the gang's pods are all bound, failing if some but not all are bound
// at any observation while waiting.
func waitForGang(ctx context.Context, c *harness.Cluster) ([]boundPod, error) {
	deadline := time.Now().Add(waitLimit)
	seen := map[string]time.Time{}
	for time.Now().Before(deadline) {
		list, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + jobSet})
		if err != nil {
			return nil, err
		}
		var pods []boundPod
		for _, p := range list.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			if _, ok := seen[p.Name]; !ok {
				seen[p.Name] = time.Now()
			}
			pods = append(pods, boundPod{name: p.Name, node: p.Spec.NodeName, bound: seen[p.Name]})
		}
		if len(pods) == gangSize && len(list.Items) == gangSize {
			return pods, nil
		}
		if len(pods) > 0 && len(pods) < gangSize && time.Since(minBound(pods)) > 5*time.Second {
			return nil, fmt.Errorf("partial gang: %d of %d pods bound for more than 5s", len(pods), gangSize)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("the gang was not bound within %s (see workmap-scheduler.log)", waitLimit)
}

func minBound(pods []boundPod) time.Time {
	t := pods[0].bound
	for _, p := range pods {
		t = minTime(t, p.bound)
	}
	return t
}

// checkTotals reads `workmap tree -o json` and checks the tree has the gang's pods and GPUs.
func checkTotals(workmap, kubeconfig string) error {
	out, err := runCommand(workmap, "tree", "jobset/"+jobSet, "-n", "default", "--kubeconfig", kubeconfig, "-o", "json")
	if err != nil {
		return err
	}
	var tree struct {
		Totals struct {
			Pods int64   `json:"pods"`
			GPUs float64 `json:"gpus"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		return fmt.Errorf("workmap tree -o json: %w", err)
	}
	if tree.Totals.Pods != gangSize || tree.Totals.GPUs != wantGPUs {
		return fmt.Errorf("workmap tree: %d pods and %g GPUs, want %d and %d", tree.Totals.Pods, tree.Totals.GPUs, gangSize, wantGPUs)
	}
	return nil
}

// waitForPodGroupStatus waits until the PodGroup reports the gang scheduled.
func waitForPodGroupStatus(ctx context.Context, c *harness.Cluster) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		pg, err := c.Dynamic.Resource(v1alpha1.Resource).Namespace("default").Get(ctx, podGroup, metav1.GetOptions{})
		if err == nil {
			phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
			scheduled, _, _ := unstructured.NestedInt64(pg.Object, "status", "scheduled")
			if scheduled == gangSize && (phase == "Scheduled" || phase == "Running") {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("PodGroup %s never reported %d pods scheduled", podGroup, gangSize)
}

func runCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return string(out), nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
