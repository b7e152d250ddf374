package plugin_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workmap/workmap/bench"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
)

// TestOneClientBudget: every request workmap-scheduler sends the API server besides events —
// bindings, and the grouper's PodGroup creates, status writes and reads — comes out of the one
// token bucket of clientConnection: in no interval does the process send more than burst +
// qps × the interval's length. Events have kube-scheduler's own event client (and budget), as
// in kube-scheduler itself; watches take no token in client-go. Both are left out.
func TestOneClientBudget(t *testing.T) {
	const qps, burst = 10, 10
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{
		{Name: "gpu-node-0", GPUs: 16}, {Name: "gpu-node-1", GPUs: 16}, {Name: "gpu-node-2", GPUs: 16}, {Name: "gpu-node-3", GPUs: 16},
	}})
	recorder := c.StartAPIRecorder()
	opts := testSchedulerOptions
	opts.QPS, opts.Burst, opts.Kubeconfig = qps, burst, recorder.Kubeconfig
	opts.Args = []string{harness.OpenEndpointsFlag}
	s := c.StartWorkmapScheduler(opts)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gangs := bench.Gangs{Namespace: "budget", Count: 16, PodsPerGang: 4, SchedulerName: harness.SchedulerName, GPUsPerPod: 1}
	require.NoError(t, bench.CreateNamespace(ctx, c.Kube, gangs.Namespace, nil))
	require.NoError(t, gangs.Create(ctx, c.Kube, 4))
	require.NoError(t, harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(gangs.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return harness.Bound(pods.Items) == gangs.Pods(), nil
	}), "every pod of the burst bound")
	podGroups, err := grouper.NewPodGroupClient(c.Config)
	require.NoError(t, err)
	require.NoError(t, harness.Poll(ctx, 200*time.Millisecond, func() (bool, error) {
		list, err := podGroups.In(gangs.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != gangs.Count {
			return false, err
		}
		for _, pg := range list.Items {
			if pg.Status.Phase == "" || pg.Status.Phase == "Pending" || pg.Status.Phase == "Scheduling" {
				return false, nil
			}
		}
		return true, nil
	}), "every gang's PodGroup made and its status written")

	var sent []harness.APIRequest
	bindings := 0
	for _, r := range recorder.Requests() {
		if r.Watch || strings.HasPrefix(r.Path, "/apis/events.k8s.io/") || strings.HasSuffix(r.Path, "/events") {
			continue
		}
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/binding") {
			bindings++
		}
		sent = append(sent, r)
	}
	require.Equal(t, gangs.Pods(), bindings, "one binding per pod went through the recorder")
	count, seconds := busiestInterval(sent, qps, burst)
	require.LessOrEqual(t, float64(count), burst+qps*seconds+1,
		"%d requests in %.2f s: more than the budget (qps %d, burst %d) allows; %d requests in all", count, seconds, qps, burst, len(sent))

	// The budget bound the run: the client's rate limiter made requests wait.
	families, err := s.Metrics(ctx)
	require.NoError(t, err)
	require.Positive(t, limiterWaits(t, families, 0.05), "requests waited for the client rate limiter: the burst exceeded the budget")
}

// busiestInterval returns the interval between two requests in which the most requests were
// sent beyond what a token bucket of qps and burst allows: its count and length.
func busiestInterval(reqs []harness.APIRequest, qps, burst float64) (int, float64) {
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].At.Before(reqs[j].At) })
	worst, count, seconds := -1.0, 0, 0.0
	for i := range reqs {
		for j := i; j < len(reqs); j++ {
			n, d := j-i+1, reqs[j].At.Sub(reqs[i].At).Seconds()
			if excess := float64(n) - (burst + qps*d); excess > worst {
				worst, count, seconds = excess, n, d
			}
		}
	}
	return count, seconds
}

// limiterWaits counts the requests that waited longer than over seconds for the client rate
// limiter (client-go's rest_client_rate_limiter_duration_seconds); a process that does not
// export it fails the test.
func limiterWaits(t *testing.T, families map[string]*dto.MetricFamily, over float64) uint64 {
	t.Helper()
	family, ok := families["rest_client_rate_limiter_duration_seconds"]
	require.True(t, ok, "rest_client_rate_limiter_duration_seconds is exported")
	var waits uint64
	for _, m := range family.GetMetric() {
		h := m.GetHistogram()
		within := uint64(0)
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() <= over {
				within = b.GetCumulativeCount()
			}
		}
		waits += h.GetSampleCount() - within
	}
	return waits
}
