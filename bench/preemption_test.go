package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func TestPreemptionCounts(t *testing.T) {
	s := PreemptionSetup{Nodes: 4, LowGangSize: 2, HighGangs: 2, HighGangSize: 2}
	tests := map[string]struct {
		left, bound, preempting map[string]int
		want                    PreemptionTally
	}{
		"whole victims, every preemptor bound": {
			left:       map[string]int{"low-2": 2, "low-3": 2, "high-0": 2, "high-1": 2},
			bound:      map[string]int{"low-2": 2, "low-3": 2, "high-0": 2, "high-1": 2},
			preempting: map[string]int{"high-0": 1, "high-1": 1},
			want:       PreemptionTally{Preemptions: 2, VictimPods: 4, VictimGangs: 2},
		},
		"a victim gang left with one pod, a preemptor bound in part, a preemption for nothing": {
			left:       map[string]int{"low-1": 1, "low-2": 2, "low-3": 2, "high-0": 2, "high-1": 2},
			bound:      map[string]int{"low-1": 1, "low-2": 2, "low-3": 2, "high-0": 2, "high-1": 1},
			preempting: map[string]int{"high-0": 1, "high-1": 2},
			want:       PreemptionTally{Preemptions: 3, VictimPods: 3, VictimGangs: 1, Futile: 2, PartialVictimGangs: 1, PartialPreemptorGangs: 1},
		},
		"a victim gang whose pods are all there but one lost its node": {
			left:  map[string]int{"low-0": 2, "low-1": 2, "low-2": 2, "low-3": 2},
			bound: map[string]int{"low-0": 1, "low-1": 2, "low-2": 2, "low-3": 2},
			want:  PreemptionTally{PartialVictimGangs: 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PreemptionCounts(s, tc.left, tc.bound, tc.preempting)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	family := func(counts ...uint64) *dto.MetricFamily { // buckets ≤ 0.001, 0.002, 0.004, +Inf
		var buckets []*dto.Bucket
		for i, upper := range []float64{0.001, 0.002, 0.004, math.Inf(1)} { // +Inf as the text format lists it
			buckets = append(buckets, &dto.Bucket{UpperBound: ptr.To(upper), CumulativeCount: ptr.To(counts[i])})
		}
		return &dto.MetricFamily{Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{{Name: ptr.To("extension_point"), Value: ptr.To("PostFilter")}}, Histogram: &dto.Histogram{SampleCount: ptr.To(counts[3]), Bucket: buckets}},
			{Label: []*dto.LabelPair{{Name: ptr.To("extension_point"), Value: ptr.To("Filter")}}, Histogram: &dto.Histogram{SampleCount: ptr.To(uint64(1000)), Bucket: buckets}},
		}}
	}
	before, after := family(10, 10, 10, 10), family(10, 60, 110, 110)
	h := histogramDelta(before, after, "extension_point", "PostFilter")
	require.Equal(t, 100.0, h.count, "the window's samples of PostFilter only")
	require.InDelta(t, 0.002, h.quantile(0.5), 1e-9, "the 50th of 100 ends the (0.001, 0.002] bucket")
	require.InDelta(t, 0.00396, h.quantile(0.99), 1e-9, "the 99th, 49/50 of the way into (0.002, 0.004]")
	require.Zero(t, histogramDelta(before, before, "extension_point", "PostFilter").quantile(0.99), "no samples")
	over := histogramDelta(family(0, 0, 0, 0), family(0, 0, 0, 5), "extension_point", "PostFilter")
	require.Equal(t, 0.004, over.quantile(0.99), "beyond the last bound: the last bound")
	require.True(t, over.beyond(0.99))
	require.False(t, h.beyond(0.99))
	require.False(t, math.IsNaN(over.quantile(0.5)))
}

func TestPreemptionReport(t *testing.T) {
	r := &Report{Preemption: &PreemptionResult{
		PreemptionSetup: PreemptionSetup{Nodes: 1000, GPUsPerNode: 8, LowGangSize: 2, HighGangs: 20, HighGangSize: 4, QPS: 500, Burst: 1000},
		Attempts:        120, AttemptP50Ms: 3.2, AttemptP99Ms: 41.5, Preemptions: 20, VictimPods: 160, VictimGangs: 80, VictimsPerGang: 8,
		SchedulerRSSBytes: 200 << 20,
	}}
	res := r.Results()
	require.Equal(t, ptr.To(41.5), res.PreemptionAttemptP99Ms)
	require.Equal(t, ptr.To(8.0), res.PreemptionVictimsPerGang)
	require.Equal(t, ptr.To(0.0), res.FutilePreemptions)
	require.Equal(t, ptr.To(0.0), res.PartialVictimGangs)
	md := r.Markdown("x.svg")
	require.Contains(t, md, "| `futile_preemptions` | 0 | 0 | pass |")
	require.Contains(t, md, "| `partial_victim_gangs` | 0 | 0 | pass |")
	require.Contains(t, md, "| `preemption_attempt_p99_ms` | 41.5 | ≤ D's (not measured) |  |")
	require.Contains(t, md, "| victim pods per high-priority gang (`preemption_victims_per_gang`; at least 8: a whole node for each of its pods) | **8** |")
	require.Contains(t, md, "| scheduler resident memory at the end | 200 MiB |")
	require.Nil(t, (&Report{}).Results().PreemptionAttemptP99Ms, "not measured")

	// With row D: B's p99 and victims per gang against D's, and D's own numbers beside B's.
	r.PreemptionNative = &PreemptionResult{PreemptionSetup: r.Preemption.PreemptionSetup,
		Attempts: 20, AttemptP50Ms: 30, AttemptP99Ms: 69, Preemptions: 20, VictimPods: 170, VictimGangs: 75, VictimsPerGang: 8.5,
		PartialVictimGangs: 10, SchedulerRSSBytes: 150 << 20}
	res = r.Results()
	require.Equal(t, ptr.To(69.0), res.NativePreemptionAttemptP99Ms)
	require.Equal(t, ptr.To(10.0), res.NativePartialVictimGangs)
	md = r.Markdown("x.svg")
	require.Contains(t, md, "| `preemption_attempt_p99_ms` | 41.5 | ≤ D's 69 | pass |")
	require.Contains(t, md, "| `preemption_victims_per_gang` | 8 | ≤ D's 8.5 | pass |")
	require.Contains(t, md, "| `native_partial_victim_gangs` | 10 |  |  |")
	require.Contains(t, md, "| low-priority gangs left in part (`partial_victim_gangs`) | **0** | **10** |")
	require.Contains(t, md, "| scheduler resident memory at the end | 200 MiB | 150 MiB |")
}
