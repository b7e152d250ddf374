package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// PodTimes are when the watch saw a pod appear, get its PodGroup label (workmap's
// grouping), and get its node; Gang is the name of its controller (its Job), empty for a
// pod without one.
type PodTimes struct {
	Added, Grouped, Bound time.Time
	Gang                  string
}

// Watcher watches the pods of one namespace and records, by pod, when the watch delivered
// its creation and the first version with spec.nodeName set. Both times are read from one
// clock as events arrive (a pod's creationTimestamp has only second resolution).
type Watcher struct {
	want     int
	mu       sync.Mutex
	pods     map[types.UID]*PodTimes
	added    int
	bound    int
	allAdded chan struct{}
	allBound chan struct{}
	cancel   context.CancelFunc
}

// WatchPods starts a watch of the namespace's pods, expecting want of them, and returns
// once its cache is synced.
func WatchPods(ctx context.Context, kube kubernetes.Interface, ns string, want int) (*Watcher, error) {
	w := &Watcher{want: want, pods: map[types.UID]*PodTimes{}, allAdded: make(chan struct{}), allBound: make(chan struct{})}
	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.saw(obj) },
		UpdateFunc: func(_, obj any) { w.saw(obj) },
	}); err != nil {
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.cancel()
		return nil, fmt.Errorf("watching the pods of %s: %w", ns, context.Cause(ctx))
	}
	return w, nil
}

func (w *Watcher) saw(obj any) {
	now := time.Now()
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.pods[pod.UID]
	if t == nil {
		t = &PodTimes{Added: now}
		if owner := metav1.GetControllerOf(pod); owner != nil {
			t.Gang = owner.Name
		}
		w.pods[pod.UID] = t
		w.added++
		if w.added == w.want {
			close(w.allAdded)
		}
	}
	if t.Grouped.IsZero() && pod.Labels[v1alpha1.PodGroupLabel] != "" {
		t.Grouped = now
	}
	if pod.Spec.NodeName != "" && t.Bound.IsZero() {
		t.Bound = now
		w.bound++
		if w.bound == w.want {
			close(w.allBound)
		}
	}
}

// WaitAdded waits until every expected pod exists.
func (w *Watcher) WaitAdded(ctx context.Context) error {
	select {
	case <-w.allAdded:
		return nil
	case <-ctx.Done():
		a, _ := w.Counts()
		return fmt.Errorf("%d of %d pods created: %w", a, w.want, context.Cause(ctx))
	}
}

// WaitBound waits until every expected pod is bound to a node.
func (w *Watcher) WaitBound(ctx context.Context) error {
	select {
	case <-w.allBound:
		return nil
	case <-ctx.Done():
		a, b := w.Counts()
		return fmt.Errorf("%d of %d pods bound (%d created): %w", b, w.want, a, context.Cause(ctx))
	}
}

// Counts returns how many pods were seen and how many of them bound.
func (w *Watcher) Counts() (added, bound int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.added, w.bound
}

// Times returns the recorded times of every pod.
func (w *Watcher) Times() []PodTimes {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]PodTimes, 0, len(w.pods))
	for _, t := range w.pods {
		out = append(out, *t)
	}
	return out
}

// Stop ends the watch.
func (w *Watcher) Stop() { w.cancel() }
