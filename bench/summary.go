package bench

import (
	"maps"
	"slices"
)

// SchedulerSummary is one scheduler's successful runs of one mode: medians over its runs,
// and, against A in the same pairs, the medians of the per-pair ratios.
type SchedulerSummary struct {
	Runs     int
	PodsPerS float64
	// P50Ms and P99Ms are the medians of each run's create-to-bound p50 and p99 (running).
	P50Ms, P99Ms float64
	// CPUSecondsPerPod is the scheduler process's CPU time in the window per pod;
	// TotalCPUSecondsPerPod counts from the process's start (its startup and informer sync
	// too) to the end of the window.
	CPUSecondsPerPod, TotalCPUSecondsPerPod float64
	// RSSBytesPerPod is the scheduler's resident memory at the window's end over the run's
	// pods (0: not read).
	RSSBytesPerPod float64
	// WritesPerPod are the writes the API server served in the window per pod, every client
	// counted except the node heartbeats (PodWrites).
	WritesPerPod float64
	// Ratio is the median over pairs of this scheduler's pods/s ÷ A's; PairRatios are the
	// pairs' ratios in pair order (pairs where both runs succeeded).
	Ratio      float64
	PairRatios []float64
	// P99Ratio is the median over pairs of this scheduler's p99 ÷ A's (running mode).
	P99Ratio      float64
	P99PairRatios []float64
	// AssemblyP50Ms, AssemblyP99Ms, GangP50Ms and GangP99Ms are the medians of each run's
	// (running mode; see Run); GangP99Ratio is the median over pairs of this scheduler's
	// whole-gang p99 ÷ A's.
	AssemblyP50Ms, AssemblyP99Ms, GangP50Ms, GangP99Ms float64
	GangP99Ratio                                       float64
	GangP99PairRatios                                  []float64
}

// Summary is one mode's comparison of the schedulers.
type Summary struct {
	Mode Mode
	// Pairs counts the pairs where both A's and B's runs succeeded.
	Pairs                                   int
	Plain, Gang, Native, GangWebhook, Other SchedulerSummary
	// GangToNative are B's pods/s ÷ D's over the pairs where both ran (median, and each
	// pair's): what workmap-scheduler gives against Kubernetes' own gangs.
	GangToNative      float64
	GangToNativePairs []float64
}

// WriteBound is the most B/A can be when one client budget bounds both: 1 ÷ (1 + B's API
// writes per pod beyond A's, every client counted but the node heartbeats). ok is false
// when either has no run.
func (s Summary) WriteBound() (bound, extraWrites float64, ok bool) {
	if s.Plain.Runs == 0 || s.Gang.Runs == 0 {
		return 0, 0, false
	}
	extraWrites = max(s.Gang.WritesPerPod-s.Plain.WritesPerPod, 0)
	return 1 / (1 + extraWrites), extraWrites, true
}

// Of returns the summary of one scheduler.
func (s Summary) Of(sch Scheduler) SchedulerSummary {
	switch sch {
	case Plain:
		return s.Plain
	case Gang:
		return s.Gang
	case Native:
		return s.Native
	case GangWebhook:
		return s.GangWebhook
	}
	return s.Other
}

// schedulerOrder is the order schedulers appear in the report's tables.
var schedulerOrder = []Scheduler{Plain, Gang, Native, GangWebhook, Other}

// Present are the schedulers the tables of runs show: A and B always, D, E and O when any
// run is theirs.
func Present(runs []Run) []Scheduler {
	out := []Scheduler{Plain, Gang}
	for _, s := range schedulerOrder[2:] {
		if Has(runs, s) {
			out = append(out, s)
		}
	}
	return out
}

// Summarize compares the schedulers' runs of one mode.
func Summarize(runs []Run, mode Mode) Summary {
	byPair := map[int]map[Scheduler]Run{}
	for _, r := range runs {
		if r.Mode != mode || r.Error != "" {
			continue
		}
		if byPair[r.Pair] == nil {
			byPair[r.Pair] = map[Scheduler]Run{}
		}
		byPair[r.Pair][r.Scheduler] = r
	}
	s := Summary{Mode: mode, Plain: summarizeOne(runs, mode, Plain, nil)}
	s.Gang = summarizeOne(runs, mode, Gang, byPair)
	s.Native = summarizeOne(runs, mode, Native, byPair)
	s.GangWebhook = summarizeOne(runs, mode, GangWebhook, byPair)
	s.Other = summarizeOne(runs, mode, Other, byPair)
	s.Pairs = len(s.Gang.PairRatios)
	s.GangToNativePairs = pairRatios(byPair, Gang, Native)
	s.GangToNative = round(median(s.GangToNativePairs), 3)
	return s
}

// pairRatios are x's pods/s ÷ base's in each pair where both ran, in pair order.
func pairRatios(byPair map[int]map[Scheduler]Run, x, base Scheduler) []float64 {
	var out []float64
	for _, pair := range slices.Sorted(maps.Keys(byPair)) {
		a, okA := byPair[pair][base]
		b, okB := byPair[pair][x]
		if okA && okB && a.PodsPerSecond > 0 && b.PodsPerSecond > 0 {
			out = append(out, round(b.PodsPerSecond/a.PodsPerSecond, 3))
		}
	}
	return out
}

// summarizeOne summarizes sch's runs; with byPair, also its ratios to A's run of each pair.
func summarizeOne(runs []Run, mode Mode, sch Scheduler, byPair map[int]map[Scheduler]Run) SchedulerSummary {
	var out SchedulerSummary
	var rate, p50, p99, assembly50, assembly99, gang50, gang99, cpu, total, writes, rss []float64
	maxPair := 0
	for _, r := range runs {
		if r.Mode != mode || r.Scheduler != sch || r.Error != "" {
			continue
		}
		pods := float64(max(r.Pods, 1))
		rate, p50, p99 = append(rate, r.PodsPerSecond), append(p50, r.P50Ms), append(p99, r.P99Ms)
		assembly50, assembly99 = append(assembly50, r.AssemblyP50Ms), append(assembly99, r.AssemblyP99Ms)
		gang50, gang99 = append(gang50, r.GangP50Ms), append(gang99, r.GangP99Ms)
		cpu, total = append(cpu, r.Client.CPUSeconds/pods), append(total, r.TotalCPUSeconds/pods)
		writes = append(writes, r.Server.PodWrites()/pods)
		if r.Client.RSSBytes > 0 {
			rss = append(rss, r.Client.RSSBytes/pods)
		}
		maxPair = max(maxPair, r.Pair)
	}
	out.Runs = len(rate)
	out.PodsPerS, out.P50Ms, out.P99Ms = round(median(rate), 2), round(median(p50), 1), round(median(p99), 1)
	out.AssemblyP50Ms, out.AssemblyP99Ms = round(median(assembly50), 1), round(median(assembly99), 1)
	out.GangP50Ms, out.GangP99Ms = round(median(gang50), 1), round(median(gang99), 1)
	out.CPUSecondsPerPod, out.TotalCPUSecondsPerPod = round(median(cpu), 6), round(median(total), 6)
	out.WritesPerPod = round(median(writes), 3)
	out.RSSBytesPerPod = round(median(rss), 0)
	if byPair != nil {
		out.PairRatios = pairRatios(byPair, sch, Plain)
	}
	for pair := 1; byPair != nil && pair <= maxPair; pair++ {
		a, okA := byPair[pair][Plain]
		b, okB := byPair[pair][sch]
		if okA && okB && a.P99Ms > 0 && b.P99Ms > 0 {
			out.P99PairRatios = append(out.P99PairRatios, round(b.P99Ms/a.P99Ms, 3))
		}
		if okA && okB && a.GangP99Ms > 0 && b.GangP99Ms > 0 {
			out.GangP99PairRatios = append(out.GangP99PairRatios, round(b.GangP99Ms/a.GangP99Ms, 3))
		}
	}
	out.Ratio, out.P99Ratio = round(median(out.PairRatios), 3), round(median(out.P99PairRatios), 3)
	out.GangP99Ratio = round(median(out.GangP99PairRatios), 3)
	return out
}

// HasOther reports whether any run is O's.
func HasOther(runs []Run) bool { return Has(runs, Other) }

// Has reports whether any run is s's.
func Has(runs []Run, s Scheduler) bool {
	return slices.ContainsFunc(runs, func(r Run) bool { return r.Scheduler == s })
}
