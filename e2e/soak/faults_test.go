//go:build soak

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
)

// faults injects one fault at a time and counts them.
type faults struct {
	c *harness.Cluster
	r *replicas
	// m learns which bound pods the node churn deleted.
	m *monitor

	counts   map[string]int
	failures []string
	// takeovers are how long a new leader took after the leader was killed or stopped.
	takeovers []time.Duration
	// apiDown is how long each kube-apiserver restart kept it away.
	apiDown []time.Duration
	// tooOld counts the watches, resumed after a restart from the resource version read
	// before it, that were answered "too old resource version".
	tooOld int
	// apiKilled counts the restarts whose old kube-apiserver outlived apiServerGrace.
	apiKilled    int
	nodesDeleted int
	nodesAdded   int
	podsEvicted  int
	nextNode     int
}

// apiServerGrace is how long a stopped kube-apiserver may drain before it is killed.
const apiServerGrace = 5 * time.Second

// Fault names, as the report shows them.
const (
	faultKill      = "workmap-scheduler leader killed (SIGKILL) and restarted"
	faultMove      = "leadership moved (leader stopped, the other replica takes over, the old one restarts)"
	faultAPIServer = "kube-apiserver restarted, etcd compacted while it was down"
	faultCompact   = "etcd compacted (cluster running)"
	faultNodes     = "nodes deleted (their pods deleted as pod GC does) and new ones added"
)

func (f *faults) fail(name string, err error) {
	f.failures = append(f.failures, fmt.Sprintf("%s %s: %v", time.Now().Format(time.TimeOnly), name, err))
}

func (f *faults) inject(ctx context.Context, name string) {
	var err error
	switch name {
	case faultKill:
		err = f.stopLeader(ctx, true)
	case faultMove:
		err = f.stopLeader(ctx, false)
	case faultAPIServer:
		err = f.restartAPIServer(ctx)
	case faultCompact:
		_, err = f.c.CompactEtcd(ctx, 1)
	case faultNodes:
		err = f.churnNodes(ctx)
	}
	if err != nil {
		f.fail(name, err)
		return
	}
	f.counts[name]++
}

// stopLeader kills (or stops gracefully) the leading replica. A killed leader is started again
// at once, the new process competing for the lease; a stopped one only once the other
// replica leads, so that leadership has moved.
func (f *faults) stopLeader(ctx context.Context, kill bool) error {
	i, _, err := f.r.waitLeader(ctx, -1)
	if err != nil {
		return err
	}
	f.r.mu.Lock()
	l := f.r.procs[i]
	l.planned = true
	f.r.mu.Unlock()
	start := time.Now()
	if kill {
		l.s.Kill()
		f.r.start(i)
		_, _, err := f.r.waitLeader(ctx, -1)
		f.takeovers = append(f.takeovers, time.Since(start))
		return err
	}
	l.s.Stop()
	for deadline := time.Now().Add(2 * time.Minute); f.r.leader(ctx) != 1-i; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.r.start(i)
			return fmt.Errorf("the other replica did not take the lead")
		}
	}
	f.takeovers = append(f.takeovers, time.Since(start))
	f.r.start(i)
	return nil
}

// restartAPIServer restarts kube-apiserver with etcd compacted past every resource version
// while it is down, then resumes a watch from a resource version read before: it must be
// told that version is too old.
func (f *faults) restartAPIServer(ctx context.Context) error {
	list, err := f.c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	start := time.Now()
	killed, err := f.c.RestartAPIServer(ctx, apiServerGrace, func(ctx context.Context) error {
		_, err := f.c.CompactEtcd(ctx, 5)
		return err
	})
	f.apiDown = append(f.apiDown, time.Since(start))
	if killed {
		f.apiKilled++
	}
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	w, err := f.c.Kube.CoreV1().Pods(namespace).Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			f.tooOld++
			return nil
		}
		return fmt.Errorf("watch from before the restart: %w", err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != watch.Error {
			continue // events newer than the version, when the cache still holds it
		}
		if status := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
			f.tooOld++
		}
		return nil
	}
	return nil
}

// churnNodes deletes a few nodes, deletes their pods as the pod garbage collector does for
// pods of a node that is gone (their workloads make them again), and adds as many new nodes.
func (f *faults) churnNodes(ctx context.Context) error {
	nodes, err := f.c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	k := min(5, len(nodes.Items))
	for _, i := range rand.Perm(len(nodes.Items))[:k] {
		name := nodes.Items[i].Name
		if err := f.c.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		f.nodesDeleted++
		pods, err := f.c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if err := f.c.Kube.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err == nil {
				f.podsEvicted++
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					f.m.evictedBound(&p)
				}
			}
		}
	}
	time.Sleep(5 * time.Second)
	for range k {
		f.nextNode++
		f.c.AddNode(ctx, node(fmt.Sprintf("added-%d", f.nextNode)))
		f.nodesAdded++
	}
	return nil
}

func node(name string) harness.Node {
	return harness.Node{Name: name, GPUs: gpusPerNode, CPU: "64", Memory: "512Gi"}
}
