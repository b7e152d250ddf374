package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/workmap/workmap/e2e/harness"
)

// ScaleNodes names n kwok nodes of gpus GPUs each.
func ScaleNodes(n int, gpus int64) []harness.Node {
	nodes := make([]harness.Node, n)
	for i := range nodes {
		nodes[i] = harness.Node{Name: fmt.Sprintf("scale-node-%d", i), GPUs: gpus}
	}
	return nodes
}

// AddNodes creates the kwok nodes through the harness, workers at a time.
func AddNodes(ctx context.Context, r *Runner, c *harness.Cluster, nodes []harness.Node, workers int) error {
	return forEach(nodes, workers, func(n harness.Node) error {
		// Step turns the harness's Fatal (a panic) into an error in this goroutine.
		return r.Step(func() error { c.AddNode(ctx, n); return nil })
	})
}

// NotReadyTaint is the taint the API server's TaintNodesByCondition admission puts on every
// new node; the node lifecycle controller removes it once the node is Ready.
const NotReadyTaint = "node.kubernetes.io/not-ready"

// WaitNodesReady waits until want nodes are Ready and carry no NoSchedule taint. Kwok makes
// new nodes Ready within seconds, but the node lifecycle controller lifts their not-ready
// taint at its client's 20 qps (a minute for 500 nodes), so the bench lifts it itself, workers
// at a time, from each node kwok has made Ready, as that controller would.
func WaitNodesReady(ctx context.Context, kube kubernetes.Interface, want, workers int) error {
	for {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		var untaint []string
		for i := range list.Items {
			n := &list.Items[i]
			if NodeSchedulable(n) {
				ready++
			} else if _, tainted := withoutTaint(n.Spec.Taints, NotReadyTaint); tainted && nodeReady(n) {
				untaint = append(untaint, n.Name)
			}
		}
		if ready >= want {
			return nil
		}
		if err := forEach(untaint, workers, func(name string) error { return removeTaint(ctx, kube, name, NotReadyTaint) }); err != nil {
			return err
		}
		if len(untaint) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d nodes Ready: %w", ready, want, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// removeTaint removes a taint from a node (retrying on conflicts).
func removeTaint(ctx context.Context, kube kubernetes.Interface, name, key string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints, had := withoutTaint(n.Spec.Taints, key)
		if !had {
			return nil
		}
		n.Spec.Taints = taints
		_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// withoutTaint returns taints without those of key, and whether there were any.
func withoutTaint(taints []corev1.Taint, key string) ([]corev1.Taint, bool) {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out, len(out) != len(taints)
}

// forEach calls f for each item, workers at a time, and returns the first error.
func forEach[T any](items []T, workers int, f func(T) error) error {
	next := make(chan T)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for it := range next {
				if err := f(it); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, it := range items {
		next <- it
	}
	close(next)
	wg.Wait()
	return first
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeSchedulable reports whether a node is Ready and has no NoSchedule or NoExecute taint.
func NodeSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return nodeReady(n)
}
