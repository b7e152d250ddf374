package harness

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

//go:embed stages.yaml
var stages []byte

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// OutcomeAnnotation on a running pod makes kwok finish it: "Succeeded" or "Failed".
const OutcomeAnnotation = "e2e.workmap.dev/outcome"

// RunForAnnotation on a pod of a run-to-completion kind says how long it runs before it
// succeeds (a duration, "90s"), when the cluster finishes such pods
// (Options.FinishRunToCompletionAfter).
const RunForAnnotation = "playground.workmap.dev/run-for"

// runToCompletionOwners are the kinds whose pods run to completion: owned by a Job (a
// JobSet's, an MPIJob's launcher, a RayJob's submitter) or by a PyTorchJob.
var runToCompletionOwners = []string{"Job", "PyTorchJob"}

// Node is a fake node. Empty quantities take a roomy default (64 CPUs, 512Gi of memory, 1Ti
// of ephemeral storage, 110 pods), so real samples fit as they are written.
type Node struct {
	Name             string
	GPUs             int64
	CPU              string
	Memory           string
	EphemeralStorage string
	Pods             int64
	// Labels are added to the node's own (kubernetes.io/hostname, type=kwok), e.g. its rack.
	Labels map[string]string
	// Taints are the node's taints.
	Taints []corev1.Taint
}

// DefaultNodes are two nodes with 8 GPUs each.
func DefaultNodes() []Node {
	return []Node{{Name: "gpu-node-0", GPUs: 8}, {Name: "gpu-node-1", GPUs: 8}}
}

func (c *Cluster) startKwok(finishAfter time.Duration) {
	cfg := filepath.Join(c.Dir, "kwok-stages.yaml")
	all := stages
	if finishAfter > 0 {
		finish, err := finishStage(finishAfter)
		if err != nil {
			c.t.Fatal(err)
		}
		all = append(append(append([]byte(nil), stages...), "\n---\n"...), finish...)
	}
	if err := os.WriteFile(cfg, all, 0o644); err != nil {
		c.t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		c.t.Fatal(err)
	}
	c.run("kwok", "kwok", nil,
		"--kubeconfig="+c.kubeconfig("kwok"),
		"--config="+cfg,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.1/16",
		"--node-ip=10.0.0.1",
		"--server-address="+hostPort(port),
	)
}

// AddNode creates a kwok node with the given capacity; kwok makes it Ready.
func (c *Cluster) AddNode(ctx context.Context, n Node) {
	c.t.Helper()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(orDefault(n.CPU, "64")),
		corev1.ResourceMemory:           resource.MustParse(orDefault(n.Memory, "512Gi")),
		corev1.ResourceEphemeralStorage: resource.MustParse(orDefault(n.EphemeralStorage, "1Ti")),
		corev1.ResourcePods:             resource.MustParse(strconv.FormatInt(max(n.Pods, 110), 10)),
	}
	if n.GPUs > 0 {
		capacity["nvidia.com/gpu"] = *resource.NewQuantity(n.GPUs, resource.DecimalSI)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels:      map[string]string{"kubernetes.io/hostname": n.Name, "type": "kwok"},
		},
		Spec:   corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	maps.Copy(node.Labels, n.Labels)
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating node %s: %v", n.Name, err)
	}
}

// SetPodOutcome asks kwok to finish a running pod as Succeeded or Failed.
func (c *Cluster) SetPodOutcome(ctx context.Context, namespace, name string, phase corev1.PodPhase) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, OutcomeAnnotation, phase)
	_, err := c.Kube.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// finishStage is a kwok stage that makes the running pods of run-to-completion kinds that no
// OutcomeAnnotation decides succeed after they ran for after (or their RunForAnnotation): the
// pod-succeeded stage of stages.yaml, with that selector and delay.
func finishStage(after time.Duration) ([]byte, error) {
	const outcome = `    - key: '.metadata.annotations["e2e.workmap.dev/outcome"]'
      operator: In
      values: ['Succeeded']
`
	for _, doc := range strings.Split(string(stages), "\n---\n") {
		if !strings.Contains(doc, "name: pod-succeeded\n") || !strings.Contains(doc, outcome+"  next:") {
			continue
		}
		selector := fmt.Sprintf(`    - key: '.metadata.annotations["e2e.workmap.dev/outcome"]'
      operator: DoesNotExist
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: ['%s']
  delay:
    durationMilliseconds: %d
    durationFrom:
      expressionFrom: '.metadata.annotations["%s"]'
`, strings.Join(runToCompletionOwners, "', '"), after.Milliseconds(), RunForAnnotation)
		doc = strings.Replace(doc, "name: pod-succeeded\n", "name: pod-run-to-completion\n", 1)
		return []byte(strings.Replace(doc, outcome, selector, 1)), nil
	}
	return nil, fmt.Errorf("stages.yaml has no pod-succeeded stage selecting on %s to build the run-to-completion stage from", OutcomeAnnotation)
}
