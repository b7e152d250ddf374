package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// throughputMisses explains each missed scheduler target from the runs' breakdown.
func (r *Report) throughputMisses(res Results) []string {
	var out []string
	below := func(v *float64, target float64) bool { return v != nil && *v < target }
	belowBound := func(v, bound *float64) bool { return bound != nil && below(v, boundFloor(*bound)) }
	if v := res.GangThroughputRatio; belowBound(v, res.GangWriteBoundRatio) {
		out = append(out, r.ratioMiss("gang_throughput_ratio", *v, boundTarget(*res.GangWriteBoundRatio), r.Runs, Backlog, true))
	}
	if v := res.GangThroughputRatioRunning; belowBound(v, res.GangWriteBoundRatioRunning) {
		out = append(out, r.ratioMiss("gang_throughput_ratio_running", *v, boundTarget(*res.GangWriteBoundRatioRunning), r.Runs, Running, false))
	}
	if v := res.GangThroughputRatioHighQPS; below(v, TargetHighQPSRatio) {
		out = append(out, r.ratioMiss("gang_throughput_ratio_high_qps", *v, trimFloat(TargetHighQPSRatio), r.HighRuns, r.HeadlineMode(), false))
	}
	if v := res.P99RatioRunning; v != nil && *v > TargetP99Ratio {
		out = append(out, r.p99Miss(*v))
	}
	if v := res.WritesPerPodExtra; v != nil && *v > TargetWritesExtra {
		out = append(out, writesMiss(*v, r.Runs, r.HeadlineMode()))
	}
	if v := res.PlainOverheadRatio; below(v, TargetOverheadRatio) {
		out = append(out, r.overheadMiss(*v))
	}
	if v := res.ScaleGangThroughputRatio; below(v, TargetRatio) {
		s := r.ratioMiss("scale_gang_throughput_ratio", *v, trimFloat(TargetRatio), r.ScaleRuns, Backlog, false)
		sum := Summarize(r.ScaleRuns, Backlog)
		out = append(out, s+fmt.Sprintf(" At this scale B's process used %.5f CPU seconds per pod in the window against A's %.5f (%.5f against %.5f since start).",
			sum.Gang.CPUSecondsPerPod, sum.Plain.CPUSecondsPerPod, sum.Gang.TotalCPUSecondsPerPod, sum.Plain.TotalCPUSecondsPerPod))
	}
	return out
}

// runsOfScheduler returns s's successful runs of one mode.
func runsOfScheduler(runs []Run, mode Mode, s Scheduler) []Run {
	var out []Run
	for _, run := range runs {
		if run.Mode == mode && run.Scheduler == s && run.Error == "" {
			out = append(out, run)
		}
	}
	return out
}

// extraWrites lists the kinds of write B (or C) made at least min more of per pod than A,
// the node heartbeats left out.
func extraWrites(runs []Run, mode Mode, min float64) []string {
	wa, wb := medianWrites(runs, mode, Plain), medianWrites(runs, mode, Gang)
	var extra []string
	for _, k := range sortedKeys(wb) {
		if d := wb[k] - wa[k]; d >= min && !isHeartbeat(k) {
			extra = append(extra, fmt.Sprintf("`%s` +%.2f", k, d))
		}
	}
	return extra
}

// boundFloor is the target of a ratio at the main limits: its write bound less the gap.
func boundFloor(bound float64) float64 { return round(bound-TargetWriteBoundGap, 3) }

// boundTarget says boundFloor with what it comes from.
func boundTarget(bound float64) string {
	return fmt.Sprintf("%s (write bound %.3f − %s)", trimFloat(boundFloor(bound)), bound, trimFloat(TargetWriteBoundGap))
}

func (r *Report) ratioMiss(key string, v float64, target string, runs []Run, mode Mode, withHigh bool) string {
	a, b := runsOfScheduler(runs, mode, Plain), runsOfScheduler(runs, mode, Gang)
	s := fmt.Sprintf("**%s = %.3f < %s** (%s mode). ", key, v, target, mode)
	if len(a) > 0 && len(b) > 0 {
		s += fmt.Sprintf("Per pod, A's scheduler process made %s API requests (%s) and B's %s (%s). ", perPod(a), methodsPerPod(a), perPod(b), methodsPerPod(b))
		if gets := medianRequests(b, "GET") - medianRequests(a, "GET"); gets >= 0.02 {
			s += fmt.Sprintf("B's GETs beyond A's (%.2f per pod, about %.0f a run) are almost all watches its informers started inside the window (client-go counts a watch as a GET, and a watch takes no token of the budget; discovery's reads of /api and /apis do). ", gets, gets*float64(max(b[0].Pods, 1)))
		}
		if fa, fb := throttledShare(a, "POST"), throttledShare(b, "POST"); fa-fb >= 0.1 {
			s += fmt.Sprintf("B's POSTs waited for the client rate limiter less often than A's (%.0f%% against %.0f%%): the bucket was not always empty while B ran, so part of B's window went to gathering whole gangs, not to the budget. ", 100*fb, 100*fa)
		}
		if extra := extraWrites(runs, mode, 0.1); len(extra) > 0 {
			s += "B's extra writes per pod (all clients): " + strings.Join(extra, ", ") + ". "
		}
		var grouped, window []float64
		for _, run := range b {
			grouped, window = append(grouped, run.GroupedSeconds), append(window, run.Seconds)
		}
		s += fmt.Sprintf("B's last pod carried its PodGroup label (it comes with the binding) %.1f s into its %.1f s window (medians). ", median(grouped), median(window))
		s += fmt.Sprintf("B's runs were bound by %s; A's by %s. ", b[0].BoundBy, a[0].BoundBy)
	}
	if withHigh && len(r.HighRuns) > 0 {
		h := Summarize(r.HighRuns, r.HeadlineMode())
		s += fmt.Sprintf("With every scheduler at qps %g / burst %d the ratio was %.3f (A %.1f, B %.1f pods/s, %s mode): ", r.Throughput.HighQPS, r.Throughput.HighBurst, h.Gang.Ratio, h.Plain.PodsPerS, h.Gang.PodsPerS, r.HeadlineMode())
		if h.Gang.Ratio >= TargetHighQPSRatio {
			s += "the client limits were what held B back. "
		} else {
			var hg, hw []float64
			for _, run := range runsOfScheduler(r.HighRuns, r.HeadlineMode(), Gang) {
				hg, hw = append(hg, run.GroupedSeconds), append(hw, run.Seconds)
			}
			s += fmt.Sprintf("B stays behind without the client limits too (%d pair, on a shared machine; there B's pods were all bound and labelled %.1f s into its %.1f s window), so beyond the budget its extra work per pod costs CPU and API server time: grouping in memory, PodGroup writes per gang, and waiting at Permit for the whole gang. ",
				h.Pairs, median(hg), median(hw))
		}
	}
	return s + "What would fix it: " + ratioFixes(runs, mode, b)
}

// p99Miss explains B's create-to-bound tail against A's: what of it is waiting for a gang's
// later members to be created, and what the rate at the budget makes of the tail.
func (r *Report) p99Miss(v float64) string {
	sum := Summarize(r.Runs, Running)
	a, b := sum.Plain, sum.Gang
	s := fmt.Sprintf("**p99_ratio_running = %.3f > %s.** Create-to-bound in running mode: A p50 %s ms, p99 %s ms; B p50 %s ms, p99 %s ms (medians; per-pair p99 ratios %s). ",
		v, trimFloat(TargetP99Ratio), fmtInt(a.P50Ms), fmtInt(a.P99Ms), fmtInt(b.P50Ms), fmtInt(b.P99Ms), joinFloats(b.P99PairRatios))
	if b.GangP99Ms > 0 && a.GangP99Ms > 0 {
		s += fmt.Sprintf("A pod of a gang is created before its gang's later members (the bench's %d workers each create one Job's pods in turn) and B binds none before the last exists: that wait is p50 %s / p99 %s ms of B's create-to-bound, and A, binding each pod as it comes, has none of it. Per gang, from its first member's creation to its last member bound (when the job can run): A p50 %s / p99 %s ms, B p50 %s / p99 %s ms (B ÷ A p99, median of pairs: %s; pairs %s). ",
			r.Throughput.CreateWorkers, fmtInt(b.AssemblyP50Ms), fmtInt(b.AssemblyP99Ms),
			fmtInt(a.GangP50Ms), fmtInt(a.GangP99Ms), fmtInt(b.GangP50Ms), fmtInt(b.GangP99Ms), trimFloat(b.GangP99Ratio), joinFloats(b.GangP99PairRatios))
	}
	bound, extra, _ := sum.WriteBound()
	tail, atBound := tailFromRate(r.Runs, bound)
	s += tail
	if atBound > TargetP99Ratio {
		return s + fmt.Sprintf("What would fix it: fewer API writes per pod on the budget the bindings use (B's %.2f beyond A's); with them, no change to how B schedules brings the tail under %s× A's while both are bound by that budget.",
			extra, trimFloat(TargetP99Ratio))
	}
	return s + "What would fix it: " + ratioFixes(r.Runs, Running, runsOfScheduler(r.Runs, Running, Gang))
}

// tailFromRate says how much of B's create-to-bound p99 against A's its rate explains. When
// the client budget bounds a running-mode run, the pods created last wait longest, in one
// queue of bindings, and are bound at the window's end: the p99 is about the window less
// the creation span, so a rate a little lower than A's makes a tail much longer than A's.
// bound is B's write bound (0: unknown): what its tail would be at that rate is said too.
func tailFromRate(runs []Run, bound float64) (text string, atBound float64) {
	// medians are the median window, creation span and p99 (seconds) of one scheduler's runs.
	medians := func(s Scheduler) (window, created, p99 float64) {
		var w, c, p []float64
		for _, run := range runsOfScheduler(runs, Running, s) {
			w, c, p = append(w, run.Seconds), append(c, run.CreateSeconds), append(p, run.P99Ms/1000)
		}
		return median(w), median(c), median(p)
	}
	wa, ca, pa := medians(Plain)
	wb, cb, pb := medians(Gang)
	if wa <= ca || wb <= cb { // no runs (median 0), or no creation span to speak of
		return "", 0
	}
	created := "as fast as A's"
	if d := cb - ca; math.Abs(d) >= 0.05 {
		created = fmt.Sprintf("%.1f s %s", math.Abs(d), map[bool]string{true: "sooner", false: "later"}[d < 0])
	}
	s := fmt.Sprintf("The tail is the queue at the budget: A's pods were all created %.1f s into its window and the last bound at %.1f s, B's at %.1f s and %.1f s (medians), so the window less the creation span, A %.2f s and B %.2f s, is about each p99 (%.2f s, %.2f s): a window %.1f%% longer than A's and pods created %s make B's tail %.0f%% longer. ",
		ca, wa, cb, wb, wa-ca, wb-cb, pa, pb, 100*(wb/wa-1), created, 100*((wb-cb)/(wa-ca)-1))
	if bound > 0 && wa/bound > cb {
		atBound = (wa/bound - cb) / (wa - ca)
		s += fmt.Sprintf("At its write bound (%.3f of A's rate, the extra writes on the same budget) B's window would be %.2f s and its tail %.2f of A's. ",
			bound, wa/bound, atBound)
	}
	return s, atBound
}

// writesMiss lists the kinds of write behind B's extra writes per pod.
func writesMiss(v float64, runs []Run, mode Mode) string {
	s := fmt.Sprintf("**writes_per_pod_extra = %.2f > %s** (%s mode). ", v, trimFloat(TargetWritesExtra), mode)
	wa, wb := medianWrites(runs, mode, Plain), medianWrites(runs, mode, Gang)
	var parts []string
	for _, k := range sortedKeys(wb) {
		if d := wb[k] - wa[k]; d >= 0.02 && !isHeartbeat(k) {
			src := writeSources[k]
			if src != "" {
				src = ": " + src
			}
			parts = append(parts, fmt.Sprintf("`%s` +%.2f%s", k, d, src))
		}
	}
	if len(parts) > 0 {
		s += fmt.Sprintf("B's writes per pod beyond A's, by kind: %s. ", strings.Join(parts, "; "))
	}
	return s + "What would fix it: " + ratioFixes(runs, mode, runsOfScheduler(runs, mode, Gang))
}

func isHeartbeat(k string) bool {
	for _, h := range HeartbeatWrites {
		if h == k {
			return true
		}
	}
	return false
}

// overheadMiss explains row C: workmap-scheduler on bare pods against A.
func (r *Report) overheadMiss(v float64) string {
	mode := r.BareMode()
	sum := Summarize(r.BareRuns, mode)
	a, c := runsOfScheduler(r.BareRuns, mode, Plain), runsOfScheduler(r.BareRuns, mode, Gang)
	s := fmt.Sprintf("**plain_overhead_ratio = %.3f < %s** (%s mode, bare pods). A %.1f pods/s, C %.1f pods/s (pair ratios %s). ",
		v, trimFloat(TargetOverheadRatio), mode, sum.Plain.PodsPerS, sum.Gang.PodsPerS, joinFloats(sum.Gang.PairRatios))
	if len(a) > 0 && len(c) > 0 {
		s += fmt.Sprintf("Per pod, A's process made %s API requests (%s) and C's %s (%s), and used %.4f and %.4f CPU seconds. ",
			perPod(a), methodsPerPod(a), perPod(c), methodsPerPod(c), sum.Plain.CPUSecondsPerPod, sum.Gang.CPUSecondsPerPod)
		if extra := extraWrites(r.BareRuns, mode, 0.02); len(extra) > 0 {
			s += "C's extra writes per pod (all clients): " + strings.Join(extra, ", ") + ". "
		}
		s += fmt.Sprintf("C's runs were bound by %s; A's by %s. ", c[0].BoundBy, a[0].BoundBy)
	}
	return s + "What would fix it: a pod with no gang should cost workmap-scheduler nothing beyond kube-scheduler's own work: no write, event or wait of the grouper for it, and the plugin's extension points returning at once for it."
}

// ratioFixes lists the changes the measured requests and timings point at. What it says of
// budgets follows workmap-scheduler: bindings, pod status and every request of the grouper
// (PodGroup creates and status writes, owner and definition watches) share the scheduler
// client's token bucket; events have kube-scheduler's event client and its bucket.
func ratioFixes(runs []Run, mode Mode, b []Run) string {
	wa, wb := medianWrites(runs, mode, Plain), medianWrites(runs, mode, Gang)
	var fixes []string
	if wb["PATCH pods/status"]-wa["PATCH pods/status"] >= 0.5 {
		fixes = append(fixes, "no nominatedNodeName patch for each pod waiting at Permit (kube-scheduler's NominatedNodeNameForExpectation, which workmap-scheduler turns off by default; a --feature-gates flag turned it back on), a second write per gang member on the binding budget")
	}
	if status := wb["PATCH podgroups/status"] + wb["PUT podgroups/status"]; status >= 0.125 {
		fixes = append(fixes, fmt.Sprintf("fewer PodGroup status writes (%.2f per pod here, each a token of the binding budget): at most one per gang for the phases it passes through together", status))
	}
	if wb["POST events"]-wa["POST events"] >= 0.5 {
		fixes = append(fixes, "no event per pod for a routine grouping (events have the event client's own budget, but each is API server time)")
	}
	if len(fixes) == 0 {
		return "profiling B's scheduling path; the requests per pod do not explain the gap."
	}
	return strings.Join(fixes, "; ") + "."
}

// throttledShare is the median share of the runs' requests of one verb that waited for the
// client rate limiter.
func throttledShare(runs []Run, verb string) float64 {
	var v []float64
	for _, r := range runs {
		if l := r.Client.Limiter[verb]; l.Waits > 0 {
			v = append(v, l.Throttled/l.Waits)
		}
	}
	return median(v)
}

// medianRequests is the median of the runs' requests of one verb per pod (the process's own).
func medianRequests(runs []Run, verb string) float64 {
	var v []float64
	for _, r := range runs {
		v = append(v, r.Client.Requests[verb]/float64(max(r.Pods, 1)))
	}
	return median(v)
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func perPod(runs []Run) string {
	var v []float64
	for _, r := range runs {
		v = append(v, r.Client.TotalRequests()/float64(max(r.Pods, 1)))
	}
	return fmt.Sprintf("%.2f", median(v))
}

func methodsPerPod(runs []Run) string {
	per := map[string][]float64{}
	for _, r := range runs {
		for m, n := range r.Client.Requests {
			per[m] = append(per[m], n/float64(max(r.Pods, 1)))
		}
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", k, median(per[k]))
	}
	return strings.Join(parts, ", ")
}
