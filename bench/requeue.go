package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// RequeueSetup is the shape of the requeue step: Gangs gangs of two pods that each need a
// whole node of GPUsPerNode GPUs wait, backed off, on as many nodes that blocking pods fill;
// then the blocking pods are deleted one every SpacingSeconds.
type RequeueSetup struct {
	Gangs, GPUsPerNode int
	SpacingSeconds     float64
}

// RequeueResult is what the requeue step measured.
type RequeueResult struct {
	RequeueSetup
	// FreeToBoundMs is, per gang, the time from the deletion of the blocking pod that made
	// its room (the last one, if its pods landed on two nodes) to its last pod bound.
	FreeToBoundMs []float64
	P50Ms, P99Ms  float64
}

// RequeueOptions say how to measure the requeue step.
type RequeueOptions struct {
	RequeueSetup
	Namespace string
	// Kube and PodGroups are the bench's clients.
	Kube      kubernetes.Interface
	PodGroups dynamic.Interface
	// Timeout bounds the wait for the gangs to be backed off, and for them to be bound.
	Timeout time.Duration
}

// RequeueNode is the name of the node of gang i's room.
func RequeueNode(i int) string { return fmt.Sprintf("requeue-node-%d", i) }

// MeasureRequeue runs the requeue step on a cluster with the nodes RequeueNode(0..Gangs-1) and
// workmap-scheduler running (its default backoff).
func MeasureRequeue(ctx context.Context, o RequeueOptions) (*RequeueResult, error) {
	ns := o.Namespace
	if err := CreateNamespace(ctx, o.Kube, ns, nil); err != nil {
		return nil, err
	}
	gpus := func(n int) corev1.ResourceRequirements {
		q := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(n), resource.DecimalSI)}
		return corev1.ResourceRequirements{Requests: q, Limits: q}
	}
	for i := range o.Gangs {
		blocker := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("blocker-%d", i), Namespace: ns},
			Spec:       corev1.PodSpec{NodeName: RequeueNode(i), Containers: []corev1.Container{{Name: "c", Image: "i", Resources: gpus(o.GPUsPerNode)}}},
		}
		if _, err := o.Kube.CoreV1().Pods(ns).Create(ctx, blocker, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating a blocking pod: %w", err)
		}
	}

	binds := newBindWatch()
	factory := informers.NewSharedInformerFactoryWithOptions(o.Kube, 0, informers.WithNamespace(ns))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: binds.observe, UpdateFunc: func(_, obj any) { binds.observe(obj) },
	}); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	for i := range o.Gangs {
		name := fmt.Sprintf("gang-%d", i)
		pg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": PodGroupResource.GroupVersion().String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"minMember": int64(2)},
		}}
		if _, err := o.PodGroups.Resource(PodGroupResource).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating PodGroup %s: %w", name, err)
		}
		for j := range 2 {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: ns, Labels: map[string]string{v1alpha1.PodGroupLabel: name, "gang": name}},
				Spec:       corev1.PodSpec{SchedulerName: harness.SchedulerName, Containers: []corev1.Container{{Name: "c", Image: "i", Resources: gpus(o.GPUsPerNode / 2)}}},
			}
			if _, err := o.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return nil, fmt.Errorf("creating pod %s: %w", pod.Name, err)
			}
		}
	}

	// Every gang failed its attempt and is backed off: each of its pods says why.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := o.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "gang"})
		if err != nil {
			return false, nil
		}
		waiting := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "needs more than the cluster has free") {
					waiting++
				}
			}
		}
		return waiting == 2*o.Gangs, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the %d gangs to fail and be backed off: %w", o.Gangs, err)
	}

	freed := map[string]time.Time{}
	for i := range o.Gangs {
		if i > 0 {
			time.Sleep(time.Duration(o.SpacingSeconds * float64(time.Second)))
		}
		freed[RequeueNode(i)] = time.Now()
		if err := o.Kube.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("blocker-%d", i), metav1.DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("deleting a blocking pod: %w", err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		return binds.count() == 2*o.Gangs, nil
	}); err != nil {
		return nil, fmt.Errorf("waiting for the gangs to be bound (%d of %d pods bound): %w", binds.count(), 2*o.Gangs, err)
	}
	latencies, err := FreeToBound(freed, binds.snapshot())
	if err != nil {
		return nil, err
	}
	res := &RequeueResult{RequeueSetup: o.RequeueSetup}
	for _, d := range latencies {
		res.FreeToBoundMs = append(res.FreeToBoundMs, round(ms(d), 1))
	}
	res.P50Ms, res.P99Ms = round(ms(percentile(latencies, 50)), 1), round(ms(percentile(latencies, 99)), 1)
	return res, nil
}

// Bind is when a pod of a gang was first seen bound, and where.
type Bind struct {
	Node string
	At   time.Time
}

// FreeToBound computes, per gang (gang → its pods' binds), the time from the room freed for
// it (freed: when each node was freed; the latest of its pods' nodes) to its last pod bound,
// sorted by gang.
func FreeToBound(freed map[string]time.Time, gangs map[string][]Bind) ([]time.Duration, error) {
	names := make([]string, 0, len(gangs))
	for g := range gangs {
		names = append(names, g)
	}
	sort.Strings(names)
	out := make([]time.Duration, 0, len(gangs))
	for _, g := range names {
		var room, bound time.Time
		for _, b := range gangs[g] {
			at, ok := freed[b.Node]
			if !ok {
				return nil, fmt.Errorf("gang %s was bound on %s, which was never freed", g, b.Node)
			}
			if at.After(room) {
				room = at
			}
			if b.At.After(bound) {
				bound = b.At
			}
		}
		if len(gangs[g]) == 0 || bound.Before(room) {
			return nil, fmt.Errorf("gang %s: bound at %s, before its room was freed at %s", g, bound.Format(time.RFC3339Nano), room.Format(time.RFC3339Nano))
		}
		out = append(out, bound.Sub(room))
	}
	return out, nil
}

// bindWatch records, from a pod informer, when each gang's pods were first seen bound.
type bindWatch struct {
	mu    sync.Mutex
	pods  map[string]Bind
	gangs map[string]string
}

func newBindWatch() *bindWatch {
	return &bindWatch{pods: map[string]Bind{}, gangs: map[string]string{}}
}

func (w *bindWatch) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" || p.Labels["gang"] == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.pods[p.Name]; !seen {
		w.pods[p.Name], w.gangs[p.Name] = Bind{Node: p.Spec.NodeName, At: time.Now()}, p.Labels["gang"]
	}
}

func (w *bindWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pods)
}

func (w *bindWatch) snapshot() map[string][]Bind {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]Bind{}
	for pod, b := range w.pods {
		out[w.gangs[pod]] = append(out[w.gangs[pod]], b)
	}
	return out
}
