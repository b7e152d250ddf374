package live

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// NewPodsClient is the client Resolver.Pods wants: pods as protobuf, through cfg.
func NewPodsClient(cfg *rest.Config) (corev1client.PodsGetter, error) {
	protobuf := rest.CopyConfig(cfg)
	protobuf.ContentType = k8sruntime.ContentTypeProtobuf
	protobuf.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	return corev1client.NewForConfig(protobuf)
}

// listPods lists pods through a typed client, which can speak protobuf: for a thousand pods
// that is several times cheaper for the API server to encode and for the client to decode than
// JSON into maps. The pods are then converted to the maps definitions read, apiVersion and kind
// set as a list of the dynamic client has them, without metadata.managedFields (which only the
// API server reads, and which cost as much to convert as the rest of a pod; the scheduler's
// caches drop them too).
func listPods(ctx context.Context, client corev1client.PodsGetter, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, error) {
	list, err := client.Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing %s in namespace %q: %w", podsResource.GroupResource(), ns, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	errs := make([]error, len(list.Items))
	convert := func(i int) {
		list.Items[i].ManagedFields = nil
		obj, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&list.Items[i])
		if err != nil {
			errs[i] = fmt.Errorf("pod %s/%s: %w", list.Items[i].Namespace, list.Items[i].Name, err)
			return
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		out[i] = u
	}
	inParallel(len(list.Items), convert)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// minPerWorker is how many pods one goroutine converts at least: below it, starting goroutines
// costs more than it saves.
const minPerWorker = 128

// inParallel calls f for 0…n-1, split over the machine's processors.
func inParallel(n int, f func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n/minPerWorker)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				f(i)
			}
		})
	}
	wg.Wait()
}
