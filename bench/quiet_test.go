package bench

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/assert"
)

func TestBusyShare(t *testing.T) {
	cases := map[string]struct {
		a, b procfs.CPUStat
		want float64
	}{
		"all idle":                {procfs.CPUStat{Idle: 10}, procfs.CPUStat{Idle: 12}, 0},
		"one of two cores busy":   {procfs.CPUStat{User: 5, Idle: 5}, procfs.CPUStat{User: 5.25, System: 0.5, Idle: 6, SoftIRQ: 0.25}, 0.5},
		"waiting on I/O is idle":  {procfs.CPUStat{}, procfs.CPUStat{Iowait: 1, User: 1}, 0.5},
		"stolen time is busy":     {procfs.CPUStat{}, procfs.CPUStat{Steal: 1, Idle: 3}, 0.25},
		"no time passed is quiet": {procfs.CPUStat{User: 1}, procfs.CPUStat{User: 1}, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.InDelta(t, c.want, busyShare(c.a, c.b), 1e-9)
		})
	}
}

func TestQuietWaitIsBounded(t *testing.T) {
	// Nothing can be this quiet: the wait ends at its limit, having read the CPU times.
	q := Quiet{MaxBusy: -1, Seconds: 1, Limit: 1500 * time.Millisecond}
	waited, busy, err := q.Wait(context.Background())
	assert.NoError(t, err)
	assert.GreaterOrEqual(t, waited, q.Limit)
	assert.Less(t, waited, q.Limit+2*time.Second)
	assert.GreaterOrEqual(t, busy, 0.0)
	assert.LessOrEqual(t, busy, 1.0)
}

func TestQuietWaitEndsWhenQuiet(t *testing.T) {
	q := Quiet{MaxBusy: 1, Seconds: 2, Limit: time.Minute}
	waited, _, err := q.Wait(context.Background())
	assert.NoError(t, err)
	assert.GreaterOrEqual(t, waited, 2*time.Second)
	assert.Less(t, waited, 10*time.Second)
}

func TestQuietDescribe(t *testing.T) {
	assert.Empty(t, Quiet{}.describe(), "runs that did not wait say nothing of it")
	assert.Contains(t, DefaultQuiet.describe(), "until the machine's CPUs were under 30% busy for 2 s in a row, at most 1m0s")
	r := sampleReport()
	r.Throughput.Quiet = DefaultQuiet
	assert.Contains(t, r.Markdown("x.svg"), "each pair runs A B in that order, per mode (2 pairs). After each run its namespace is deleted and the bench waits until it is gone, so no cleanup falls into the next run's window. Then, before the next run's window")
}

func TestQuietWaitedSaysHowTheWaitEnded(t *testing.T) {
	cases := map[string]struct {
		q    Quiet
		run  Run
		want string
	}{
		"no wait":          {Quiet{}, Run{}, ""},
		"quiet":            {DefaultQuiet, Run{QuietSeconds: 2, BusyAtStart: 0.1}, ", machine quiet after 2.0s"},
		"limit reached":    {DefaultQuiet, Run{QuietSeconds: 60, BusyAtStart: 0.45}, ", machine still 45% busy after 60.0s"},
		"times unreadable": {DefaultQuiet, Run{BusyAtStart: -1}, ", the machine's CPU times unreadable"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, c.q.waited(c.run))
		})
	}
}
