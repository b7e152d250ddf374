package bench

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/workmap/workmap/e2e/harness"
)

// label names a scheduler in the report's tables.
func (r *Report) label(s Scheduler) string {
	if s == Other && r.Throughput.Other != nil {
		return "O: " + r.Throughput.Other.Name
	}
	return s.Letter() + ": " + string(s)
}

func (r *Report) throughputSection(p printer, chart string) {
	t := r.Throughput
	sectionHead(p, "Scheduler throughput", r.ThroughputErr)
	p("One local control plane (etcd, kube-apiserver, kube-controller-manager, kwok) with %d kwok nodes of %d GPUs. Each run: %d gangs × %d pods = %d pods, one GPU each, in its own namespace; every pod of a run fits at once.",
		t.Nodes, t.GPUsPerNode, t.Gangs, t.PodsPerGang, t.Gangs*t.PodsPerGang)
	p("")
	p("- **The pods** belong to `batch/v1` Jobs (parallelism = completions = %d), the most common gang-shaped owner: for workmap a Job is a native gang of its parallelism. The Jobs carry `spec.managedBy: %s`, so the Job controller leaves them alone and the bench creates their pods itself, shaped as the Job controller makes them (template labels, controller owner reference), with its own client (qps %g, %d workers): the kube-controller-manager's default client limit (20 qps) would otherwise make pod creation the bound of every run.", t.PodsPerGang, JobManagedBy, t.CreateQPS, t.CreateWorkers)
	p("- **A** is kube-scheduler (the control plane's binary), default profile; its pods ask for `default-scheduler` and have no gang. **B** is workmap-scheduler with the shipped `deploy/scheduler/config.yaml`; its pods ask for `workmap-scheduler`, are grouped in memory by its in-process grouper (one PodGroup of minMember %d per Job) and bound all-or-nothing, each with its pod-group label on the Binding.", t.PodsPerGang)
	if Has(r.Runs, Native) {
		p("- **D** is the same kube-scheduler binary as A with Kubernetes' own gang scheduling on (`--feature-gates=%s`; the control plane serves `scheduling.k8s.io/v1alpha2` for the whole bench, with the same gates on kube-apiserver and kube-controller-manager, for A and B too); its pods ask for `default-scheduler` and pass through **workmap-webhook** (the binary of this checkout, registered for D's and E's namespaces only, by the label `%s`), which makes each Job's native `PodGroup` (gang `minCount` %d) when its first pod is admitted and sets every pod's `spec.schedulingGroup`: no second scheduler. D's ratio is to A of the same pair; B/D is B's pods/s ÷ D's in the same pair.", harness.NativeGangGates, WebhookNamespaceLabel, t.PodsPerGang)
	}
	if Has(r.Runs, GangWebhook) {
		p("- **E** is B (workmap-scheduler, the shipped configuration) with workmap-webhook in front: its pods get their pod-group label at creation, so the grouper writes none (the `PATCH pods` row of the writes table).")
	}
	if o := t.Other; o != nil {
		how := "the same pods, asking for it"
		if o.PodGroups {
			how = fmt.Sprintf("the same pods, asking for it and carrying the `%s` label from creation; the bench creates each gang's `scheduling.x-k8s.io/v1alpha1` PodGroup (minMember %d) before its pods, inside the window in running mode", "scheduling.x-k8s.io/pod-group", t.PodsPerGang)
		}
		p("- **O** is `%s` with the configuration `%s` (its clientConnection and leader election set as for A and B), profile `%s`: %s. It runs in each pair after A and B; its ratio is to A of the same pair.", o.Binary, o.ConfigPath, o.Name, how)
	}
	p("- **One client budget per process, the same for all**: `clientConnection.qps: %g`, `burst: %d` (kube-scheduler's defaults unless changed with -qps/-burst). A kube-scheduler process has one token bucket of that size for its scheduler client (bindings, pod status; its informers' lists and watches) and one for its event client (events): a process budget of %g requests/s (burst %d) in all. workmap-scheduler (B, E) is kube-scheduler with the same two buckets and no other: its grouper's PodGroup creates, status writes, owner and definition watches draw from the scheduler client's bucket, so each of them takes a token a binding could have used. The \"requests/s\" column of every run is what the process used of its budget over the window (all its clients, events included).", t.QPS, t.Burst, 2*t.QPS, 2*t.Burst)
	p("- **Write bound**: when the scheduler client's bucket bounds a run, B can bind at most 1 ÷ (1 + its API writes per pod beyond A's) of A's rate; `gang_write_bound_ratio` is that bound, from the writes table below, and the target of the ratios at these limits is to come within %s of it.", trimFloat(TargetWriteBoundGap))
	p("- Each scheduler is started fresh for its run and stopped after it; each pair runs %s in that order, per mode (%d pairs). After each run its namespace is deleted and the bench waits until it is gone, so no cleanup falls into the next run's window.%s", runOrder(r.Runs), t.Pairs, t.Quiet.describe())
	p("- **Running** mode: the scheduler is ready, then the pods are created; the window is from the first pod the watch sees to the last bound, latency per pod from the watch seeing it created to the watch seeing `spec.nodeName` set (one clock; `creationTimestamp` has one-second resolution). **Backlog** mode: all pods exist, then the scheduler starts; the window is from its health check answering (or its first binding, if that came first) to the last pod bound (pure drain rate; startup shown apart).")
	p("- Requests, rate-limiter waits and CPU are the scheduler process's own (client-go's `rest_client_*` metrics and `process_cpu_seconds_total` from its /metrics, read at the start and end of the window; \"since start\" is its CPU from process start to the window's end). A request counts as throttled when it waited more than 5 ms for the client rate limiter. The API server's CPU and the writes it served (every client: the scheduler, kwok marking pods Running, the bench creating pods, the controllers) come from its own /metrics over the same window. \"All grouped at\" is when the watch saw the last pod get its PodGroup label (workmap's grouping), from the window start.")
	p("")
	if chart != "" {
		p("![pods bound over time, every run](%s)", chart)
		p("")
	}
	r.comparisonTable(p, r.Runs, t.Modes, r.label)
	writesTable(p, r.Runs, r.HeadlineMode(), r.label)
	if note := nativeNote(r.Runs, r.admissionMode()); note != "" {
		p("%s", note)
		p("")
	}
	p("Every run:")
	p("")
	runTable(p, r.Runs, r.label)
	p("**Which limit bound the runs:** %s", boundSummary(r.Runs, r.label))
	p("")
	if len(r.HighRuns) > 0 {
		p("### The same comparison at higher client limits")
		p("")
		p("To test whether the client limits bound the runs above, and what placing a gang costs where the CPU bounds the run, %d more pair(s) in %s mode with every scheduler at `qps: %g`, `burst: %d`, %d gangs of %d pods a run (%d pods: at a few hundred pods/s a run of the main size lasts about a second, which a scheduler's first moments and the API server's pauses would decide); everything else the same:",
			t.HighPairs, r.HeadlineMode(), t.HighQPS, t.HighBurst, t.HighRunGangs(), t.PodsPerGang, t.HighRunGangs()*t.PodsPerGang)
		p("")
		r.comparisonTable(p, r.HighRuns, []Mode{r.HeadlineMode()}, r.label)
		runTable(p, r.HighRuns, r.label)
		p("**What bound these runs:** %s", boundSummary(r.HighRuns, r.label))
		p("")
	}
}

// comparisonTable has a row per mode: each scheduler's median pods/s, its ratio to A (median
// of the per-pair ratios, and each pair's), and in running mode the latencies and the p99
// ratio to A.
func (r *Report) comparisonTable(p printer, runs []Run, modes []Mode, label func(Scheduler) string) {
	scheds := Present(runs)
	latency := false
	for _, m := range modes {
		latency = latency || m == Running
	}
	head, sep := []string{"mode", label(Plain) + " pods/s"}, []string{"---", "---"}
	for _, s := range scheds[1:] {
		l := s.Letter()
		head = append(head, label(s)+" pods/s", l+"/A (median of pairs)", "pair ratios")
	}
	native := slices.Contains(scheds, Native)
	if native {
		head = append(head, "B/D (median of pairs)", "pair ratios")
	}
	if latency {
		for _, s := range scheds {
			head = append(head, s.Letter()+" p50 / p99 ms")
			if s != Plain {
				head = append(head, s.Letter()+"/A p99 (median of pairs)")
			}
		}
	}
	for len(sep) < len(head) {
		sep = append(sep, "---")
	}
	p("| %s |", strings.Join(head, " | "))
	p("|%s|", strings.Join(sep, "|"))
	for _, m := range modes {
		sum := Summarize(runs, m)
		cells := []string{string(m), fmt.Sprintf("%.1f", sum.Plain.PodsPerS)}
		for _, s := range scheds[1:] {
			x := sum.Of(s)
			cells = append(cells, fmt.Sprintf("%.1f", x.PodsPerS), fmt.Sprintf("%.3f", x.Ratio), joinFloats(x.PairRatios))
		}
		if native {
			cells = append(cells, fmt.Sprintf("%.3f", sum.GangToNative), joinFloats(sum.GangToNativePairs))
		}
		if latency {
			for _, s := range scheds {
				x := sum.Of(s)
				if m != Running {
					cells = append(cells, "—")
				} else {
					cells = append(cells, fmt.Sprintf("%s / %s", fmtInt(x.P50Ms), fmtInt(x.P99Ms)))
				}
				switch {
				case s == Plain:
				case m != Running:
					cells = append(cells, "—")
				default:
					cells = append(cells, fmt.Sprintf("%.3f (%s)", x.P99Ratio, joinFloats(x.P99PairRatios)))
				}
			}
		}
		p("| %s |", strings.Join(cells, " | "))
	}
	p("")
}

func runTable(p printer, runs []Run, label func(Scheduler) string) {
	p("| mode | pair | scheduler | pods/s | window s | pods created in s (running) / scheduler startup s (backlog) | all grouped at s | p50 / p99 ms | scheduler's API requests | per pod | requests/s (process) | throttled (>5 ms), by verb | limiter wait s | scheduler cores | scheduler CPU s per pod, window / since start | API server cores | API writes per pod, all clients | bound by |")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, run := range runs {
		if run.Error != "" {
			p("| %s | %d | %s | failed: %s |||||||||||||||  |", run.Mode, run.Pair, label(run.Scheduler), strings.ReplaceAll(run.Error, "|", "/"))
			continue
		}
		lat, startup, grouped := "—", "—", "—"
		if run.Mode == Running {
			lat = fmt.Sprintf("%s / %s", fmtInt(run.P50Ms), fmtInt(run.P99Ms))
			startup = fmt.Sprintf("%.2f", run.CreateSeconds)
		} else {
			startup = fmt.Sprintf("%.2f", run.StartupSeconds)
		}
		if run.GroupedSeconds > 0 {
			grouped = fmt.Sprintf("%.2f", run.GroupedSeconds)
		}
		cores, server := 0.0, 0.0
		if run.Seconds > 0 {
			cores, server = run.Client.CPUSeconds/run.Seconds, run.Server.CPUSeconds/run.Seconds
		}
		pods := float64(max(run.Pods, 1))
		total, lim := run.Client.TotalRequests(), run.Client.TotalLimiter()
		cpu := fmt.Sprintf("%.4f / —", run.Client.CPUSeconds/pods)
		if run.TotalCPUSeconds > 0 {
			cpu = fmt.Sprintf("%.4f / %.4f", run.Client.CPUSeconds/pods, run.TotalCPUSeconds/pods)
		}
		rate := 0.0
		if run.Seconds > 0 {
			rate = total / run.Seconds
		}
		p("| %s | %d | %s | %.1f | %.2f | %s | %s | %s | %s | %.2f | %.1f | %s | %.1f | %.2f | %s | %.2f | %.2f | %s |", run.Mode, run.Pair, label(run.Scheduler), run.PodsPerSecond, run.Seconds, startup, grouped, lat,
			methods(run.Client.Requests), total/pods, rate, throttledByVerb(run.Client.Limiter), lim.Seconds, cores, cpu, server, run.Server.Writes()/pods, run.BoundBy)
	}
	p("")
}

// writeSources says which component makes each kind of write during a run.
var writeSources = map[string]string{
	"POST pods/binding":      "the scheduler binding the pod",
	"PATCH pods":             "a pod's PodGroup label written after its bind (only where the API server does not copy it from the Binding; none when workmap-webhook labelled the pod at creation)",
	"PATCH pods/status":      "kwok marking the pod Running; kube-scheduler setting nominatedNodeName on a pod that waits at Permit (NominatedNodeNameForExpectation, on by default in 1.36) or a PodScheduled condition after a failed attempt",
	"POST events":            "the schedulers' Scheduled event (and workmap's events on a pod held for long or not grouped)",
	"PATCH events":           "repeated events counted up",
	"POST podgroups":         "workmap's grouper creating a gang's PodGroup (B); workmap-webhook creating its native PodGroup (D); for O with PodGroups, the bench (running mode)",
	"PATCH podgroups/status": "a PodGroup's phase and counts kept current (O's own controller, if it has one); kube-scheduler's PodGroupScheduled condition on a native PodGroup (D)",
	"PUT podgroups/status":   "a PodGroup's status written by workmap's grouper on a change of phase (2 s after the first pod event, so phases passed together cost one write; counts alone are not written)",
	"POST pods":              "the bench creating pods (running mode)",
	"POST jobs":              "the bench creating Jobs (running mode)",
	"PATCH nodes/status":     "kwok's node heartbeats: node status (not counted in writes_per_pod_extra)",
	"PUT leases":             "kwok's node heartbeats: node Lease renewals (not counted in writes_per_pod_extra)",
}

// medianWrites is, per kind of write, the median over a scheduler's runs of one mode of the
// writes per pod.
func medianWrites(runs []Run, mode Mode, s Scheduler) map[string]float64 {
	per := map[string][]float64{}
	n := 0
	for _, run := range runs {
		if run.Mode != mode || run.Scheduler != s || run.Error != "" {
			continue
		}
		n++
		for k, v := range run.Server.WritesByResource {
			per[k] = append(per[k], v/float64(max(run.Pods, 1)))
		}
	}
	out := map[string]float64{}
	for k, v := range per {
		for len(v) < n {
			v = append(v, 0) // runs without this write
		}
		out[k] = median(v)
	}
	return out
}

// medianTotalWrites is the median over a scheduler's runs of one mode of all writes per pod.
func medianTotalWrites(runs []Run, mode Mode, s Scheduler) float64 {
	var v []float64
	for _, run := range runs {
		if run.Mode == mode && run.Scheduler == s && run.Error == "" {
			v = append(v, run.Server.Writes()/float64(max(run.Pods, 1)))
		}
	}
	return median(v)
}

// writesTable shows the writes the API server served per pod, by kind, in each scheduler's
// runs of the mode.
func writesTable(p printer, runs []Run, mode Mode, label func(Scheduler) string) {
	scheds := Present(runs)
	per := map[Scheduler]map[string]float64{}
	keys := map[string]bool{}
	for _, s := range scheds {
		per[s] = medianWrites(runs, mode, s)
		for k := range per[s] {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	p("Writes the API server served per pod during the %s runs, every client counted (medians of the runs):", mode)
	p("")
	head := []string{"write"}
	for _, s := range scheds {
		head = append(head, label(s))
	}
	p("| %s | made by |", strings.Join(head, " | "))
	p("|---|%s---|", strings.Repeat("---|", len(scheds)))
	cells := func(f func(Scheduler) float64) string {
		var c []string
		for _, s := range scheds {
			c = append(c, fmt.Sprintf("%.2f", f(s)))
		}
		return strings.Join(c, " | ")
	}
	for _, k := range sorted {
		small := true
		for _, s := range scheds {
			small = small && per[s][k] < 0.005
		}
		if small {
			continue
		}
		p("| `%s` | %s | %s |", k, cells(func(s Scheduler) float64 { return per[s][k] }), writeSources[k])
	}
	sum := Summarize(runs, mode)
	p("| all (median of each run's total) | %s | |", cells(func(s Scheduler) float64 { return medianTotalWrites(runs, mode, s) }))
	p("| all but the node heartbeats (median of each run's) | %s | what `writes_per_pod_extra` compares |", cells(func(s Scheduler) float64 { return sum.Of(s).WritesPerPod }))
	p("")
}

// boundSummary counts the runs by what bound them.
func boundSummary(runs []Run, label func(Scheduler) string) string {
	counts := map[string]int{}
	for _, run := range runs {
		if run.Error != "" {
			continue
		}
		what := run.BoundBy
		if i := strings.IndexAny(what, "(:"); i > 0 {
			what = strings.TrimSpace(what[:i])
		}
		counts[fmt.Sprintf("%s runs: %s", label(run.Scheduler), what)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, counts[k])
	}
	if len(parts) == 0 {
		return "no successful run."
	}
	return strings.Join(parts, "; ") + "."
}

// admissionMode is the mode whose window holds the pods' creation, and with it their way
// through workmap-webhook: running when it was measured.
func (r *Report) admissionMode() Mode {
	if slices.Contains(r.Throughput.Modes, Running) {
		return Running
	}
	return r.HeadlineMode()
}

// nativeNote says, from the runs, what workmap's native path (D) adds and avoids against A and
// B: "" without D's runs.
func nativeNote(runs []Run, mode Mode) string {
	sum := Summarize(runs, mode)
	if sum.Native.Runs == 0 {
		return ""
	}
	wa, wd := medianWrites(runs, mode, Plain), medianWrites(runs, mode, Native)
	var extra []string
	for _, k := range sortedKeys(wd) {
		if d := wd[k] - wa[k]; d >= 0.01 && !slices.Contains(HeartbeatWrites, k) {
			extra = append(extra, fmt.Sprintf("`%s` +%.2f", k, d))
		}
	}
	s := fmt.Sprintf("**What the native path adds and avoids** (%s mode): D ran at %.3f of A (pairs %s) and B at %.3f of D (pairs %s). ",
		mode, sum.Native.Ratio, joinFloats(sum.Native.PairRatios), sum.GangToNative, joinFloats(sum.GangToNativePairs))
	s += "workmap's part of D is one admission call per pod, decided from workmap-webhook's caches with no write of its own for the pod, and one native PodGroup created per gang (`POST podgroups`); it avoids the second scheduler and, with it, every write workmap-scheduler makes for a gang. "
	if len(extra) > 0 {
		s += "D's writes per pod beyond A's: " + strings.Join(extra, ", ") + " (the PodGroup creates are workmap-webhook's; the rest is kube-scheduler's gang scheduling: a pod's status written while it waits for the rest of its gang, the PodGroup's condition). "
	}
	if sum.GangWebhook.Runs > 0 {
		e, b := medianWrites(runs, mode, GangWebhook)[podPatches], medianWrites(runs, mode, Gang)[podPatches]
		s += fmt.Sprintf("With workmap-webhook in front of workmap-scheduler (E) the pods arrive labelled: `PATCH pods` per pod %.2f against B's %.2f", e, b)
		if b < 0.005 {
			s += " (this API server copies the label B puts on the Binding, so B writes none either)"
		}
		s += ". "
	}
	if mode == Backlog {
		s += "In backlog mode the pods, their admission and their PodGroups come before the window. "
	}
	return s + "Every gang of these runs fits at once; how each scheduler retries a gang that cannot fit is not measured here."
}

// runOrder names the schedulers of a pair in the order they run ("A B D E").
func runOrder(runs []Run) string {
	var letters []string
	for _, s := range Present(runs) {
		letters = append(letters, s.Letter())
	}
	return strings.Join(letters, " ")
}

// native137Section is the native137 step: A, B and D again on Kubernetes 1.37's control plane.
func (r *Report) native137Section(p printer) {
	if len(r.Native137Runs) == 0 && r.Native137Err == "" {
		return
	}
	t := r.Throughput
	sectionHead(p, "Row D on Kubernetes 1.37", r.Native137Err)
	p("A control plane of its own, started after the throughput step's was torn down: kube-apiserver, kube-controller-manager and kube-scheduler %s (etcd, kwok and workmap-scheduler's framework as above), Kubernetes' own gang scheduling on (`--feature-gates=%s` on all three; `%s` served), %d kwok nodes of %d GPUs, the same Jobs of %d pods and the same client limits (qps %g, burst %d). A is that kube-scheduler without gangs, D the same binary with them (its pods' native PodGroups, now `%s`, made by workmap-webhook as above), B workmap-scheduler built on the 1.36 framework against this API server one minor newer, as Kubernetes' version-skew policy allows. Each pair runs %s in %s mode (%d pairs).",
		orUnknown(r.Versions.Kubernetes137), harness.Release137.NativeGangGates, harness.Release137.NativeGangAPI(), t.Nodes, t.GPUsPerNode, t.PodsPerGang, t.QPS, t.Burst,
		harness.Release137.NativePodGroups().GroupVersion(), runOrder(r.Native137Runs), r.HeadlineMode(), t.Pairs)
	p("")
	r.comparisonTable(p, r.Native137Runs, []Mode{r.HeadlineMode()}, r.label)
	runTable(p, r.Native137Runs, r.label)
	p("**What bound these runs:** %s", boundSummary(r.Native137Runs, r.label))
	p("")
}
