package bench

import "fmt"

// bareLabel names the schedulers of row C: A and workmap-scheduler, both on bare pods.
func bareLabel(s Scheduler) string {
	if s == Gang {
		return "C: workmap-scheduler, bare pods"
	}
	return "A: kube-scheduler, bare pods"
}

// bareSection is row C: workmap-scheduler on pods that have no gang.
func (r *Report) bareSection(p printer) {
	if len(r.BareRuns) == 0 && r.BareErr == "" {
		return
	}
	t := r.Throughput
	sectionHead(p, "workmap-scheduler on pods without a gang (row C)", r.BareErr)
	p("What workmap-scheduler costs a pod that is not in any gang. The same control plane and nodes as above; each run has %d bare pods (plain Pods: no owner, no `workmap.dev/min-member` annotation, one GPU each), shaped like the throughput runs' pods otherwise. **A** schedules them with `schedulerName: default-scheduler`, **C** is workmap-scheduler (same binary and configuration as B) with `schedulerName: workmap-scheduler`; both at `qps: %g`, `burst: %d`, alternating A C for %d pair(s) per mode (%v), measured as above. `plain_overhead_ratio` is C/A in %s mode (target ≥ %s).",
		t.Gangs*t.PodsPerGang, t.QPS, t.Burst, t.BarePairs, t.BareModes, r.BareMode(), trimFloat(TargetOverheadRatio))
	p("")
	p("| mode | A pods/s | C pods/s | C/A (median of pairs) | pair ratios | A / C API requests per pod | A / C writes per pod (no heartbeats) | A / C CPU s per pod |")
	p("|---|---|---|---|---|---|---|---|")
	for _, m := range t.BareModes {
		s := Summarize(r.BareRuns, m)
		p("| %s | %.1f | %.1f | %.3f | %s | %s / %s | %.2f / %.2f | %.4f / %.4f |", m, s.Plain.PodsPerS, s.Gang.PodsPerS, s.Gang.Ratio, joinFloats(s.Gang.PairRatios),
			requestsPerPod(r.BareRuns, m, Plain), requestsPerPod(r.BareRuns, m, Gang), s.Plain.WritesPerPod, s.Gang.WritesPerPod, s.Plain.CPUSecondsPerPod, s.Gang.CPUSecondsPerPod)
	}
	p("")
	writesTable(p, r.BareRuns, r.BareMode(), bareLabel)
	runTable(p, r.BareRuns, bareLabel)
	p("**What bound these runs:** %s", boundSummary(r.BareRuns, bareLabel))
	p("")
}

// scaleSection is the scale rows: many pods and nodes, backlog mode, CPU and memory per pod.
func (r *Report) scaleSection(p printer) {
	r.scaleRowSection(p, r.scaleRow())
	if r.Scale20k != nil {
		r.scaleRowSection(p, *r.Scale20k)
	}
}

func (r *Report) scaleRowSection(p printer, row ScaleRow) {
	if len(row.Runs) == 0 && row.Err == "" {
		return
	}
	t, sc := r.Throughput, row.Setup
	sectionHead(p, fmt.Sprintf("Scale: %s pods on %s nodes", fmtInt(float64(sc.Pods)), fmtInt(float64(sc.Nodes))), row.Err)
	p("A control plane of its own, started after the one before it was torn down (so its nodes and their heartbeats weigh on no other row): %d kwok nodes of %d GPUs, created in parallel and all Ready and schedulable %.1f s later, before the first run (the bench lifts the not-ready taint the API server puts on each new node as soon as kwok reports the node Ready, as the node lifecycle controller does, only faster than that controller's 20 qps client). Each run: %s pods in gangs of %d (%s Jobs, shaped as above), backlog mode, every scheduler at `qps: %g`, `burst: %d`; %d pair(s). CPU is the scheduler process's `process_cpu_seconds_total` from its /metrics at the window's start and end, per pod; \"since start\" also counts its startup and informer sync of the backlog. Memory is its `process_resident_memory_bytes` at the window's end, per pod of the run.",
		sc.Nodes, sc.GPUsPerNode, row.NodesSeconds, fmtInt(float64(sc.Pods)), sc.PodsPerGang, fmtInt(float64(sc.Pods/max(sc.PodsPerGang, 1))), t.QPS, t.Burst, sc.Pairs)
	p("")
	s := Summarize(row.Runs, Backlog)
	scheds := []Scheduler{Plain, Gang}
	if HasOther(row.Runs) {
		scheds = append(scheds, Other)
	}
	p("| scheduler | pods/s | ratio to A (median of pairs) | pair ratios | CPU s per pod (window) | CPU s per pod (since start) | scheduler cores | writes per pod (no heartbeats) | resident bytes per pod |")
	p("|---|---|---|---|---|---|---|---|---|")
	for _, sch := range scheds {
		x := s.Of(sch)
		ratio, pairs := "—", "—"
		if sch != Plain {
			ratio, pairs = fmt.Sprintf("%.3f", x.Ratio), joinFloats(x.PairRatios)
		}
		cores := 0.0
		if x.PodsPerS > 0 {
			cores = x.CPUSecondsPerPod * x.PodsPerS
		}
		memory := "—"
		if x.RSSBytesPerPod > 0 {
			memory = fmtInt(x.RSSBytesPerPod)
		}
		p("| %s | %.1f | %s | %s | %.5f | %.5f | %.2f | %.2f | %s |", r.label(sch), x.PodsPerS, ratio, pairs, x.CPUSecondsPerPod, x.TotalCPUSecondsPerPod, cores, x.WritesPerPod, memory)
	}
	p("")
	runTable(p, row.Runs, r.label)
	p("**What bound these runs:** %s", boundSummary(row.Runs, r.label))
	p("")
}

// requestsPerPod is the median over a scheduler's runs of one mode of its API requests per pod.
func requestsPerPod(runs []Run, mode Mode, s Scheduler) string {
	var sel []Run
	for _, run := range runs {
		if run.Mode == mode && run.Scheduler == s && run.Error == "" {
			sel = append(sel, run)
		}
	}
	return perPod(sel)
}
