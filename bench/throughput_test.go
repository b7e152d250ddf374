package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMeasure(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	pod := func(added, grouped, bound float64) PodTimes {
		p := PodTimes{Added: at(added), Bound: at(bound)}
		if grouped > 0 {
			p.Grouped = at(grouped)
		}
		return p
	}
	for _, tc := range []struct {
		name                   string
		run                    Run
		times                  []PodTimes
		start                  float64
		seconds, rate, grouped float64
		create, p50, p99       float64
		curve                  []float64
	}{{
		name:  "backlog: from the health check to the last binding",
		run:   Run{Mode: Backlog, Scheduler: Gang},
		times: []PodTimes{pod(0, 11, 12), pod(0, 11.5, 14), pod(0, 12, 13), pod(0, 13, 15)},
		start: 10, seconds: 5, rate: 0.8, grouped: 3,
		curve: []float64{2, 3, 4, 5},
	}, {
		name:  "backlog: a binding before the health check answered starts the window",
		run:   Run{Mode: Backlog, Scheduler: Plain},
		times: []PodTimes{pod(0, 0, 9.5), pod(0, 0, 10.5)},
		start: 10, seconds: 1, rate: 2,
		curve: []float64{0, 1},
	}, {
		name:  "running: from the first pod seen, with latencies",
		run:   Run{Mode: Running, Scheduler: Gang},
		times: []PodTimes{pod(1, 1.1, 1.5), pod(2, 2.1, 3), pod(3, 3.1, 5)},
		start: 0, seconds: 4, rate: 0.75, grouped: 2.1, create: 2, p50: 1000, p99: 2000,
		curve: []float64{0.5, 2, 4},
	}, {
		name:  "O's pods labelled from creation have no grouping time",
		run:   Run{Mode: Running, Scheduler: Other},
		times: []PodTimes{pod(1, 1, 2), pod(1, 1, 3)},
		start: 0, seconds: 2, rate: 1, p50: 1000, p99: 2000,
		curve: []float64{1, 2},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run
			run.measure(tc.times, at(tc.start))
			assert.InDelta(t, tc.seconds, run.Seconds, 1e-9, "seconds")
			assert.InDelta(t, tc.rate, run.PodsPerSecond, 1e-9, "pods/s")
			assert.InDelta(t, tc.grouped, run.GroupedSeconds, 1e-9, "grouped")
			assert.InDelta(t, tc.create, run.CreateSeconds, 1e-9, "create")
			assert.InDelta(t, tc.p50, run.P50Ms, 1e-9, "p50")
			assert.InDelta(t, tc.p99, run.P99Ms, 1e-9, "p99")
			assert.InDeltaSlice(t, tc.curve, run.Curve, 1e-9, "curve")
		})
	}
}

func TestSchedulerLetters(t *testing.T) {
	for s, want := range map[Scheduler]string{Plain: "A", Gang: "B", Other: "O"} {
		assert.Equal(t, want, s.Letter())
	}
	o := ThroughputOptions{Other: &OtherScheduler{Name: "coscheduling"}}
	assert.Equal(t, []Scheduler{Plain, Gang}, ThroughputOptions{}.schedulers())
	for s, want := range map[Scheduler]string{Plain: "default-scheduler", Gang: "workmap-scheduler", Other: "coscheduling"} {
		assert.Equal(t, want, o.schedulerName(s))
	}
}
