package bench

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// missSection says, for each missed target, why and what would fix it, from what the run
// measured.
func (r *Report) missSection(p printer, res Results) {
	var out []string
	if v := res.PerPodDecisionNs; v != nil && *v > TargetDecisionNs {
		out = append(out, r.decisionMiss(*v))
	}
	if v := res.GangThroughputRatio; v != nil && *v < TargetRatio {
		out = append(out, r.ratioMiss(*v))
	}
	if r.CLI != nil && r.CLI.Requests > r.CLI.ChildKinds+cliRequestsPerKind {
		out = append(out, fmt.Sprintf("**cli_tree_requests_1000_pods = %d > %d.** The requests are listed above: any beyond one list of WorkloadDefinitions, one GET of the JobSet, one list per child kind and one list of pods is the excess to remove.", r.CLI.Requests, r.CLI.ChildKinds+cliRequestsPerKind))
	}
	if r.CLI != nil && r.CLI.Ms >= TargetCLIMs {
		out = append(out, r.cliTimeMiss())
	}
	if r.Memory != nil && r.Memory.BytesPerPod > TargetBytesPerPod {
		out = append(out, memoryMiss(r.Memory))
	}
	p("## Misses: why, and what would fix them")
	p("")
	if len(out) == 0 {
		p("Every measured target was met.")
		p("")
		return
	}
	for _, o := range out {
		p("- %s", o)
	}
	p("")
}

func memoryMiss(m *MemoryResult) string {
	perGang := m.Pods / max(m.Gangs, 1)
	s := fmt.Sprintf("**grouper_bytes_per_pod = %s > %d.** ", fmtInt(m.BytesPerPod), TargetBytesPerPod)
	if m.BytesPerPod >= 0.9*m.PodObjectBytes {
		return s + fmt.Sprintf("Why: the grouper's pod informer caches whole pods, %s bytes each here (%s of them managedFields), although grouping reads only a pod's metadata, schedulerName, nodeName and phase; the rest (%s bytes per pod) is its per-Job state (the full Job read for grouping, %s bytes as an unstructured object, one per %d pods), the Job metadata, PodGroups and indexes. What would fix it: an informer transform (`SetTransform`) on the grouper's pod informer that keeps only what grouping and PodGroup status read (measured here: %s bytes per pod instead of %s, which would bring the total to about %s), and caching only the fields grouping reads of a full owner object.",
			fmtInt(m.PodObjectBytes), fmtInt(m.PodObjectBytes-m.PodObjectBytesNoManagedFields), fmtInt(m.BytesPerPod-m.PodObjectBytes), fmtInt(m.JobObjectBytes), perGang,
			fmtInt(m.PodObjectBytesGrouping), fmtInt(m.PodObjectBytes), fmtInt(m.BytesPerPod-m.PodObjectBytes+m.PodObjectBytesGrouping))
	}
	rest := m.BytesPerPod - m.PodObjectBytesGrouping
	return s + fmt.Sprintf("Why: the grouper's pod cache already keeps less than whole pods (%s bytes per pod in all, against %s for a whole pod); a pod reduced to what grouping reads is %s bytes here, most of it its label and annotation maps, owner references and names. The other %s bytes per pod are its per-Job state, amortized over %d pods: above all the full Job it reads for grouping and keeps (%s bytes as an unstructured object, %s per pod), the Job's cached metadata and the PodGroup, plus the informers' index entries. What would fix it: cache only the fields grouping reads of a full owner object (for a Job, its parallelism and min-member annotation) instead of the whole object, and keep fewer of a pod's fields (only workmap's own annotations, only the controller owner reference).",
		fmtInt(m.BytesPerPod), fmtInt(m.PodObjectBytes), fmtInt(m.PodObjectBytesGrouping), fmtInt(rest), perGang, fmtInt(m.JobObjectBytes), fmtInt(m.JobObjectBytes/float64(perGang)))
}

func (r *Report) decisionMiss(v float64) string {
	s := fmt.Sprintf("**per_pod_decision_ns = %s > %d.** ", fmtInt(v), TargetDecisionNs)
	pd, okPlace := Find(r.Micro, "BenchmarkPodDecision")
	j, okJob := Find(r.Micro, "BenchmarkDecideWarmJob")
	if okPlace && okJob {
		s += fmt.Sprintf("Its parts, measured in this run: placing the pod in the expanded JobSet (`BenchmarkPodDecision`) %s ns; a decision that needs no definition (a Job's pod: owner lookup and the native grouper, `BenchmarkDecideWarmJob`) %s ns. The remaining %s ns are the JobSet path's own work per pod: a two-level owner chain, the definition and cached-workload lookups, and handing the pod to the placement expressions. ",
			fmtInt(pd.NsPerOp), fmtInt(j.NsPerOp), fmtInt(v-pd.NsPerOp-j.NsPerOp))
	}
	if d, ok := Find(r.Micro, DecisionBenchmark); ok {
		s += fmt.Sprintf("Each decision allocates %s bytes in %s objects. ", fmtInt(d.BytesPerOp), fmtInt(d.AllocsPerOp))
	}
	if r.DecisionProfile != "" {
		s += "Where the bytes are allocated (`go tool pprof -sample_index=alloc_space -top` of `" + DecisionBenchmark + "`, this run):\n\n  ```\n  " + strings.ReplaceAll(r.DecisionProfile, "\n", "\n  ") + "\n  ```\n\n  "
	}
	return s + "What would fix it: take the allocations out of the warm path at the top sites above (a per-call map or slice that could be reused or avoided, a value that depends only on the owner's version cached with it), since allocation and the garbage collection it causes are most of a decision that does no API call."
}

func (r *Report) ratioMiss(v float64) string {
	mode := r.HeadlineMode()
	var a, b []Run
	for _, run := range r.Runs {
		if run.Mode == mode && run.Error == "" {
			if run.Scheduler == Plain {
				a = append(a, run)
			} else {
				b = append(b, run)
			}
		}
	}
	s := fmt.Sprintf("**gang_throughput_ratio = %.3f < %.1f.** ", v, TargetRatio)
	if len(a) > 0 && len(b) > 0 {
		s += fmt.Sprintf("Per pod, A's scheduler process made %s API requests (%s) and B's %s (%s). ", perPod(a), methodsPerPod(a), perPod(b), methodsPerPod(b))
		wa, wb := medianWrites(r.Runs, mode, Plain), medianWrites(r.Runs, mode, Gang)
		var extra []string
		for _, k := range sortedKeys(wb) {
			if d := wb[k] - wa[k]; d >= 0.1 {
				extra = append(extra, fmt.Sprintf("`%s` +%.2f", k, d))
			}
		}
		if len(extra) > 0 {
			s += "B's extra writes per pod (all clients, table above): " + strings.Join(extra, ", ") + ". "
		}
		var grouped, window []float64
		for _, run := range b {
			grouped, window = append(grouped, run.GroupedSeconds), append(window, run.Seconds)
		}
		s += fmt.Sprintf("B's grouper had labelled every pod %.1f s into its %.1f s window (medians); the rest is scheduling and binding. ", median(grouped), median(window))
		s += fmt.Sprintf("B's runs were bound by %s; A's by %s. ", b[0].BoundBy, a[0].BoundBy)
	}
	if len(r.HighRuns) > 0 {
		h := Summarize(r.HighRuns, mode)
		s += fmt.Sprintf("With both schedulers at qps %g / burst %d the ratio was %.3f (A %.1f, B %.1f pods/s): ", r.Throughput.HighQPS, r.Throughput.HighBurst, h.Ratio, h.PlainPodsPerS, h.GangPodsPerS)
		if h.Ratio >= TargetRatio {
			s += "the client limits were what held B back. "
		} else {
			var hg, hw []float64
			for _, run := range r.HighRuns {
				if run.Scheduler == Gang && run.Error == "" {
					hg, hw = append(hg, run.GroupedSeconds), append(hw, run.Seconds)
				}
			}
			s += fmt.Sprintf("B stays behind without the client limits too (%d pair, on a shared machine; there B's pods were all labelled %.1f s into its %.1f s window), so beyond the budget its extra writes per pod cost API server time, and its pipeline (grouping, a PATCH per pod by a few workers, then waiting at Permit for the whole gang) adds latency A does not have. ",
				h.Pairs, median(hg), median(hw))
		}
	}
	return s + "What would fix it: " + ratioFixes(r.Runs, mode, b)

}

// ratioFixes lists the changes the measured writes and timings point at.
func ratioFixes(runs []Run, mode Mode, b []Run) string {
	wa, wb := medianWrites(runs, mode, Plain), medianWrites(runs, mode, Gang)
	var fixes []string
	if wb["POST events"]-wa["POST events"] >= 0.5 {
		fixes = append(fixes, "no event per pod for a routine grouping (it shares the grouper's client budget with the label patch)")
	}
	if wb["PATCH pods/status"]-wa["PATCH pods/status"] >= 0.5 {
		fixes = append(fixes, "no nominatedNodeName patch for each pod waiting at Permit (kube-scheduler's NominatedNodeNameForExpectation, which workmap-scheduler could turn off with --feature-gates=NominatedNodeNameForExpectation=false), which costs the scheduler's own client a second write per gang member")
	}
	if wb["PATCH podgroups/status"] >= 0.25 {
		fixes = append(fixes, "PodGroup status patched less often (once per change of phase rather than as counts change)")
	}
	var grouped, window []float64
	for _, run := range b {
		grouped, window = append(grouped, run.GroupedSeconds), append(window, run.Seconds)
	}
	if median(window) > 0 && median(grouped) >= 0.5*median(window) {
		fixes = append(fixes, "faster grouping: more grouper workers (each grouping waits for its PATCH) or a client budget of its own for the in-process grouper")
	}
	if len(fixes) == 0 {
		return "profiling B's scheduling path; the writes per pod do not explain the gap."
	}
	return "fewer writes and waits per pod on B's path, each costing the same client budget and API server time as a binding: " + strings.Join(fixes, "; ") + "."
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (r *Report) cliTimeMiss() string {
	s := fmt.Sprintf("**cli_tree_ms_1000_pods = %s ≥ %d.** ", fmtInt(r.CLI.Ms), TargetCLIMs)
	if e, ok := Find(r.Micro, "BenchmarkExpandLive1000"); ok {
		s += fmt.Sprintf("The in-process work on the listed objects (`BenchmarkExpandLive1000`) is %s ms; ", fmtInt(e.NsPerOp/1e6))
	}
	if c, ok := Find(r.Micro, "BenchmarkCompileCatalogCold"); ok {
		s += fmt.Sprintf("compiling the whole catalog, which the CLI does at every start, costs %s ms (`BenchmarkCompileCatalogCold`); ", fmtInt(c.NsPerOp/1e6))
	}
	s += fmt.Sprintf("the offline `tree -f` of a 3-pod JobSet already takes %s ms against %s ms for process start alone. ", fmtInt(r.CLI.OfflineMs), fmtInt(r.CLI.VersionMs))
	if len(r.CLI.RunsMs) > 1 {
		fastest := slices.Min(r.CLI.RunsMs)
		s += fmt.Sprintf("The runs ranged from %s to %s ms: the load of the shared machine (see the load average above) weighs on every run, and even the fastest ", fmtInt(fastest), fmtInt(slices.Max(r.CLI.RunsMs)))
		if fastest >= TargetCLIMs {
			s += "missed the target. "
		} else {
			s += "met the target. "
		}
	}
	return s + "What would fix it: compile only the definitions the command needs (the one kind asked for, resolved from the raw catalog first), or cache compiled programs; and list pods as metadata or protobuf rather than JSON into unstructured objects."
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
