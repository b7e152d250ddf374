package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The targets of the topology step.
const (
	// TargetTopologyRatio is for B ÷ A on gangs that each ask for one rack.
	TargetTopologyRatio = 0.8
	// TargetTopologyToNative is for B ÷ D: workmap-scheduler against Kubernetes' own gangs
	// with its own topology, on the same gangs.
	TargetTopologyToNative = 1.5
	// TargetSingleDomain is the share of B's gangs whose pods all land in one rack.
	TargetSingleDomain = 1.0
)

// PlacementBenchmark is the micro-benchmark of placing one gang that asks for a rack.
const PlacementBenchmark = "BenchmarkTopologyPlacement"

// PreemptionBenchmark is one gang's look for victims in a full cluster of 100 and 1,000
// nodes (the preemption step's layout), without the eviction.
const PreemptionBenchmark = "BenchmarkGangPreemption"

// PlacementRacks are the cluster sizes BenchmarkTopologyPlacement places a gang in.
var PlacementRacks = []int{10, 100, 1000}

// placementAt is BenchmarkTopologyPlacement's result at racks racks in a layout: "free" (every
// rack free: the first is taken) or "worst" (every rack tried).
func placementAt(micro []MicroResult, racks int, layout string) (MicroResult, bool) {
	return Find(micro, fmt.Sprintf("%s/racks=%d/%s", PlacementBenchmark, racks, layout))
}

// topologyResults fills the keys of the topology step.
func (r *Report) topologyResults(res *Results) {
	sum := Summarize(r.TopologyRuns, Backlog)
	if len(sum.Gang.PairRatios) > 0 {
		res.TopologyGangThroughputRatio = num(sum.Gang.Ratio)
	}
	if len(sum.GangToNativePairs) > 0 {
		res.TopologyGangToNativeRatio = num(sum.GangToNative)
	}
	if p, ok := placementOf(r.TopologyRuns, Gang); ok {
		res.TopologySingleDomainFraction = num(p.SingleDomainFraction())
	}
	if p, ok := placementOf(r.TopologyRuns, Native); ok {
		res.TopologySingleDomainFractionNative = num(p.SingleDomainFraction())
	}
	keys := []**float64{&res.TopologyPlacementNsPerDomain10Racks, &res.TopologyPlacementNsPerDomain100Racks, &res.TopologyPlacementNsPerDomain1000Racks}
	for i, racks := range PlacementRacks {
		if m, ok := placementAt(r.Micro, racks, "worst"); ok {
			if v, ok := m.Metrics["ns/domain"]; ok {
				*keys[i] = num(v)
			}
		}
	}
}

// placementOf sums the placements of s's successful runs (false: none has one).
func placementOf(runs []Run, s Scheduler) (Placement, bool) {
	var sum Placement
	found := false
	for _, run := range runs {
		if run.Scheduler == s && run.Error == "" && run.Placement != nil {
			sum, found = sum.Add(*run.Placement), true
		}
	}
	return sum, found && sum.Gangs > 0
}

// topologyLabel names the schedulers of the topology step.
func topologyLabel(s Scheduler) string {
	switch s {
	case Plain:
		return "A: kube-scheduler, no gangs"
	case Gang:
		return "B: workmap-scheduler, rack required"
	case Native:
		return "D: kube-scheduler, native gangs + topology"
	}
	return s.Letter() + ": " + string(s)
}

// batchOf is the number of small gangs of a topology run.
func (r *Report) batchOf(run Run) int { return run.Gangs - r.Topology.LargeGangs }

// topologySection is the topology step: gangs that each ask for one rack.
func (r *Report) topologySection(p printer) {
	t := r.Topology
	if len(r.TopologyRuns) == 0 && r.TopologyErr == "" {
		return
	}
	sectionHead(p, "Topology-aware gangs: one rack each", r.TopologyErr)
	batches := make([]string, len(t.Batches))
	for i, b := range t.Batches {
		batches[i] = fmt.Sprintf("%s gangs of %d pods (%s pods in all with the large gangs, %.0f%% of the GPUs)",
			fmtInt(float64(b)), t.GangSize, fmtInt(float64(t.RunPods(b))), 100*float64(t.RunGPUs(b))/float64(max(t.Nodes()*t.GPUsPerNode, 1)))
	}
	p("A control plane of its own, started after the others were torn down, with Kubernetes' own gang and topology scheduling on for the whole step (`--feature-gates=%s` on kube-apiserver, kube-controller-manager and D's kube-scheduler; `scheduling.k8s.io/v1alpha2` served): %s kwok nodes of %d GPUs in %d racks of %d nodes (node label `%s`), %d racks a block (`%s`), created in parallel and all Ready and schedulable %.1f s after the start. The step took %s in all, its control plane and nodes included.",
		t.Gates(), fmtInt(float64(t.Nodes())), t.GPUsPerNode, t.Racks, t.NodesPerRack, t.RackLabel, t.RacksPerBlock, t.BlockLabel, r.TopologyNodesSeconds, fmtDuration(r.TopologySeconds))
	p("")
	p("- **The gangs**: each run has %d large gangs of %d pods of %d GPUs (%s GPUs a gang: %.0f%% of a rack) and, by batch, %s; each small gang's pods ask for %d GPUs (%d GPUs a gang). Every gang fits in one rack and every pod of a run fits at once; the large gangs sort first (`large-<i>` before `small-<i>`), so the schedulers, started on the backlog, meet them first. Every pod carries the label `%s` (its gang) whatever its scheduler, so that where each gang landed is read back after the run.",
		t.LargeGangs, t.LargeGangSize, t.LargeGPUsPerPod, fmtInt(float64(int64(t.LargeGangSize)*t.LargeGPUsPerPod)), 100*float64(int64(t.LargeGangSize)*t.LargeGPUsPerPod)/float64(max(t.NodesPerRack*t.GPUsPerNode, 1)),
		strings.Join(batches, " or "), t.GPUsPerPod, int64(t.GangSize)*t.GPUsPerPod, TopologyGangLabel)
	p("- **A** is kube-scheduler (default profile) on the same pods with no gang: no PodGroup, no gang label. **B** is workmap-scheduler with the shipped configuration and `topologyLevels: [{name: %s, nodeLabel: %s}, {name: %s, nodeLabel: %s}]`; each gang is a `scheduling.x-k8s.io/v1alpha1` PodGroup as an operator makes it (minMember = the gang's size, annotation `workmap.dev/topology-required: %s`), created before its pods, which carry its label.",
		BlockLevel, t.BlockLabel, RackLevel, t.RackLabel, RackLevel)
	if t.Native {
		p("- **D** is the same kube-scheduler binary as A with `--feature-gates=%s` (its TopologyPlacementGenerator and PodGroupPodsCount plugins join the default profile); each gang is a native `PodGroup` (gang `minCount` = the gang's size, `schedulingConstraints.topology: [{key: %s}]`), the object workmap-webhook writes for B's PodGroup when started with `--topology-levels %s=%s`, made here by the bench before the gang's pods (no webhook runs in this step), and each pod names it in `spec.schedulingGroup`.",
			t.Gates(), t.RackLabel, RackLevel, t.RackLabel)
	}
	limits := ""
	if t.QPS != r.Throughput.QPS && r.Throughput.QPS > 0 {
		limits = fmt.Sprintf(" — not the main `qps: %g`, at which the client budget rather than the scheduling work bounds A's and B's runs alike (one binding, one token), so that their ratio would not show what placing a gang costs, and the step would take minutes longer", r.Throughput.QPS)
	}
	p("- Backlog mode: a run's PodGroups and pods exist, then its scheduler starts; the window is from its health check answering (or its first binding) to the last pod bound. Every scheduler at `qps: %g`, `burst: %d` (its whole process: scheduler and event clients, as above)%s; each pair runs %s in that order; %d pair(s) per batch, numbered across the batches. Requests, waits, CPU and writes are counted as in the throughput runs above. After each run the bench deletes its pods, events and PodGroups in parallel (lifting the native PodGroups' finalizer itself, as kube-controller-manager's PodGroup protection controller would at its 20 qps), then its namespace, and waits until it is gone.",
		t.QPS, t.Burst, limits, runOrder(r.TopologyRuns), t.Pairs)
	p("- **Placement**: after each run the bench lists its pods and counts the gangs whose pods all share one rack (one block); `topology_single_domain_fraction(_native)` is that share over every gang of B's (D's) runs. A's share is shown for comparison: nothing asks it to keep a gang together.")
	p("")
	sum := Summarize(r.TopologyRuns, Backlog)
	scheds := Present(r.TopologyRuns)
	native := slices.Contains(scheds, Native)
	head := "| batch (small gangs) | pair | A pods/s | B pods/s | B/A"
	sep := "|---|---|---|---|---"
	if native {
		head += " | D pods/s | D/A | B/D"
		sep += "|---|---|---"
	}
	p("%s | gangs in one rack, %s |", head, strings.Join(letters(scheds), " / "))
	p("%s|---|", sep)
	for _, pair := range pairsOf(r.TopologyRuns) {
		runs := map[Scheduler]Run{}
		for _, run := range r.TopologyRuns {
			if run.Pair == pair {
				runs[run.Scheduler] = run
			}
		}
		rate := func(s Scheduler) string {
			run, ok := runs[s]
			switch {
			case !ok:
				return "—"
			case run.Error != "":
				return "failed"
			}
			return fmt.Sprintf("%.1f", run.PodsPerSecond)
		}
		ratio := func(x, base Scheduler) string {
			a, b := runs[base], runs[x]
			if a.Error != "" || b.Error != "" || a.PodsPerSecond == 0 || b.PodsPerSecond == 0 {
				return "—"
			}
			return fmt.Sprintf("%.3f", b.PodsPerSecond/a.PodsPerSecond)
		}
		var one []string
		for _, s := range scheds {
			if pl := runs[s].Placement; pl != nil {
				one = append(one, fmt.Sprintf("%d of %d", pl.OneRack, pl.Gangs))
			} else {
				one = append(one, "—")
			}
		}
		var any Run
		for _, run := range runs {
			any = run
		}
		row := fmt.Sprintf("| %s | %d | %s | %s | %s", fmtInt(float64(r.batchOf(any))), pair, rate(Plain), rate(Gang), ratio(Gang, Plain))
		if native {
			row += fmt.Sprintf(" | %s | %s | %s", rate(Native), ratio(Native, Plain), ratio(Gang, Native))
		}
		p("%s | %s |", row, strings.Join(one, " / "))
	}
	row := fmt.Sprintf("| **median of pairs** | | %.1f | %.1f | **%.3f**", sum.Plain.PodsPerS, sum.Gang.PodsPerS, sum.Gang.Ratio)
	if native {
		row += fmt.Sprintf(" | %.1f | %.3f | **%.3f**", sum.Native.PodsPerS, sum.Native.Ratio, sum.GangToNative)
	}
	var share []string
	for _, s := range scheds {
		if pl, ok := placementOf(r.TopologyRuns, s); ok {
			share = append(share, fmt.Sprintf("%.3f", pl.SingleDomainFraction()))
		} else {
			share = append(share, "—")
		}
	}
	p("%s | %s (share, every run) |", row, strings.Join(share, " / "))
	p("")
	p("Where the gangs landed, every run:")
	p("")
	p("| pair | scheduler | gangs placed | in one rack | in one block | most racks one gang spanned | split across racks | gangs not placed |")
	p("|---|---|---|---|---|---|---|---|")
	for _, run := range r.TopologyRuns {
		pl := run.Placement
		if pl == nil {
			p("| %d | %s | — | | | | | |", run.Pair, topologyLabel(run.Scheduler))
			continue
		}
		note := ""
		if run.Error != "" {
			note = " (the run failed: what was placed by then)"
		}
		p("| %d | %s | %d%s | %d | %d | %d | %s | %d |", run.Pair, topologyLabel(run.Scheduler), pl.Gangs, note, pl.OneRack, pl.OneBlock, pl.MaxRacks, pl.Split(), pl.Unbound)
	}
	p("")
	writesTable(p, r.TopologyRuns, Backlog, topologyLabel)
	p("Every run:")
	p("")
	runTable(p, r.TopologyRuns, topologyLabel)
	p("**What bound the runs:** %s", boundSummary(r.TopologyRuns, topologyLabel))
	p("")
	if d := r.topologyDiagnosis(); d != "" {
		p("%s", d)
		p("")
	}
	r.placementCostSection(p)
}

// letters are the schedulers' letters.
func letters(scheds []Scheduler) []string {
	out := make([]string, len(scheds))
	for i, s := range scheds {
		out[i] = s.Letter()
	}
	return out
}

// pairsOf are the pair numbers of the runs, in order.
func pairsOf(runs []Run) []int {
	seen := map[int]bool{}
	for _, run := range runs {
		seen[run.Pair] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// topologyDiagnosis says, per scheduler, what its runs spent per pod against A's, and where
// its gangs landed: the breakdown behind the ratios.
func (r *Report) topologyDiagnosis() string {
	runs := r.TopologyRuns
	a := runsOfScheduler(runs, Backlog, Plain)
	if len(a) == 0 {
		return ""
	}
	sum := Summarize(runs, Backlog)
	wa := medianWrites(runs, Backlog, Plain)
	s := fmt.Sprintf("**The breakdown** (medians over the runs): A made %s API requests per pod (%s), used %.4f CPU seconds per pod at %.2f cores, %.1f pods/s, and was bound by %s. ",
		perPod(a), methodsPerPod(a), sum.Plain.CPUSecondsPerPod, sum.Plain.CPUSecondsPerPod*sum.Plain.PodsPerS, sum.Plain.PodsPerS, a[0].BoundBy)
	for _, x := range []Scheduler{Gang, Native} {
		xs := runsOfScheduler(runs, Backlog, x)
		if len(xs) == 0 {
			continue
		}
		xsum := sum.Of(x)
		s += fmt.Sprintf("%s: %s requests per pod (%s), %.4f CPU seconds per pod (%.2f× A's) at %.2f cores, %.1f pods/s; ",
			topologyLabel(x), perPod(xs), methodsPerPod(xs), xsum.CPUSecondsPerPod, xsum.CPUSecondsPerPod/max(sum.Plain.CPUSecondsPerPod, 1e-9), xsum.CPUSecondsPerPod*xsum.PodsPerS, xsum.PodsPerS)
		wx := medianWrites(runs, Backlog, x)
		var extra []string
		for _, k := range sortedKeys(wx) {
			if d := wx[k] - wa[k]; d >= 0.01 && !isHeartbeat(k) {
				extra = append(extra, fmt.Sprintf("`%s` +%.2f", k, d))
			}
		}
		if len(extra) > 0 {
			s += "its writes per pod beyond A's (all clients): " + strings.Join(extra, ", ") + "; "
		}
		if verb, l := mostThrottled(xs); verb != "" {
			s += fmt.Sprintf("%.0f%% of its %s requests waited for the client rate limiter; ", 100*l, verb)
		}
		s += fmt.Sprintf("bound by %s. ", xs[0].BoundBy)
	}
	if b := sum.Gang; b.Runs > 0 && b.CPUSecondsPerPod < sum.Plain.CPUSecondsPerPod {
		s += fmt.Sprintf("B used less CPU per pod than A: once its first pod's PreFilter has placed a gang, each of its pods is confined to the node found for it (PreFilter's node set), so the scheduler filters and scores one node for it where A filters and scores its share of the %s nodes. ", fmtInt(float64(r.Topology.Nodes())))
	}
	s += "A scheduler's CPU seconds per pod are its whole process's (scheduling cycle, binding, informers) over the window; kube-scheduler decides one pod (or one gang) at a time, so work per pod that does not leave the scheduling cycle bounds its rate even with cores to spare. "
	if pl, ok := placementOf(runs, Native); ok && pl.OneRack < pl.Gangs {
		s += fmt.Sprintf("D kept %d of its %d gangs in one rack: Kubernetes' own topology split %s across racks although each PodGroup asked for one (`schedulingConstraints.topology`). ", pl.OneRack, pl.Gangs, pl.Split())
	}
	if pl, ok := placementOf(runs, Plain); ok {
		s += fmt.Sprintf("A, asked for nothing, kept %d of %d gangs in one rack (most racks for one gang: %d). ", pl.OneRack, pl.Gangs, pl.MaxRacks)
	}
	return s
}

// mostThrottled is the verb whose requests waited for the client rate limiter most often, and
// the median share that did, over the runs ("" when none waited).
func mostThrottled(runs []Run) (string, float64) {
	verbs := map[string]bool{}
	for _, run := range runs {
		for v := range run.Client.Limiter {
			verbs[v] = true
		}
	}
	best, share := "", 0.0
	for _, v := range slices.Sorted(maps.Keys(verbs)) {
		if f := throttledShare(runs, v); f > share {
			best, share = v, f
		}
	}
	return best, share
}

// placementCostSection shows BenchmarkTopologyPlacement: the cost of placing one gang.
func (r *Report) placementCostSection(p printer) {
	p("**What placing a gang costs** (`%s` in plugin/, the micro-benchmarks' medians: one gang of 4 pods of 8 GPUs asking for a rack of 4 nodes; with every rack free the first is taken, in the worst layout every rack is tried with the profile's filters):", PlacementBenchmark)
	p("")
	found := false
	for _, racks := range PlacementRacks {
		_, a := placementAt(r.Micro, racks, "free")
		_, b := placementAt(r.Micro, racks, "worst")
		found = found || a || b
	}
	if !found {
		p("not measured in this report (the micro step runs it: `-steps micro`).")
		p("")
		return
	}
	p("| racks | every rack free: per gang | per rack | every rack tried: per gang | per rack |")
	p("|---|---|---|---|---|")
	cell := func(racks int, layout string) string {
		m, ok := placementAt(r.Micro, racks, layout)
		if !ok {
			return "— | —"
		}
		return fmt.Sprintf("%s ms | %s µs", fmtFloat(m.NsPerOp/1e6), fmtFloat(m.Metrics["ns/domain"]/1e3))
	}
	for _, racks := range PlacementRacks {
		p("| %s | %s | %s |", fmtInt(float64(racks)), cell(racks, "free"), cell(racks, "worst"))
	}
	p("")
	p("It runs once per gang attempt, in its first pod's PreFilter; `topology_placement_ns_per_domain_*` are the per-rack costs of the worst layout.")
	p("")
}

// topologyMisses explains each missed target of the topology step from its runs' breakdown.
func (r *Report) topologyMisses(res Results) []string {
	var out []string
	runs := r.TopologyRuns
	sum := Summarize(runs, Backlog)
	a, b, d := runsOfScheduler(runs, Backlog, Plain), runsOfScheduler(runs, Backlog, Gang), runsOfScheduler(runs, Backlog, Native)
	compare := func(x, base []Run, xl, bl string) string {
		if len(x) == 0 || len(base) == 0 {
			return ""
		}
		xs, bs := summarizeOne(runs, Backlog, x[0].Scheduler, nil), summarizeOne(runs, Backlog, base[0].Scheduler, nil)
		return fmt.Sprintf("Per pod, %s's process made %s API requests (%s) and %s's %s (%s); CPU seconds per pod %.4f against %.4f; API writes per pod (every client, no heartbeats) %.2f against %.2f. %s's runs were bound by %s; %s's by %s. ",
			xl, perPod(x), methodsPerPod(x), bl, perPod(base), methodsPerPod(base), xs.CPUSecondsPerPod, bs.CPUSecondsPerPod, xs.WritesPerPod, bs.WritesPerPod, xl, x[0].BoundBy, bl, base[0].BoundBy)
	}
	if v := res.TopologyGangThroughputRatio; v != nil && *v < TargetTopologyRatio {
		s := fmt.Sprintf("**topology_gang_throughput_ratio = %.3f < %s** (backlog mode; pairs %s). ", *v, trimFloat(TargetTopologyRatio), joinFloats(sum.Gang.PairRatios))
		s += compare(b, a, "B", "A")
		if extra := extraWrites(runs, Backlog, 0.02); len(extra) > 0 {
			s += "B's extra writes per pod (all clients): " + strings.Join(extra, ", ") + ". "
		}
		if m, ok := placementAt(r.Micro, 10, "worst"); ok {
			s += fmt.Sprintf("Placing one gang costs B at most %s ms at 10 racks (`%s`, every rack tried), once per gang attempt. ", fmtFloat(m.NsPerOp/1e6), PlacementBenchmark)
		}
		out = append(out, s+"What would fix it: "+ratioFixes(runs, Backlog, b))
	}
	if v := res.TopologyGangToNativeRatio; v != nil && *v < TargetTopologyToNative {
		s := fmt.Sprintf("**topology_gang_to_native_ratio = %.3f < %s** (backlog mode; pairs %s). ", *v, trimFloat(TargetTopologyToNative), joinFloats(sum.GangToNativePairs))
		s += compare(b, d, "B", "D")
		s += "What would fix it: B's own requests and CPU per pod, above, are what it can cut; D's rate is Kubernetes' own."
		out = append(out, s)
	}
	if v := res.TopologySingleDomainFraction; v != nil && *v < TargetSingleDomain {
		pl, _ := placementOf(runs, Gang)
		out = append(out, fmt.Sprintf("**topology_single_domain_fraction = %.3f < %s.** B placed %d of its %d gangs in one rack; split across racks: %s (at most %d racks for one gang). Every gang asked for one rack through its PodGroup's `workmap.dev/topology-required: %s`. What would fix it: find why those gangs' pods were not confined to the rack their first pod's PreFilter chose (the scheduler's log of the run says which gang and which rack).",
			*v, trimFloat(TargetSingleDomain), pl.OneRack, pl.Gangs, pl.Split(), pl.MaxRacks, RackLevel))
	}
	return out
}

// fmtFloat formats a number as the results table does.
func fmtFloat(v float64) string { return fmtNum(&v) }

// fmtDuration formats seconds as a duration rounded to the second.
func fmtDuration(seconds float64) string {
	return time.Duration(seconds * float64(time.Second)).Round(time.Second).String()
}
