//go:build soak

package soak

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/lws"
)

// TestSoak runs the soak for WORKMAP_SOAK_DURATION (see the package documentation) and fails
// on any violated invariant.
func TestSoak(t *testing.T) {
	cfg := loadConfig(t)
	began := time.Now()
	nodes := make([]harness.Node, cfg.nodes)
	for i := range nodes {
		nodes[i] = node(fmt.Sprintf("node-%03d", i))
	}
	c := harness.Start(t, harness.Options{JobSet: true, Nodes: nodes})
	ctx := context.Background()
	lws.Start(ctx, t, c)
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webhook := c.StartWorkmapWebhook(harness.WebhookOptions{Binary: harness.WebhookBinary(t),
		Args: []string{"--profiling"}}) // its heap can be read while it soaks
	readyCtx, cancelReady := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelReady()
	if err := webhook.WaitReady(readyCtx); err != nil {
		t.Fatal(err)
	}
	webhookLife := &life{name: "workmap-webhook", started: time.Now(), read: webhook}
	r := newReplicas(c, harness.SchedulerOptions{LeaderElect: true, LeaseDuration: leaseDuration, RenewDeadline: renewDeadline,
		PodGroupBackoffSeconds: 2, QPS: 100, Burst: 200, Args: []string{harness.OpenEndpointsFlag}})
	if _, _, err := r.waitLeader(ctx, -1); err != nil {
		t.Fatal(err)
	}
	setUp := time.Since(began)
	t.Logf("cluster of %d nodes up in %s; soaking for %s", cfg.nodes, setUp.Round(time.Second), cfg.duration)

	d := newDriver(c, cfg)
	m := newMonitor(c, d)
	f := &faults{c: c, r: r, m: m, counts: map[string]int{}}
	driverCtx, stopDriver := context.WithCancel(ctx)
	monitorCtx, stopMonitor := context.WithCancel(ctx)
	driverDone, monitorDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(driverDone); d.run(driverCtx) }()
	go func() { defer close(monitorDone); m.run(monitorCtx) }()

	sampleEvery := max(cfg.duration/60, 5*time.Second)
	sampleAll := func() {
		r.sampleAll(ctx)
		webhookLife.sample(ctx)
		if cfg.profiles == "" {
			return
		}
		for _, l := range append(r.running(), webhookLife) {
			// Saved again when the role changes: a new leader's profile after its memory
			// warm-up is the one its end is compared with.
			if began := l.roleBegan(); !l.warmSavedFor.Equal(began) && time.Since(began) >= cfg.memoryWarmUp(l.leads()) {
				l.warmSavedFor = began
				if err := l.saveProfiles(ctx, cfg.profiles, "warm"); err != nil {
					t.Log(err)
				}
			}
		}
	}
	start := time.Now()
	end := start.Add(cfg.duration)
	// The last two thirds have no scheduler faults but the first of each kind (a short run may
	// not have reached it), so that the replicas then running, the last leader among them, live
	// long enough after their warm-up for their memory and goroutines to say something. The
	// scheduler faults come first in the cycle, and a run whose last one came late (a slow
	// machine) goes on until the replicas' new roles have been measured.
	cycle := []string{faultKill, faultMove, faultNodes, faultCompact, faultAPIServer}
	nextFault, nextSample := start.Add(cfg.faultEvery), start
	for n := 0; time.Now().Before(end); time.Sleep(time.Second) {
		r.supervise()
		if time.Now().After(nextSample) {
			sampleAll()
			nextSample = time.Now().Add(sampleEvery)
		}
		if time.Now().After(nextFault) {
			name := cycle[n%len(cycle)]
			n++
			if time.Since(start) > cfg.schedulerFaultsUntil && (name == faultKill || name == faultMove) && f.counts[name] > 0 {
				continue
			}
			t.Logf("%s: %s", time.Since(start).Round(time.Second), name)
			f.inject(ctx, name)
			nextFault = time.Now().Add(cfg.faultEvery)
			if name == faultKill || name == faultMove {
				// The replicas' new roles began now: measured after their warm-up and a stretch.
				if by := time.Now().Add(cfg.warmUp + (minStretch+1)*sampleEvery); by.After(end) {
					t.Logf("the run goes on to %s so that the replicas' new roles are measured", by.Sub(start).Round(time.Second))
					end = by
				}
			}
		}
	}
	stopDriver()
	<-driverDone
	stopMonitor()
	<-monitorDone

	// Settle: no more workloads nor faults; every gang that fits must get bound.
	settleStart := time.Now()
	for quiet := 0; quiet < 3 && time.Since(settleStart) < 3*time.Minute; time.Sleep(2 * time.Second) {
		r.supervise()
		if err := m.tick(ctx); err != nil {
			continue
		}
		if m.pendingFitting == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(nextSample) {
			sampleAll()
			nextSample = time.Now().Add(sampleEvery)
		}
	}
	sampleAll()
	finalPending := m.pendingFitting
	if cfg.profiles != "" {
		for _, l := range append(r.running(), webhookLife) {
			if err := l.saveProfiles(ctx, cfg.profiles, "end"); err != nil {
				t.Log(err)
			}
		}
		t.Logf("heap profiles and goroutines in %s: go tool pprof -diff_base NAME-warm.pb.gz NAME-end.pb.gz; diff NAME-warm-goroutines.txt NAME-end-goroutines.txt", cfg.profiles)
	}

	// Delete every workload; their PodGroups must go with them.
	for _, w := range d.live() {
		d.delete(ctx, w, new(int))
	}
	leftover := -1
	for deadline := time.Now().Add(gcGrace + 30*time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		_ = m.tick(ctx)
		list, err := c.Dynamic.Resource(podGroups).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		if leftover = len(list.Items); leftover == 0 {
			break
		}
	}

	rep := report{cfg: cfg, setUp: setUp, ran: time.Since(start), settle: time.Since(settleStart), d: d, m: m, f: f, r: r,
		webhook: webhookLife, finalPending: finalPending, leftover: leftover}
	if cfg.profiles != "" {
		if err := writeSamples(cfg.profiles, rep.lives(), start); err != nil {
			t.Error(err)
		}
	}
	text := rep.markdown()
	t.Log("\n" + text)
	if cfg.report != "" {
		if err := os.WriteFile(cfg.report, []byte(text), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, v := range rep.violations() {
		t.Error(v)
	}
}
