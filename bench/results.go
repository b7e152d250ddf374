package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Report is everything one bench run measured, from which results.json and the Markdown
// report are written.
type Report struct {
	Started, Finished time.Time
	Machine           Machine
	Versions          Versions
	// Commands are the command lines that produced the numbers.
	Commands []string

	Micro    []MicroResult
	MicroErr string
	// DecisionProfile is pprof's top allocation sites of the per-pod decision (when it
	// misses its target).
	DecisionProfile string

	Throughput    ThroughputSetup
	Runs          []Run
	ThroughputErr string
	// HighRuns repeat the comparison with both schedulers at higher client limits
	// (Throughput.HighQPS, HighBurst): if the ratio moves, the limits bound the main runs.
	HighRuns []Run
	// BareRuns compare A and workmap-scheduler on bare pods (no owner, no gang): row C.
	BareRuns []Run
	BareErr  string
	// Native137Runs compare A, B and D in the headline mode on a control plane of its own
	// running Kubernetes 1.37's API server, controller manager and kube-scheduler, whose
	// native gangs are scheduling.k8s.io/v1beta1 behind GenericWorkload.
	Native137Runs []Run
	Native137Err  string
	// ScaleRuns compare A and B (and O) on a cluster of their own with many nodes.
	ScaleRuns []Run
	ScaleErr  string
	// ScaleNodesSeconds is how long the scale row's nodes took to be created and Ready.
	ScaleNodesSeconds float64
	// Scale20k is the large scale row (nil: not measured).
	Scale20k *ScaleRow `json:",omitempty"`

	CLI    *CLIResult
	CLIErr string

	Memory    *MemoryResult
	MemoryErr string

	// Topology is the shape of the topology step; TopologyRuns compare A, B and D on gangs
	// that each ask for one rack, on a control plane of its own.
	Topology     TopologySetup
	TopologyRuns []Run
	TopologyErr  string
	// TopologyNodesSeconds is how long the step's nodes took to be created and Ready;
	// TopologySeconds the whole step, from starting its control plane to its last run.
	TopologyNodesSeconds float64
	TopologySeconds      float64

	// Requeue is the requeue step: how soon backed-off gangs are bound once room is freed
	// for them, on a control plane of its own.
	Requeue    *RequeueResult
	RequeueErr string

	// Preemption is the preemption step: high-priority gangs preempting low-priority ones on
	// a full cluster, on a control plane of its own.
	Preemption    *PreemptionResult
	PreemptionErr string
	// PreemptionNative is the same step with Kubernetes' own gangs and workload-aware
	// preemption (row D), on the same control plane after B's run.
	PreemptionNative *PreemptionResult

	// Measured says, per step, when and at which commit its numbers were measured (steps
	// not run by this invocation keep an earlier report's: CarryOver).
	Measured map[string]StepStamp `json:",omitempty"`
}

// ThroughputSetup is the shape of the throughput comparison.
type ThroughputSetup struct {
	Gangs, PodsPerGang, Nodes, GPUsPerNode, Pairs int
	Modes                                         []Mode
	QPS                                           float32
	Burst                                         int32
	CreateQPS                                     float32
	CreateWorkers                                 int
	HighQPS                                       float32
	HighBurst                                     int32
	HighPairs                                     int
	// HighGangs is the gangs of a run of the repeat at HighQPS (0 in reports from before it
	// was set: Gangs).
	HighGangs int
	// Other is O, the user's third scheduler (nil: none).
	Other *OtherScheduler
	// BarePairs and BareModes shape row C (same gangs × pods-per-gang count of pods).
	BarePairs int
	BareModes []Mode
	Scale     ScaleSetup
	// Quiet is how each run waited for the machine to settle before its window (zero in
	// reports from before it was set: no wait).
	Quiet Quiet
}

// HighRunGangs is the gangs of a run of the repeat at HighQPS.
func (t ThroughputSetup) HighRunGangs() int {
	if t.HighGangs > 0 {
		return t.HighGangs
	}
	return t.Gangs
}

// ScaleRow is a scale row: its shape, its runs (or why they failed), and how long its nodes
// took to be created and Ready.
type ScaleRow struct {
	Setup        ScaleSetup
	Runs         []Run
	Err          string
	NodesSeconds float64
}

// scaleRow is the scale row as a ScaleRow.
func (r *Report) scaleRow() ScaleRow {
	return ScaleRow{Setup: r.Throughput.Scale, Runs: r.ScaleRuns, Err: r.ScaleErr, NodesSeconds: r.ScaleNodesSeconds}
}

// ScaleSetup is the shape of a scale row: Pods pods in gangs of PodsPerGang on Nodes kwok
// nodes of GPUsPerNode GPUs, backlog mode, on a control plane of its own.
type ScaleSetup struct {
	Pods, PodsPerGang, Nodes, GPUsPerNode, Pairs int
}

// Results are the numbers of bench/results.json. A number a failed or skipped step could
// not measure is null; O's numbers are there only when an other scheduler ran.
type Results struct {
	PerPodDecisionNs     *float64 `json:"per_pod_decision_ns"`
	PerPodDecisionAllocs *float64 `json:"per_pod_decision_allocs"`
	ExpandNs             *float64 `json:"expand_ns"`
	// Throughput ratios B/A: backlog and running mode at the main limits, and the headline
	// mode again at the high limits.
	GangThroughputRatio        *float64 `json:"gang_throughput_ratio"`
	GangThroughputRatioRunning *float64 `json:"gang_throughput_ratio_running"`
	GangThroughputRatioHighQPS *float64 `json:"gang_throughput_ratio_high_qps"`
	// GangWriteBoundRatio(Running) is 1 ÷ (1 + B's API writes per pod beyond A's) in backlog
	// (running) mode: the most B/A can be when one client budget bounds both.
	GangWriteBoundRatio        *float64 `json:"gang_write_bound_ratio"`
	GangWriteBoundRatioRunning *float64 `json:"gang_write_bound_ratio_running"`
	PlainPodsPerS              *float64 `json:"plain_pods_per_s"`
	GangPodsPerS               *float64 `json:"gang_pods_per_s"`
	P99CreateToBoundMs         *float64 `json:"p99_create_to_bound_ms"`
	P99RatioRunning            *float64 `json:"p99_ratio_running"`
	// GangWholeP99RatioRunning is B's ÷ A's p99 over gangs of the time from a gang's first
	// member created to its last member bound (running mode): when the whole job can run.
	GangWholeP99RatioRunning *float64 `json:"gang_whole_p99_ratio_running"`
	WritesPerPodExtra        *float64 `json:"writes_per_pod_extra"`
	// PlainOverheadRatio is row C: workmap-scheduler on bare pods ÷ A on the same pods.
	PlainOverheadRatio         *float64 `json:"plain_overhead_ratio"`
	ScaleGangThroughputRatio   *float64 `json:"scale_gang_throughput_ratio"`
	ScaleCPUSecondsPerPodPlain *float64 `json:"scale_cpu_seconds_per_pod_plain"`
	ScaleCPUSecondsPerPodGang  *float64 `json:"scale_cpu_seconds_per_pod_gang"`
	// The scale rows' scheduler memory: resident bytes at the end of a run per pod of it.
	ScaleMemoryBytesPerPodPlain *float64 `json:"scale_memory_bytes_per_pod_plain"`
	ScaleMemoryBytesPerPodGang  *float64 `json:"scale_memory_bytes_per_pod_gang"`
	// The large scale row's ratio B/A and memory.
	Scale20kGangThroughputRatio    *float64 `json:"scale20k_gang_throughput_ratio"`
	Scale20kMemoryBytesPerPodPlain *float64 `json:"scale20k_memory_bytes_per_pod_plain"`
	Scale20kMemoryBytesPerPodGang  *float64 `json:"scale20k_memory_bytes_per_pod_gang"`
	CLITreeRequests1000Pods        *float64 `json:"cli_tree_requests_1000_pods"`
	CLITreeMs1000Pods              *float64 `json:"cli_tree_ms_1000_pods"`
	CLITreeFileMs                  *float64 `json:"cli_tree_file_ms"`
	GrouperBytesPerPod             *float64 `json:"grouper_bytes_per_pod"`
	// Row D, Kubernetes' own gangs from workmap-webhook's native PodGroups: D ÷ A, and B ÷ D,
	// backlog and running mode, and D ÷ A at the high limits.
	NativeGangThroughputRatio        *float64 `json:"native_gang_throughput_ratio"`
	NativeGangThroughputRatioRunning *float64 `json:"native_gang_throughput_ratio_running"`
	NativeGangThroughputRatioHighQPS *float64 `json:"native_gang_throughput_ratio_high_qps"`
	NativePodsPerS                   *float64 `json:"native_pods_per_s"`
	GangToNativeRatio                *float64 `json:"gang_to_native_throughput_ratio"`
	GangToNativeRatioRunning         *float64 `json:"gang_to_native_throughput_ratio_running"`
	// The same two ratios on Kubernetes 1.37 (its own control plane, headline mode).
	NativeGangThroughputRatio137 *float64 `json:"native_gang_throughput_ratio_137"`
	GangToNativeRatio137         *float64 `json:"gang_to_native_throughput_ratio_137"`
	// PodPatchesPerPod are the "PATCH pods" the API server served per pod in B's runs (the
	// grouper labelling pods) and in E's (workmap-scheduler with workmap-webhook, whose pods
	// arrive labelled), headline mode; WebhookGangThroughputRatio is E ÷ A.
	PodPatchesPerPod            *float64 `json:"pod_patches_per_pod"`
	PodPatchesPerPodWithWebhook *float64 `json:"pod_patches_per_pod_with_webhook"`
	WebhookGangThroughputRatio  *float64 `json:"webhook_gang_throughput_ratio"`

	// The topology step: B ÷ A and B ÷ D (medians of the per-pair ratios, every batch), the
	// share of B's and of D's gangs whose pods all landed in one rack (every run), and the
	// per-domain cost of placing one gang (BenchmarkTopologyPlacement, every rack tried) at 10,
	// 100 and 1,000 racks.
	TopologyGangThroughputRatio           *float64 `json:"topology_gang_throughput_ratio"`
	TopologyGangToNativeRatio             *float64 `json:"topology_gang_to_native_ratio"`
	TopologySingleDomainFraction          *float64 `json:"topology_single_domain_fraction"`
	TopologySingleDomainFractionNative    *float64 `json:"topology_single_domain_fraction_native"`
	TopologyPlacementNsPerDomain10Racks   *float64 `json:"topology_placement_ns_per_domain_10_racks"`
	TopologyPlacementNsPerDomain100Racks  *float64 `json:"topology_placement_ns_per_domain_100_racks"`
	TopologyPlacementNsPerDomain1000Racks *float64 `json:"topology_placement_ns_per_domain_1000_racks"`

	// RequeueAfterFreeP99Ms is the requeue step's p99 over its gangs of the time from the
	// deletion of the pod that blocked a backed-off gang to the gang bound.
	RequeueAfterFreeP99Ms *float64 `json:"requeue_after_free_p99_ms"`

	// The preemption step (workmap-scheduler): the p99 of its scheduling cycles' PostFilter
	// (where a gang preempts) while the high-priority gangs were placed, the victim pods per
	// high-priority gang, preemptions whose gang did not end bound whole, low-priority gangs
	// left in part, and the scheduler's resident memory at the end.
	PreemptionAttemptP99Ms    *float64 `json:"preemption_attempt_p99_ms"`
	PreemptionVictimsPerGang  *float64 `json:"preemption_victims_per_gang"`
	FutilePreemptions         *float64 `json:"futile_preemptions"`
	PartialVictimGangs        *float64 `json:"partial_victim_gangs"`
	PreemptionSchedulerMemory *float64 `json:"preemption_scheduler_rss_bytes"`
	// The same of row D: kube-scheduler with Kubernetes' own workload-aware preemption.
	NativePreemptionAttemptP99Ms    *float64 `json:"native_preemption_attempt_p99_ms"`
	NativePreemptionVictimsPerGang  *float64 `json:"native_preemption_victims_per_gang"`
	NativeFutilePreemptions         *float64 `json:"native_futile_preemptions"`
	NativePartialVictimGangs        *float64 `json:"native_partial_victim_gangs"`
	NativePreemptionSchedulerMemory *float64 `json:"native_preemption_scheduler_rss_bytes"`

	OtherThroughputRatio        *float64 `json:"other_throughput_ratio,omitempty"`
	OtherThroughputRatioRunning *float64 `json:"other_throughput_ratio_running,omitempty"`
	OtherThroughputRatioHighQPS *float64 `json:"other_throughput_ratio_high_qps,omitempty"`
	OtherP99RatioRunning        *float64 `json:"other_p99_ratio_running,omitempty"`
	OtherWritesPerPodExtra      *float64 `json:"other_writes_per_pod_extra,omitempty"`
	ScaleOtherThroughputRatio   *float64 `json:"scale_other_throughput_ratio,omitempty"`
	ScaleCPUSecondsPerPodOther  *float64 `json:"scale_cpu_seconds_per_pod_other,omitempty"`
}

// The benchmarks behind the micro keys.
const (
	DecisionBenchmark = "BenchmarkDecideWarm"
	ExpandBenchmark   = "BenchmarkExpand"
)

// HeadlineMode is the mode the high-limit repeat runs in and the writes per pod are compared
// in: the backlog's pure drain rate when it was measured (creation speed can bound the
// other mode, and pod creation falls outside its window), else the running mode.
func (r *Report) HeadlineMode() Mode {
	for _, m := range r.Throughput.Modes {
		if m == Backlog {
			return Backlog
		}
	}
	return Running
}

// Results computes the results.json numbers.
func (r *Report) Results() Results {
	var res Results
	if d, ok := Find(r.Micro, DecisionBenchmark); ok {
		res.PerPodDecisionNs, res.PerPodDecisionAllocs = num(d.NsPerOp), num(d.AllocsPerOp)
	}
	if e, ok := Find(r.Micro, ExpandBenchmark); ok {
		res.ExpandNs = num(e.NsPerOp)
	}
	r.throughputResults(&res)
	r.scaleResults(&res)
	r.topologyResults(&res)
	if r.CLI != nil {
		res.CLITreeRequests1000Pods, res.CLITreeMs1000Pods = num(float64(r.CLI.Requests)), num(r.CLI.Ms)
		res.CLITreeFileMs = num(r.CLI.OfflineMs)
	}
	if r.Memory != nil {
		res.GrouperBytesPerPod = num(r.Memory.BytesPerPod)
	}
	if r.Requeue != nil {
		res.RequeueAfterFreeP99Ms = num(r.Requeue.P99Ms)
	}
	if p := r.Preemption; p != nil {
		res.PreemptionAttemptP99Ms, res.PreemptionVictimsPerGang = num(p.AttemptP99Ms), num(p.VictimsPerGang)
		res.FutilePreemptions, res.PartialVictimGangs = num(float64(p.Futile)), num(float64(p.PartialVictimGangs))
		res.PreemptionSchedulerMemory = num(p.SchedulerRSSBytes)
	}
	if p := r.PreemptionNative; p != nil {
		res.NativePreemptionAttemptP99Ms, res.NativePreemptionVictimsPerGang = num(p.AttemptP99Ms), num(p.VictimsPerGang)
		res.NativeFutilePreemptions, res.NativePartialVictimGangs = num(float64(p.Futile)), num(float64(p.PartialVictimGangs))
		res.NativePreemptionSchedulerMemory = num(p.SchedulerRSSBytes)
	}
	return res
}

// throughputResults fills the keys of the main runs, the high-limit repeat and row C.
func (r *Report) throughputResults(res *Results) {
	ratio := func(s SchedulerSummary) *float64 {
		if len(s.PairRatios) == 0 {
			return nil
		}
		return num(s.Ratio)
	}
	p99 := func(s SchedulerSummary) *float64 {
		if len(s.P99PairRatios) == 0 {
			return nil
		}
		return num(s.P99Ratio)
	}
	backlog, running := Summarize(r.Runs, Backlog), Summarize(r.Runs, Running)
	res.GangThroughputRatio, res.GangThroughputRatioRunning = ratio(backlog.Gang), ratio(running.Gang)
	if backlog.Pairs > 0 {
		res.PlainPodsPerS, res.GangPodsPerS = num(backlog.Plain.PodsPerS), num(backlog.Gang.PodsPerS)
	}
	if running.Gang.Runs > 0 {
		res.P99CreateToBoundMs = num(running.Gang.P99Ms)
	}
	res.P99RatioRunning = p99(running.Gang)
	if len(running.Gang.GangP99PairRatios) > 0 {
		res.GangWholeP99RatioRunning = num(running.Gang.GangP99Ratio)
	}
	bound := func(sum Summary) *float64 {
		if b, _, ok := sum.WriteBound(); ok {
			return num(b)
		}
		return nil
	}
	res.GangWriteBoundRatio, res.GangWriteBoundRatioRunning = bound(backlog), bound(running)
	head := Summarize(r.Runs, r.HeadlineMode())
	if head.Plain.Runs > 0 && head.Gang.Runs > 0 {
		res.WritesPerPodExtra = num(head.Gang.WritesPerPod - head.Plain.WritesPerPod)
	}
	high := Summarize(r.HighRuns, r.HeadlineMode())
	res.GangThroughputRatioHighQPS = ratio(high.Gang)
	res.NativeGangThroughputRatio, res.NativeGangThroughputRatioRunning = ratio(backlog.Native), ratio(running.Native)
	res.NativeGangThroughputRatioHighQPS = ratio(high.Native)
	if backlog.Native.Runs > 0 {
		res.NativePodsPerS = num(backlog.Native.PodsPerS)
	}
	if len(backlog.GangToNativePairs) > 0 {
		res.GangToNativeRatio = num(backlog.GangToNative)
	}
	if len(running.GangToNativePairs) > 0 {
		res.GangToNativeRatioRunning = num(running.GangToNative)
	}
	res.WebhookGangThroughputRatio = ratio(head.GangWebhook)
	patches := func(s Scheduler) *float64 {
		if head.Of(s).Runs == 0 {
			return nil
		}
		return num(medianWrites(r.Runs, r.HeadlineMode(), s)[podPatches])
	}
	res.PodPatchesPerPod, res.PodPatchesPerPodWithWebhook = patches(Gang), patches(GangWebhook)
	res.PlainOverheadRatio = ratio(Summarize(r.BareRuns, r.BareMode()).Gang)
	if HasOther(r.Runs) {
		res.OtherThroughputRatio, res.OtherThroughputRatioRunning = ratio(backlog.Other), ratio(running.Other)
		res.OtherP99RatioRunning = p99(running.Other)
		if head.Plain.Runs > 0 && head.Other.Runs > 0 {
			res.OtherWritesPerPodExtra = num(head.Other.WritesPerPod - head.Plain.WritesPerPod)
		}
	}
	if HasOther(r.HighRuns) {
		res.OtherThroughputRatioHighQPS = ratio(high.Other)
	}
	v137 := Summarize(r.Native137Runs, r.HeadlineMode())
	res.NativeGangThroughputRatio137 = ratio(v137.Native)
	if len(v137.GangToNativePairs) > 0 {
		res.GangToNativeRatio137 = num(v137.GangToNative)
	}
}

// podPatches are the writes of pod labels after creation.
const podPatches = "PATCH pods"

// scaleResults fills the keys of the scale row.
func (r *Report) scaleResults(res *Results) {
	s := Summarize(r.ScaleRuns, Backlog)
	if len(s.Gang.PairRatios) > 0 {
		res.ScaleGangThroughputRatio = num(s.Gang.Ratio)
	}
	cpu := func(x SchedulerSummary) *float64 {
		if x.Runs == 0 {
			return nil
		}
		v := round(x.CPUSecondsPerPod, 6)
		return &v
	}
	res.ScaleCPUSecondsPerPodPlain, res.ScaleCPUSecondsPerPodGang = cpu(s.Plain), cpu(s.Gang)
	memory := func(x SchedulerSummary) *float64 {
		if x.RSSBytesPerPod == 0 {
			return nil
		}
		return num(x.RSSBytesPerPod)
	}
	res.ScaleMemoryBytesPerPodPlain, res.ScaleMemoryBytesPerPodGang = memory(s.Plain), memory(s.Gang)
	if row := r.Scale20k; row != nil {
		s := Summarize(row.Runs, Backlog)
		if len(s.Gang.PairRatios) > 0 {
			res.Scale20kGangThroughputRatio = num(s.Gang.Ratio)
		}
		res.Scale20kMemoryBytesPerPodPlain, res.Scale20kMemoryBytesPerPodGang = memory(s.Plain), memory(s.Gang)
	}
	if HasOther(r.ScaleRuns) {
		if len(s.Other.PairRatios) > 0 {
			res.ScaleOtherThroughputRatio = num(s.Other.Ratio)
		}
		res.ScaleCPUSecondsPerPodOther = cpu(s.Other)
	}
}

// BareMode is the mode row C's key comes from: backlog when it was measured.
func (r *Report) BareMode() Mode {
	for _, m := range r.Throughput.BareModes {
		if m == Backlog {
			return Backlog
		}
	}
	if len(r.Throughput.BareModes) > 0 {
		return r.Throughput.BareModes[0]
	}
	return Backlog
}

func num(v float64) *float64 { v = round(v, 3); return &v }

// ReadReport reads a report written with WriteJSON (bench/raw.json), to render it again.
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &Report{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteJSON writes v as indented JSON.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
