package bench

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	run := func(mode Mode, s Scheduler, pair int, rate, p99 float64) Run {
		return Run{Mode: mode, Scheduler: s, Pair: pair, Pods: 100, Seconds: 100 / rate, PodsPerSecond: rate, P99Ms: p99, BoundBy: "the client rate limit (qps 50, burst 100): x",
			Client: ClientStats{Requests: map[string]float64{"POST": 200}, Limiter: map[string]LimiterStats{"POST": {Waits: 200, Throttled: 150, Seconds: 3}}}}
	}
	return &Report{
		Started: time.Unix(0, 0), Finished: time.Unix(60, 0),
		Micro: []MicroResult{
			{Name: "BenchmarkDecideWarm", NsPerOp: 2500, AllocsPerOp: 22, Runs: 5},
			{Name: "BenchmarkExpand", NsPerOp: 60000, Runs: 5},
		},
		Throughput: ThroughputSetup{Gangs: 10, PodsPerGang: 10, Pairs: 2, Modes: []Mode{Running, Backlog}, QPS: 50, Burst: 100},
		Runs: []Run{
			run(Running, Plain, 1, 50, 100), run(Running, Gang, 1, 40, 900),
			run(Backlog, Plain, 1, 60, 0), run(Backlog, Gang, 1, 30, 0),
			run(Backlog, Plain, 2, 50, 0), run(Backlog, Gang, 2, 30, 0),
			{Mode: Running, Scheduler: Plain, Pair: 2, Error: "boom"}, run(Running, Gang, 2, 45, 1100),
		},
		CLI:    &CLIResult{Pods: 1000, ChildKinds: 1, Requests: 4, Ms: 700, Paths: []string{"GET /a"}},
		Memory: &MemoryResult{Pods: 10000, Gangs: 1250, BytesPerPod: 9000, PodObjectBytes: 6000},
	}
}

func TestResults(t *testing.T) {
	res := sampleReport().Results()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]*float64
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "cli_tree_ms_1000_pods cli_tree_requests_1000_pods expand_ns gang_pods_per_s gang_throughput_ratio grouper_bytes_per_pod p99_create_to_bound_ms per_pod_decision_allocs per_pod_decision_ns plain_pods_per_s"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("keys = %s\nwant   %s", got, want)
	}
	// Backlog is the headline: ratios 0.5 and 0.6 → 0.55; medians 55 and 30.
	for k, want := range map[string]float64{
		"per_pod_decision_ns": 2500, "per_pod_decision_allocs": 22, "expand_ns": 60000,
		"gang_throughput_ratio": 0.55, "plain_pods_per_s": 55, "gang_pods_per_s": 30,
		"p99_create_to_bound_ms": 1000, "cli_tree_requests_1000_pods": 4, "cli_tree_ms_1000_pods": 700, "grouper_bytes_per_pod": 9000,
	} {
		if m[k] == nil || *m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if res := (&Report{}).Results(); res.PerPodDecisionNs != nil || res.GangThroughputRatio != nil || res.CLITreeMs1000Pods != nil {
		t.Errorf("an empty report has numbers: %+v", res)
	}
}

func TestMarkdown(t *testing.T) {
	md := sampleReport().Markdown("benchmarks-throughput.svg")
	for _, want := range []string{
		"| `per_pod_decision_ns` | 2,500 | ≤ 2000 | **MISS** |",
		"| `gang_throughput_ratio` | 0.55 | ≥ 0.9 | **MISS** |",
		"| `cli_tree_requests_1000_pods` | 4 | ≤ child kinds + 3 = 4 | pass |",
		"| `cli_tree_ms_1000_pods` | 700 | < 1000 | pass |",
		"| `grouper_bytes_per_pod` | 9,000 | ≤ 2048 | **MISS** |",
		"![pods bound over time, every run](benchmarks-throughput.svg)",
		"failed: boom",
		"**per_pod_decision_ns = 2,500 > 2000.**",
		"**gang_throughput_ratio = 0.550 < 0.9.**",
		"**grouper_bytes_per_pod = 9,000 > 2048.**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "cli_tree_ms_1000_pods = ") {
		t.Error("report explains a CLI miss that did not happen")
	}
}

func TestMemoryMiss(t *testing.T) {
	whole := memoryMiss(&MemoryResult{Pods: 800, Gangs: 100, BytesPerPod: 9000, PodObjectBytes: 6000, PodObjectBytesNoManagedFields: 5000, PodObjectBytesGrouping: 2500, JobObjectBytes: 8000})
	if !strings.Contains(whole, "caches whole pods, 6,000 bytes each") || !strings.Contains(whole, "the rest (3,000 bytes per pod)") {
		t.Errorf("whole pods: %s", whole)
	}
	trimmed := memoryMiss(&MemoryResult{Pods: 800, Gangs: 100, BytesPerPod: 5000, PodObjectBytes: 6000, PodObjectBytesGrouping: 2500, JobObjectBytes: 8000})
	if !strings.Contains(trimmed, "already keeps less than whole pods") || !strings.Contains(trimmed, "The other 2,500 bytes per pod") || !strings.Contains(trimmed, "8,000 bytes as an unstructured object, 1,000 per pod") {
		t.Errorf("trimmed pods: %s", trimmed)
	}
}

func TestReportRoundTrip(t *testing.T) {
	path := t.TempDir() + "/raw.json"
	r := sampleReport()
	r.Runs[0].Curve = []float64{0.5, 1}
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Markdown("x.svg") != r.Markdown("x.svg") || len(back.Runs[0].Curve) != 2 {
		t.Error("a report read back renders differently")
	}
}

func TestFmtInt(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.6: "1,234,568", -1500: "-1,500"} {
		if got := fmtInt(v); got != want {
			t.Errorf("fmtInt(%v) = %s, want %s", v, got, want)
		}
	}
}
