package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
)

// MemoryOptions size the grouper memory measurement.
type MemoryOptions struct {
	Pods, PodsPerGang int
	// QPS and Burst are the grouper's client limits here (they only make filling faster).
	QPS   float32
	Burst int
	// CreateWorkers create gangs in parallel through Creator, the bench's own client.
	CreateWorkers int
	Creator       kubernetes.Interface
	Timeout       time.Duration
	Log           io.Writer
}

// MemoryResult is the grouper's heap growth per tracked pod.
type MemoryResult struct {
	Pods        int     `json:"pods"`
	Gangs       int     `json:"gangs"`
	HeapBefore  uint64  `json:"heap_before"`
	HeapAfter   uint64  `json:"heap_after"`
	BytesPerPod float64 `json:"bytes_per_pod"`
	// PodJSONBytes is the size of one of the pods as the API server serves it (JSON).
	PodJSONBytes int     `json:"pod_json_bytes"`
	FillSeconds  float64 `json:"fill_seconds"`
	// PodObjectBytes is the heap one of these pods takes as a corev1.Pod (what an informer
	// caches), measured by holding all of them from one list; PodObjectBytesNoManagedFields
	// the same without metadata.managedFields.
	PodObjectBytes                float64 `json:"pod_object_bytes"`
	PodObjectBytesNoManagedFields float64 `json:"pod_object_bytes_no_managed_fields"`
	// PodObjectBytesGrouping keeps only what the grouper reads of a pod: its identity,
	// labels, annotations and owners, schedulerName, nodeName, deletion and phase.
	PodObjectBytesGrouping float64 `json:"pod_object_bytes_grouping"`
	// JobObjectBytes is the heap one of the Jobs takes as an unstructured object (the form in
	// which the grouper reads and caches a top owner's full object).
	JobObjectBytes float64 `json:"job_object_bytes"`
}

const memoryNamespace = "mem"

// MeasureGrouperMemory measures what the grouper keeps per pod beyond the scheduler's own pod
// cache. It creates Pods pods in gangs of PodsPerGang (batch/v1 Jobs, schedulerName
// workmap-scheduler, left unscheduled), fills a pod informer with them as kube-scheduler's is
// (managedFields dropped), reads the heap (runtime.ReadMemStats after GC), then runs the grouper
// on that informer (grouper.New, as workmap-scheduler does), waits until it has decided every
// pod, and reads the heap again: (after − before) / Pods.
func MeasureGrouperMemory(ctx context.Context, c *harness.Cluster, o MemoryOptions) (MemoryResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	gangs := Gangs{Namespace: memoryNamespace, Count: o.Pods / o.PodsPerGang, PodsPerGang: o.PodsPerGang, SchedulerName: harness.SchedulerName, GPUsPerPod: 1}
	res := MemoryResult{Pods: gangs.Pods(), Gangs: gangs.Count}
	if err := CreateNamespace(ctx, c.Kube, memoryNamespace, nil); err != nil {
		return res, err
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	defs, err := catalog.Definitions()
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := gangs.Create(ctx, o.Creator, o.CreateWorkers); err != nil {
		return res, err
	}
	meta, err := metadata.NewForConfig(c.Config)
	if err != nil {
		return res, err
	}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	if err := waitFor(ctx, time.Second, func() (bool, error) {
		l, err := meta.Resource(pods).Namespace(memoryNamespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == res.Pods, err
	}); err != nil {
		return res, fmt.Errorf("the Jobs' pods: %w", err)
	}

	// The scheduler's pod cache, filled before the grouper starts.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	factory := informers.NewSharedInformerFactory(kube, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	if err := podInformer.SetTransform(dropManagedFields); err != nil {
		return res, err
	}
	factory.Start(runCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		return res, fmt.Errorf("the pod cache did not sync")
	}
	res.HeapBefore = heapAfterGC()

	g, err := grouper.New(runCtx, cfg, grouper.Options{SchedulerName: harness.SchedulerName, Builtin: defs, Pods: podInformer, Kube: kube})
	if err != nil {
		return res, err
	}
	// Every pod is in the membership view once decided.
	decided := func() int64 { pods, _ := g.Controller.Membership().Len(); return int64(pods) }
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()
	stopGrouper := sync.OnceFunc(func() { stop(); <-done })
	defer stopGrouper()
	if err := waitFor(ctx, 500*time.Millisecond, func() (bool, error) { return decided() >= int64(res.Pods), nil }); err != nil {
		return res, fmt.Errorf("%d of %d pods grouped: %w", decided(), res.Pods, err)
	}
	res.FillSeconds = round(time.Since(start).Seconds(), 1)
	time.Sleep(3 * time.Second) // the last PodGroup creations and status writes
	res.HeapAfter = heapAfterGC()
	res.BytesPerPod = round((float64(res.HeapAfter)-float64(res.HeapBefore))/float64(res.Pods), 0)
	runtime.KeepAlive(podInformer)

	stopGrouper()
	if err := podObjectBytes(ctx, c.Kube, &res); err != nil {
		return res, err
	}
	if err := jobObjectBytes(ctx, c.Dynamic, &res); err != nil {
		return res, err
	}
	one, err := c.Kube.CoreV1().Pods(memoryNamespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err == nil && len(one.Items) == 1 {
		raw, err := c.Kube.CoreV1().RESTClient().Get().Namespace(memoryNamespace).Resource("pods").Name(one.Items[0].Name).
			SetHeader("Accept", "application/json").DoRaw(ctx)
		if err == nil {
			res.PodJSONBytes = len(raw)
		}
	}
	return res, nil
}

// dropManagedFields is kube-scheduler's pod informer transform.
func dropManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}

// podObjectBytes measures the heap of the namespace's pods held as corev1.Pods, with and
// without their managedFields (the grouper is stopped by then).
func podObjectBytes(ctx context.Context, kube kubernetes.Interface, res *MemoryResult) error {
	base := heapAfterGC()
	list, err := kube.CoreV1().Pods(memoryNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods := list.Items
	list = nil
	n := float64(len(pods))
	if n == 0 {
		return fmt.Errorf("no pods in %s", memoryNamespace)
	}
	res.PodObjectBytes = round((float64(heapAfterGC())-float64(base))/n, 0)
	for i := range pods {
		pods[i].ManagedFields = nil
	}
	res.PodObjectBytesNoManagedFields = round((float64(heapAfterGC())-float64(base))/n, 0)
	for i := range pods {
		pods[i] = groupingView(&pods[i])
	}
	res.PodObjectBytesGrouping = round((float64(heapAfterGC())-float64(base))/n, 0)
	runtime.KeepAlive(pods)
	return nil
}

// jobObjectBytes measures the heap of the namespace's Jobs held as unstructured objects.
func jobObjectBytes(ctx context.Context, dyn dynamic.Interface, res *MemoryResult) error {
	base := heapAfterGC()
	list, err := dyn.Resource(batchv1.SchemeGroupVersion.WithResource("jobs")).Namespace(memoryNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("no Jobs in %s", memoryNamespace)
	}
	res.JobObjectBytes = round((float64(heapAfterGC())-float64(base))/float64(len(list.Items)), 0)
	runtime.KeepAlive(list)
	return nil
}

// groupingView is the part of a pod the grouper reads.
func groupingView(p *corev1.Pod) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
			Labels: p.Labels, Annotations: p.Annotations, OwnerReferences: p.OwnerReferences,
		},
		Spec:   corev1.PodSpec{SchedulerName: p.Spec.SchedulerName, NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}
}

// heapAfterGC is the live heap after two full collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// waitFor calls check every interval (first at once) until it is true, fails, or ctx ends.
func waitFor(ctx context.Context, interval time.Duration, check func() (bool, error)) error {
	return wait.PollUntilContextCancel(ctx, interval, true, func(context.Context) (bool, error) { return check() })
}
