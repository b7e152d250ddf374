package soak

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
)

// sample is one reading of a process's heap profile, which collects garbage first, then of
// its /metrics and of what Linux counts in its resident memory.
type sample struct {
	at time.Time
	// rss is the resident memory right after the collection; freeHeap is the part of it that
	// the collection freed, or earlier ones did, and the Go runtime has not yet returned to
	// the system (go_memstats_heap_idle_bytes − go_memstats_heap_released_bytes).
	rss, freeHeap float64
	goroutines    float64
	// heap is the live heap after the collection; events is the part of it that client-go's
	// event libraries hold (see eventLibraries).
	heap, events float64
	// Where the resident memory is. anon and file are Linux's split of it (RssAnon: what the
	// process allocated; RssFile: its binary's code and other mapped files, resident once
	// read). heapSpans is the heap's spans in use (go_memstats_heap_inuse_bytes: the live
	// heap and the free room in partly used spans), stacks the goroutines' stacks, runtime
	// the runtime's own structures (GC metadata, span and cache structures, profiling
	// buckets, the rest: go_memstats_{gc,buck_hash,other}_sys_bytes and
	// go_memstats_{mspan,mcache}_inuse_bytes). Zero when not read.
	anon, file, heapSpans, stacks, runtime float64
	// leads: the process led (leader_election_master_status 1) when it was read.
	leads bool
}

// sampleFigures are the figures of a sample that a median is taken of.
var sampleFigures = []func(*sample) *float64{
	func(s *sample) *float64 { return &s.rss }, func(s *sample) *float64 { return &s.freeHeap },
	func(s *sample) *float64 { return &s.goroutines }, func(s *sample) *float64 { return &s.heap },
	func(s *sample) *float64 { return &s.events }, func(s *sample) *float64 { return &s.anon },
	func(s *sample) *float64 { return &s.file }, func(s *sample) *float64 { return &s.heapSpans },
	func(s *sample) *float64 { return &s.stacks }, func(s *sample) *float64 { return &s.runtime },
}

// medianOf is the sample whose every figure is the median of that figure in ss (the upper
// one of an even number), at the middle sample's time.
func medianOf(ss []sample) sample {
	m := ss[len(ss)/2]
	for _, f := range sampleFigures {
		v := make([]float64, len(ss))
		for i := range ss {
			v[i] = *f(&ss[i])
		}
		sort.Float64s(v)
		*f(&m) = v[len(v)/2]
	}
	return m
}

// netHeap is the live heap without what the event libraries hold.
func (s sample) netHeap() float64 { return s.heap - s.events }

// inUse is the resident memory without the free heap: what the process would hold once the
// runtime returned every free page.
func (s sample) inUse() float64 { return s.rss - s.freeHeap }

// unaccounted is the resident memory the process allocated (RssAnon) that is not in the Go
// heap's spans, free heap, stacks or runtime structures.
func (s sample) unaccounted() float64 {
	return s.anon - s.heapSpans - s.freeHeap - s.stacks - s.runtime
}

// growth is what a process's samples say over its measured stretch (see growthOf): the median
// of the first quarter of its samples (from) against the median of its last quarter (to),
// three samples each at least.
type growth struct {
	window   time.Duration
	from, to sample
}

// rss, netHeap and goroutines are the relative changes of the resident memory, of the live
// heap net of the event libraries, and of the goroutines.
func (g growth) rss() float64        { return g.to.rss/g.from.rss - 1 }
func (g growth) netHeap() float64    { return g.to.netHeap()/g.from.netHeap() - 1 }
func (g growth) goroutines() float64 { return g.to.goroutines/g.from.goroutines - 1 }

// inUseNetOfEvents is the relative change of the resident memory in use (see sample.inUse)
// without the growth of what the event libraries hold. Read right after a collection, the
// heap holds its live bytes and little else, so each byte they hold is one resident byte.
// When they hold less at the end, nothing is added back.
func (g growth) inUseNetOfEvents() float64 {
	return (g.to.inUse()-max(0, g.to.events-g.from.events))/g.from.inUse() - 1
}

// maxGrowth is the most a process's memory may grow from its warm-up to its end, for
// processes measured over at least memoryWindow (over a shorter window, a relist after a
// kube-apiserver restart is still in the figure: it is reported, not held to the limit).
const (
	maxGrowth    = 0.10
	memoryWindow = 3 * time.Minute
)

// minStretch is the fewest samples a stretch is measured over: three for each median.
const minStretch = 6

// growthOf measures a process's samples over the longest stretch in one role, from
// warmUp(leads) after the role began (a leader's can be longer than a standby's). A scheduler
// replica that takes the lead starts its scheduling loops, records events and runs code it
// never ran as a standby; one that loses the lead stops them: its goroutines and memory change
// with its role, so a role change starts a new stretch and a new warm-up. A process's first
// role begins at its start; a later one at the first sample that saw it. ok is false when no
// stretch has minStretch samples.
func growthOf(samples []sample, started time.Time, warmUp func(leads bool) time.Duration) (growth, bool) {
	var best, stretch []sample
	roleBegan := started
	for i, s := range samples {
		if i > 0 && samples[i-1].leads != s.leads {
			roleBegan, stretch = s.at, nil
		}
		if s.at.Sub(roleBegan) < warmUp(s.leads) {
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
	// A quarter of the stretch at each end: the live heap follows the objects in flight in
	// the cluster and moves by a tenth or more from one sample to the next (a standby's
	// 25.6 to 34.6 MiB over 16 minutes with no trend), which three samples do not average out.
	k := max(3, len(best)/4)
	return growth{window: best[len(best)-1].at.Sub(best[0].at), from: medianOf(best[:k]), to: medianOf(best[len(best)-k:])}, true
}

// always is a warm-up of d in either role.
func always(d time.Duration) func(bool) time.Duration {
	return func(bool) time.Duration { return d }
}

// eventWindow is the longest client-go's tools/events keeps an event it recorded: its
// finishSeries runs every 6 minutes (finishTime) and drops the events last seen more than
// 6 minutes before. What a leader's event recorder holds therefore rises for its first 12
// minutes of leading and then stays within the same bounds; a leader's memory is measured
// from then on.
const eventWindow = 12 * time.Minute

// eventLibraries are the packages of client-go's event recorders. Both keep what they
// recorded so that repeats fold into one: tools/events every event for 6 to 12 minutes (its
// key includes the object's resourceVersion, so every pod's Scheduled event is an entry),
// tools/record up to 4,096 entries. A process that records events therefore holds more
// memory for its first 12 minutes of recording, then follows a sawtooth, without a leak.
var eventLibraries = []string{"k8s.io/client-go/tools/events.", "k8s.io/client-go/tools/record."}

// heapShares reads a heap profile (gzipped protobuf, as /debug/pprof/heap serves it): the
// bytes in use, and those allocated under the event libraries' code.
func heapShares(data []byte) (live, events float64, err error) {
	p, err := profile.ParseData(data)
	if err != nil {
		return 0, 0, err
	}
	inUse := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "inuse_space" })
	if inUse < 0 {
		return 0, 0, fmt.Errorf("the profile has no inuse_space values: not a heap profile")
	}
	for _, s := range p.Sample {
		v := float64(s.Value[inUse])
		live += v
		if underEventLibrary(s) {
			events += v
		}
	}
	return live, events, nil
}

func underEventLibrary(s *profile.Sample) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			for _, pkg := range eventLibraries {
				if strings.HasPrefix(line.Function.Name, pkg) {
					return true
				}
			}
		}
	}
	return false
}

func TestGrowthOfKeepsToOneRole(t *testing.T) {
	start := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	// samples builds one sample every 5 s from start, goroutines and role as given.
	samples := func(goroutines []float64, leads []bool) []sample {
		out := make([]sample, len(goroutines))
		for i := range goroutines {
			out[i] = sample{at: start.Add(time.Duration(i) * 5 * time.Second), rss: 100 << 20, heap: 40 << 20, goroutines: goroutines[i], leads: leads[i]}
		}
		return out
	}
	standby := func(n int) []bool { return make([]bool, n) }
	leading := func(n int) []bool { return slices.Repeat([]bool{true}, n) }
	tests := map[string]struct {
		goroutines   []float64
		leads        []bool
		leaderWarmUp time.Duration
		wantOK       bool
		wantFrom     float64
		wantTo       float64
		wantWindow   time.Duration
	}{
		"one role all through: warm-up left out, then the whole life": {
			goroutines: []float64{500, 500, 266, 267, 268, 270, 271, 272, 275},
			leads:      standby(9),
			wantOK:     true, wantFrom: 267, wantTo: 272, wantWindow: 30 * time.Second,
		},
		"a standby that takes the lead is measured leading, from the warm-up after it took it": {
			goroutines: []float64{0, 0, 266, 266, 266, 300, 490, 491, 492, 495, 496, 497, 498, 499},
			leads:      append(standby(5), leading(9)...),
			wantOK:     true, wantFrom: 492, wantTo: 498, wantWindow: 30 * time.Second,
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
		"a leader is measured from its own, longer warm-up": {
			goroutines:   append(slices.Repeat([]float64{266}, 8), 300, 350, 400, 450, 480, 490, 500, 500, 501, 501, 502, 502, 503),
			leads:        append(standby(8), leading(13)...),
			leaderWarmUp: 30 * time.Second,
			wantOK:       true, wantFrom: 500, wantTo: 502, wantWindow: 30 * time.Second,
		},
		"a leader that never led past its warm-up is measured standing by": {
			goroutines:   append(slices.Repeat([]float64{266}, 8), 300, 350, 400, 450, 480),
			leads:        append(standby(8), leading(5)...),
			leaderWarmUp: 30 * time.Second,
			wantOK:       true, wantFrom: 266, wantTo: 266, wantWindow: 25 * time.Second,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			warmUp := func(leads bool) time.Duration {
				if leads {
					return max(10*time.Second, tc.leaderWarmUp)
				}
				return 10 * time.Second
			}
			g, ok := growthOf(samples(tc.goroutines, tc.leads), start, warmUp)
			if ok != tc.wantOK {
				t.Fatalf("measured = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if g.from.goroutines != tc.wantFrom || g.to.goroutines != tc.wantTo || g.window != tc.wantWindow {
				t.Errorf("goroutines %v → %v over %s, want %v → %v over %s", g.from.goroutines, g.to.goroutines, g.window, tc.wantFrom, tc.wantTo, tc.wantWindow)
			}
		})
	}
}

func TestGrowthNetOfTheEventLibrariesAndFreePages(t *testing.T) {
	start := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	const mib = 1 << 20
	// A leader whose event cache fills from 0 to 14 MiB: read after a collection, its resident
	// memory follows byte for byte.
	var filling, leaking, burst []sample
	for i := range 8 {
		at := start.Add(time.Duration(i) * time.Minute)
		events := float64(2 * i * mib)
		filling = append(filling, sample{at: at, rss: 160*mib + events, heap: 40*mib + events, events: events, goroutines: 490, leads: true})
		// The same, and 1 MiB a minute of its own on top.
		own := float64(i * mib)
		leaking = append(leaking, sample{at: at, rss: 160*mib + events + own, heap: 40*mib + events + own, events: events, goroutines: 490, leads: true})
		// No events; a relist at minute 5 left 40 MiB of freed pages the runtime still holds.
		s := sample{at: at, rss: 160 * mib, heap: 40 * mib, goroutines: 490}
		if i >= 5 {
			s.rss, s.freeHeap = 200*mib, 40*mib
		}
		burst = append(burst, s)
	}
	// A leader whose cache empties (a series finished) while resident memory stays where it was.
	emptying := slices.Clone(filling)
	slices.Reverse(emptying)
	for i := range emptying {
		emptying[i].at, emptying[i].rss = filling[i].at, 180*mib
	}
	tests := map[string]struct {
		samples                              []sample
		wantNetHeap, wantInUse, wantPlainRSS float64
	}{
		"an event cache filling is no growth":         {samples: filling, wantNetHeap: 0, wantInUse: 0, wantPlainRSS: 10.0 / 162},
		"a leak beside it is still seen in both":      {samples: leaking, wantNetHeap: 5.0 / 41, wantInUse: 5.0 / 163, wantPlainRSS: 15.0 / 163},
		"a cache that empties adds nothing back":      {samples: emptying, wantNetHeap: 0, wantInUse: 0, wantPlainRSS: 0},
		"freed pages not yet returned are not growth": {samples: burst, wantNetHeap: 0, wantInUse: 0, wantPlainRSS: 40.0 / 160},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g, ok := growthOf(tc.samples, start, always(0))
			require.True(t, ok)
			require.InDelta(t, tc.wantNetHeap, g.netHeap(), 1e-9, "live heap net of the event libraries")
			require.InDelta(t, tc.wantInUse, g.inUseNetOfEvents(), 1e-9, "resident memory in use, net of the event libraries")
			require.InDelta(t, tc.wantPlainRSS, g.rss(), 1e-9, "resident memory in all")
		})
	}
}

func TestGrowthOfSeesTrendsThroughNoise(t *testing.T) {
	start := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	const mib = 1 << 20
	// A standby's live heap sample by sample (MiB): it follows the objects in flight. Here
	// the first three samples are low and the last three high by chance, with no trend: the
	// first and the last quarter hold about the same values.
	noise := []float64{-3, -4, -2, 3, 2, 1, 0, 4, 0, 3, -2, 1, -4, 2, 0, -1, 3, -3, 1, 2, -2, 0, 4, -1, 0, -3, 1, -2, 2, 4, 3, 4}
	series := func(perSample float64) []sample {
		out := make([]sample, len(noise))
		for i, n := range noise {
			heap := (30 + perSample*float64(i) + n) * mib
			out[i] = sample{at: start.Add(time.Duration(i) * 30 * time.Second), rss: 120*mib + heap, heap: heap, goroutines: 313}
		}
		return out
	}
	tests := map[string]struct {
		perSample float64
		wantGrew  bool
	}{
		"noise around a flat line is no growth":                     {perSample: 0, wantGrew: false},
		"a leak of 0.2 MiB a sample is seen through the same noise": {perSample: 0.2, wantGrew: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g, ok := growthOf(series(tc.perSample), start, always(0))
			require.True(t, ok)
			require.Equal(t, tc.wantGrew, g.netHeap() > maxGrowth, "live heap %.1f → %.1f MiB", g.from.heap/mib, g.to.heap/mib)
		})
	}
}

func TestHeapSharesCountsWhatTheEventLibrariesHold(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	fns := []*profile.Function{
		fn(1, "k8s.io/api/events/v1.(*Event).DeepCopy"),
		fn(2, "k8s.io/client-go/tools/events.(*eventBroadcasterImpl).recordToSink"),
		fn(3, "github.com/workmap/workmap/grouper.(*Hub).Decide"),
		fn(4, "k8s.io/client-go/tools/record.(*eventLogger).eventObserve"),
		fn(5, "runtime.main"),
	}
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	locs := []*profile.Location{loc(1, fns[0]), loc(2, fns[1]), loc(3, fns[2]), loc(4, fns[3]), loc(5, fns[4])}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_space", Unit: "bytes"}},
		Function:   fns,
		Location:   locs,
		Sample: []*profile.Sample{
			// The copy tools/events keeps: allocated in DeepCopy, called from recordToSink.
			{Location: []*profile.Location{locs[0], locs[1], locs[4]}, Value: []int64{9000, 3000}},
			{Location: []*profile.Location{locs[2], locs[4]}, Value: []int64{5000, 2000}},
			{Location: []*profile.Location{locs[3], locs[4]}, Value: []int64{700, 500}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))

	live, events, err := heapShares(buf.Bytes())
	require.NoError(t, err)
	require.Equal(t, 5500.0, live, "every byte in use")
	require.Equal(t, 3500.0, events, "the bytes held under tools/events and tools/record")

	cpu := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	buf.Reset()
	require.NoError(t, cpu.Write(&buf))
	_, _, err = heapShares(buf.Bytes())
	require.ErrorContains(t, err, "not a heap profile")

	_, _, err = heapShares([]byte("not a profile"))
	require.Error(t, err)
}
