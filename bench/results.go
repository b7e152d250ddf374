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

	CLI    *CLIResult
	CLIErr string

	Memory    *MemoryResult
	MemoryErr string
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
}

// Results are the numbers of bench/results.json (issue 8's keys). A number a failed step
// could not measure is null.
type Results struct {
	PerPodDecisionNs        *float64 `json:"per_pod_decision_ns"`
	PerPodDecisionAllocs    *float64 `json:"per_pod_decision_allocs"`
	ExpandNs                *float64 `json:"expand_ns"`
	GangThroughputRatio     *float64 `json:"gang_throughput_ratio"`
	PlainPodsPerS           *float64 `json:"plain_pods_per_s"`
	GangPodsPerS            *float64 `json:"gang_pods_per_s"`
	P99CreateToBoundMs      *float64 `json:"p99_create_to_bound_ms"`
	CLITreeRequests1000Pods *float64 `json:"cli_tree_requests_1000_pods"`
	CLITreeMs1000Pods       *float64 `json:"cli_tree_ms_1000_pods"`
	GrouperBytesPerPod      *float64 `json:"grouper_bytes_per_pod"`
}

// The benchmarks behind the micro keys.
const (
	DecisionBenchmark = "BenchmarkDecideWarm"
	ExpandBenchmark   = "BenchmarkExpand"
)

// HeadlineMode is the mode the throughput keys come from: the backlog's pure drain rate
// when it was measured (creation speed can bound the other mode), else the running mode.
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
	mode := r.HeadlineMode()
	if s := Summarize(r.Runs, mode); s.Pairs > 0 {
		res.PlainPodsPerS, res.GangPodsPerS = num(s.PlainPodsPerS), num(s.GangPodsPerS)
		res.GangThroughputRatio = num(s.Ratio)
	}
	if s := Summarize(r.Runs, Running); s.GangRuns > 0 {
		res.P99CreateToBoundMs = num(s.GangP99Ms)
	}
	if r.CLI != nil {
		res.CLITreeRequests1000Pods, res.CLITreeMs1000Pods = num(float64(r.CLI.Requests)), num(r.CLI.Ms)
	}
	if r.Memory != nil {
		res.GrouperBytesPerPod = num(r.Memory.BytesPerPod)
	}
	return res
}

func num(v float64) *float64 { v = round(v, 3); return &v }

// Summary is one mode's comparison: medians over the successful runs, and the median of
// the per-pair ratios B/A (pairs where both runs succeeded).
type Summary struct {
	Mode                        Mode
	PlainRuns, GangRuns         int
	Pairs                       int
	PlainPodsPerS, GangPodsPerS float64
	Ratio                       float64
	PairRatios                  []float64
	PlainP50Ms, PlainP99Ms      float64
	GangP50Ms, GangP99Ms        float64
}

// Summarize compares the two schedulers' runs of one mode.
func Summarize(runs []Run, mode Mode) Summary {
	s := Summary{Mode: mode}
	var plain, gang, pp50, pp99, gp50, gp99 []float64
	byPair := map[int]map[Scheduler]float64{}
	for _, r := range runs {
		if r.Mode != mode || r.Error != "" {
			continue
		}
		if byPair[r.Pair] == nil {
			byPair[r.Pair] = map[Scheduler]float64{}
		}
		byPair[r.Pair][r.Scheduler] = r.PodsPerSecond
		if r.Scheduler == Plain {
			plain, pp50, pp99 = append(plain, r.PodsPerSecond), append(pp50, r.P50Ms), append(pp99, r.P99Ms)
		} else {
			gang, gp50, gp99 = append(gang, r.PodsPerSecond), append(gp50, r.P50Ms), append(gp99, r.P99Ms)
		}
	}
	for pair := 1; pair <= len(runs); pair++ {
		p, ok := byPair[pair]
		if ok && p[Plain] > 0 && p[Gang] > 0 {
			s.PairRatios = append(s.PairRatios, round(p[Gang]/p[Plain], 3))
		}
	}
	s.PlainRuns, s.GangRuns, s.Pairs = len(plain), len(gang), len(s.PairRatios)
	s.PlainPodsPerS, s.GangPodsPerS, s.Ratio = round(median(plain), 2), round(median(gang), 2), round(median(s.PairRatios), 3)
	s.PlainP50Ms, s.PlainP99Ms = round(median(pp50), 1), round(median(pp99), 1)
	s.GangP50Ms, s.GangP99Ms = round(median(gp50), 1), round(median(gp99), 1)
	return s
}

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
