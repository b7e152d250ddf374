//go:build soak

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/e2e/harness"
)

// sizes are the gang sizes drawn, with their weights: mostly small, now and then 32 or 64.
var sizes = []struct{ pods, weight int }{{1, 3}, {2, 3}, {4, 3}, {8, 3}, {16, 2}, {32, 1}, {64, 1}}

// maxPending is how long a workload that never became whole is left before it is deleted.
const maxPending = 4 * time.Minute

// driver submits workloads and deletes them once they have run for their lifetime.
type driver struct {
	c   *harness.Cluster
	cfg config
	rng *rand.Rand

	// victims are the victimize goroutines still running: run waits for them, so that no
	// victim outlives the submission (its members would hold nodes at Permit, unseen).
	victims sync.WaitGroup

	mu        sync.Mutex
	workloads []*workload
	counts    driverCounts
	errs      []string
}

// driverCounts are what the driver did.
type driverCounts struct {
	created       map[kind]int
	gangs         int
	victims       int // deleted while members waited at Permit
	failedPods    int
	deletedDone   int // deleted after running their lifetime
	deletedWaited int // deleted after maxPending without ever being whole
	createErrors  int
}

func newDriver(c *harness.Cluster, cfg config) *driver {
	return &driver{c: c, cfg: cfg, rng: rand.New(rand.NewPCG(1, 2)), counts: driverCounts{created: map[kind]int{}}}
}

// live returns the workloads not deleted yet.
func (d *driver) live() []*workload {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*workload
	for _, w := range d.workloads {
		if w.deleted.IsZero() {
			out = append(out, w)
		}
	}
	return out
}

func (d *driver) all() []*workload {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.workloads)
}

func (d *driver) errorf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errs = append(d.errs, fmt.Sprintf(format, args...))
}

// run submits and retires workloads until ctx ends, then waits until every Permit victim is
// deleted.
func (d *driver) run(ctx context.Context) {
	defer d.victims.Wait()
	for n := 0; ctx.Err() == nil; n++ {
		d.retire(ctx)
		demand := 0
		for _, w := range d.live() {
			if !w.victim {
				demand += w.pods
			}
		}
		if demand < d.cfg.targetPods {
			d.submit(ctx, n)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (d *driver) drawSize() int {
	total := 0
	for _, s := range sizes {
		total += s.weight
	}
	r := d.rng.IntN(total)
	for _, s := range sizes {
		if r < s.weight {
			return s.pods
		}
		r -= s.weight
	}
	return 1
}

// submit creates one workload: a Job (half), a JobSet, or a LeaderWorkerSet; every eighth
// is a Permit victim (a Job of 4 to 16 pods with one held back).
func (d *driver) submit(ctx context.Context, n int) {
	w := &workload{name: fmt.Sprintf("w%05d", n), created: time.Now(), gangs: map[string]int{},
		lifetime: time.Duration(20+d.rng.IntN(40)) * time.Second}
	var err error
	switch r := d.rng.IntN(10); {
	case n%8 == 7:
		w.kind, w.victim, w.pods = kindJob, true, 4<<d.rng.IntN(3)
		w.gangs[""] = w.pods
		err = createJob(ctx, d.c, w, true)
	case r < 5:
		w.kind, w.pods = kindJob, d.drawSize()
		w.gangs[""] = w.pods
		w.failPod = w.pods > 1 && d.rng.IntN(3) == 0
		err = createJob(ctx, d.c, w, false)
	case r < 8:
		w.kind, w.pods = kindJobSet, max(d.drawSize(), 2)
		replicas := min(w.pods, 1<<d.rng.IntN(3))
		w.gangs[""] = w.pods
		err = createJobSet(ctx, d.c, w, replicas)
	default:
		w.kind = kindLWS
		replicas, size := 1+d.rng.IntN(2), 2<<d.rng.IntN(3)
		w.pods = replicas * size
		for g := range replicas {
			w.gangs[fmt.Sprint(g)] = size
		}
		err = createLWS(ctx, d.c, w, replicas, size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		// kube-apiserver may be restarting: the workload is simply not made.
		d.counts.createErrors++
		return
	}
	d.counts.created[w.kind]++
	d.counts.gangs += len(w.gangs)
	d.workloads = append(d.workloads, w)
	if w.victim {
		d.victims.Add(1)
		go func() { defer d.victims.Done(); d.victimize(ctx, w) }()
	}
}

// victimize lets all but one member of a victim go to the scheduler (they fit and wait at
// Permit for the held one), then deletes the workload. A victim is deleted even when ctx
// ends first (submission stopped): left, its members would hold nodes at Permit through the
// settling, where no invariant can see them.
func (d *driver) victimize(ctx context.Context, w *workload) {
	deadline := time.Now().Add(time.Minute)
	var pods []corev1.Pod
	for time.Now().Before(deadline) && ctx.Err() == nil {
		list, err := d.c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=" + w.name})
		if err == nil && len(list.Items) == w.pods {
			pods = list.Items
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if ctx.Err() == nil {
		for _, p := range pods[:max(len(pods)-1, 0)] {
			_, _ = d.c.Kube.CoreV1().Pods(namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(`{"spec":{"schedulingGates":null}}`), metav1.PatchOptions{})
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(3+rand.IntN(5)) * time.Second):
		}
	}
	deleteCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if !d.delete(deleteCtx, w, &d.counts.victims) {
		d.errorf("Permit victim %s not deleted within 2 minutes", w.name)
	}
}

// delete deletes a workload; when kube-apiserver is away, it stays live and is deleted later.
func (d *driver) delete(ctx context.Context, w *workload, count *int) bool {
	for err := deleteWorkload(ctx, d.c, w); err != nil && !apierrors.IsNotFound(err); err = deleteWorkload(ctx, d.c, w) {
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Second):
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	w.deleted = time.Now()
	*count++
	return true
}

// retire deletes the workloads that ran their lifetime or waited too long, and fails one pod
// of each failing Job once it runs.
func (d *driver) retire(ctx context.Context) {
	for _, w := range d.live() {
		d.mu.Lock()
		whole, failNow := w.wholeAt, w.failPod && !w.failed && !w.wholeAt.IsZero()
		d.mu.Unlock()
		switch {
		case w.victim:
		case !whole.IsZero() && time.Since(whole) > w.lifetime:
			d.delete(ctx, w, &d.counts.deletedDone)
		case whole.IsZero() && time.Since(w.created) > maxPending:
			d.delete(ctx, w, &d.counts.deletedWaited)
		case failNow:
			d.failOne(ctx, w)
		}
	}
}

func (d *driver) failOne(ctx context.Context, w *workload) {
	list, err := d.c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: workloadLabel + "=" + w.name})
	if err != nil {
		return
	}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning {
			if d.c.SetPodOutcome(ctx, namespace, p.Name, corev1.PodFailed) == nil {
				d.mu.Lock()
				w.failed = true
				d.counts.failedPods++
				d.mu.Unlock()
			}
			return
		}
	}
}
