package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummarize(t *testing.T) {
	run := func(s Scheduler, pair int, rate, p99, cpu float64) Run {
		return Run{Mode: Running, Scheduler: s, Pair: pair, Pods: 10, PodsPerSecond: rate, P99Ms: p99, Client: ClientStats{CPUSeconds: cpu}, TotalCPUSeconds: 2 * cpu,
			Server: ServerStats{Requests: map[string]float64{"POST": 30, "PATCH": 5}, WritesByResource: map[string]float64{"POST pods/binding": 10, "PATCH nodes/status": 5, "POST events": 20}}}
	}
	runs := []Run{
		run(Plain, 1, 50, 100, 1), run(Gang, 1, 40, 300, 2), run(Other, 1, 25, 150, 4),
		run(Plain, 2, 40, 200, 1), run(Gang, 2, 40, 200, 3), run(Other, 2, 20, 100, 4),
		{Mode: Running, Scheduler: Plain, Pair: 3, Error: "boom"}, run(Gang, 3, 10, 900, 9),
		run(Plain, 4, 10, 10, 1), // a pair without B or O
		{Mode: Backlog, Scheduler: Plain, Pair: 1, PodsPerSecond: 1000},
	}
	s := Summarize(runs, Running)
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"pairs with A and B", s.Pairs, 2},
		{"A's runs", s.Plain.Runs, 3},
		{"A's median pods/s", s.Plain.PodsPerS, 40.0},
		{"A has no ratio", s.Plain.PairRatios, []float64(nil)},
		{"B's runs", s.Gang.Runs, 3},
		{"B's pair ratios", s.Gang.PairRatios, []float64{0.8, 1}},
		{"B's ratio", s.Gang.Ratio, 0.9},
		{"B's p99 pair ratios", s.Gang.P99PairRatios, []float64{3, 1}},
		{"B's p99 ratio", s.Gang.P99Ratio, 2.0},
		{"B's CPU per pod", s.Gang.CPUSecondsPerPod, 0.3},
		{"B's CPU per pod since start", s.Gang.TotalCPUSecondsPerPod, 0.6},
		{"writes per pod, heartbeats left out", s.Gang.WritesPerPod, 3.0},
		{"O's pair ratios", s.Other.PairRatios, []float64{0.5, 0.5}},
		{"O's p99 ratio", s.Other.P99Ratio, 1.0},
		{"Of(Other)", s.Of(Other).Runs, 2},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
	assert.True(t, HasOther(runs))
	assert.False(t, HasOther(runs[:2]))
	empty := Summarize(nil, Backlog)
	assert.Zero(t, empty.Pairs)
	assert.Zero(t, empty.Gang.Ratio)
}
