package soak

import (
	"slices"
	"sort"
	"testing"
	"time"
)

// sample is one reading of a process's /metrics.
type sample struct {
	at         time.Time
	rss        float64
	goroutines float64
	// leads: the process led (leader_election_master_status 1) when it was read.
	leads bool
}

// growth is what a process's samples say over its measured stretch (see growthOf): the median
// of its first three samples against the median of its last three.
type growth struct {
	window                     time.Duration
	rss, goroutines            float64 // relative change
	rssFrom, rssTo, gFrom, gTo float64
}

// minStretch is the fewest samples a stretch is measured over: three for each median.
const minStretch = 6

// growthOf measures a process's samples after warmUp from its start, over the longest stretch
// in one role. A scheduler replica that takes the lead starts its scheduling loops and records
// events, and one that loses it stops them: its goroutines and memory change with its role, so
// a role change starts a new stretch, whose first sample (the new role still starting) is left
// out. ok is false when no stretch has minStretch samples.
func growthOf(samples []sample, started time.Time, warmUp time.Duration) (growth, bool) {
	var best, stretch []sample
	for i, s := range samples {
		if s.at.Sub(started) < warmUp {
			continue
		}
		switch {
		case len(stretch) == 0 && i > 0 && samples[i-1].leads != s.leads:
			continue // the first sample after a role change
		case len(stretch) > 0 && stretch[len(stretch)-1].leads != s.leads:
			stretch = nil
			continue
		}
		stretch = append(stretch, s)
		if len(stretch) >= len(best) {
			best = stretch
		}
	}
	if len(best) < minStretch {
		return growth{}, false
	}
	med := func(ss []sample, f func(sample) float64) float64 {
		v := []float64{f(ss[0]), f(ss[1]), f(ss[2])}
		sort.Float64s(v)
		return v[1]
	}
	rssOf := func(s sample) float64 { return s.rss }
	gOf := func(s sample) float64 { return s.goroutines }
	first, last := best[:3], best[len(best)-3:]
	g := growth{window: best[len(best)-1].at.Sub(best[0].at),
		rssFrom: med(first, rssOf), rssTo: med(last, rssOf), gFrom: med(first, gOf), gTo: med(last, gOf)}
	g.rss = g.rssTo/g.rssFrom - 1
	g.goroutines = g.gTo/g.gFrom - 1
	return g, true
}

func TestGrowthOfKeepsToOneRole(t *testing.T) {
	start := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	// samples builds one sample every 5 s from start, goroutines and role as given.
	samples := func(goroutines []float64, leads []bool) []sample {
		out := make([]sample, len(goroutines))
		for i := range goroutines {
			out[i] = sample{at: start.Add(time.Duration(i) * 5 * time.Second), rss: 100 << 20, goroutines: goroutines[i], leads: leads[i]}
		}
		return out
	}
	standby := func(n int) []bool { return make([]bool, n) }
	leading := func(n int) []bool { return slices.Repeat([]bool{true}, n) }
	tests := map[string]struct {
		goroutines []float64
		leads      []bool
		wantOK     bool
		wantFrom   float64
		wantTo     float64
		wantWindow time.Duration
	}{
		"one role all through: warm-up left out, then the whole life": {
			goroutines: []float64{500, 500, 266, 267, 268, 270, 271, 272, 275},
			leads:      standby(9),
			wantOK:     true, wantFrom: 267, wantTo: 272, wantWindow: 30 * time.Second,
		},
		"a standby that takes the lead is measured leading, its first leading sample left out": {
			goroutines: []float64{0, 0, 266, 266, 266, 300, 490, 491, 492, 495, 496, 497},
			leads:      append(standby(5), leading(7)...),
			wantOK:     true, wantFrom: 491, wantTo: 496, wantWindow: 25 * time.Second,
		},
		"a leader that loses the lead: the longer stretch counts": {
			goroutines: []float64{0, 0, 491, 492, 493, 494, 495, 496, 497, 400, 334, 334},
			leads:      append(leading(9), standby(3)...),
			wantOK:     true, wantFrom: 492, wantTo: 496, wantWindow: 30 * time.Second,
		},
		"too short in either role to say anything": {
			goroutines: []float64{0, 0, 266, 266, 266, 266, 300, 490, 491, 492},
			leads:      append(standby(6), leading(4)...),
		},
		"a leak within one role is still seen": {
			goroutines: []float64{0, 0, 300, 300, 300, 340, 380, 420, 460},
			leads:      leading(9),
			wantOK:     true, wantFrom: 300, wantTo: 420, wantWindow: 30 * time.Second,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g, ok := growthOf(samples(tc.goroutines, tc.leads), start, 10*time.Second)
			if ok != tc.wantOK {
				t.Fatalf("measured = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if g.gFrom != tc.wantFrom || g.gTo != tc.wantTo || g.window != tc.wantWindow {
				t.Errorf("goroutines %v → %v over %s, want %v → %v over %s", g.gFrom, g.gTo, g.window, tc.wantFrom, tc.wantTo, tc.wantWindow)
			}
		})
	}
}
