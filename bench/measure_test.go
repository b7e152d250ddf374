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
		assemblyP99, gangP99   float64
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
		name: "running: a gang's members wait for its last one to be created",
		run:  Run{Mode: Running, Scheduler: Gang},
		times: []PodTimes{
			{Added: at(1), Bound: at(3.5), Gang: "gang-0"}, {Added: at(2), Bound: at(3.5), Gang: "gang-0"}, {Added: at(3), Bound: at(3.5), Gang: "gang-0"},
		},
		start: 0, seconds: 2.5, rate: 1.2, create: 2, p50: 1500, p99: 2500, assemblyP99: 2000, gangP99: 2500,
		curve: []float64{2.5, 2.5, 2.5},
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
			assert.InDelta(t, tc.assemblyP99, run.AssemblyP99Ms, 1e-9, "assembly p99")
			assert.InDelta(t, tc.gangP99, run.GangP99Ms, 1e-9, "whole gang p99")
			assert.InDeltaSlice(t, tc.curve, run.Curve, 1e-9, "curve")
		})
	}
}

func TestGangLatencies(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tests := map[string]struct {
		times                   []PodTimes
		wantAssembly, wantWhole []time.Duration
	}{
		"each gang on its own: members wait for their own gang's last member": {
			times: []PodTimes{
				{Added: at(0), Bound: at(5), Gang: "a"}, {Added: at(1), Bound: at(4), Gang: "a"},
				{Added: at(2), Bound: at(2.5), Gang: "b"}, {Added: at(2.5), Bound: at(3), Gang: "b"},
			},
			wantAssembly: []time.Duration{time.Second, 0, 500 * time.Millisecond, 0},
			wantWhole:    []time.Duration{time.Second, 5 * time.Second},
		},
		"a plain scheduler that binds members before the last exists: the gang is whole at its last binding": {
			times: []PodTimes{
				{Added: at(0), Bound: at(0.1), Gang: "a"}, {Added: at(3), Bound: at(3.2), Gang: "a"},
			},
			wantAssembly: []time.Duration{3 * time.Second, 0},
			wantWhole:    []time.Duration{3200 * time.Millisecond},
		},
		"pods without a controller are in no gang": {
			times: []PodTimes{{Added: at(0), Bound: at(1)}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assembly, whole := gangLatencies(tc.times)
			assert.Equal(t, tc.wantAssembly, assembly, "assembly, per pod in order")
			assert.ElementsMatch(t, tc.wantWhole, whole, "whole, per gang")
		})
	}
}
