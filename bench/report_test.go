package bench

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleRun is a run of 100 pods at rate pods/s with the given writes (all clients) and
// scheduler CPU seconds.
func sampleRun(mode Mode, s Scheduler, pair int, rate, p99 float64, writes map[string]float64, cpu float64) Run {
	req := map[string]float64{}
	for k, v := range writes {
		verb, _, _ := strings.Cut(k, " ")
		req[verb] += v
	}
	return Run{Mode: mode, Scheduler: s, Pair: pair, Pods: 100, Seconds: 100 / rate, PodsPerSecond: rate, P99Ms: p99, BoundBy: "the client rate limit (qps 50, burst 100): x",
		Client:          ClientStats{Requests: map[string]float64{"POST": 200}, Limiter: map[string]LimiterStats{"POST": {Waits: 200, Throttled: 150, Seconds: 3}}, CPUSeconds: cpu},
		TotalCPUSeconds: 2 * cpu,
		Server:          ServerStats{Requests: req, WritesByResource: writes}}
}

var (
	plainWrites = map[string]float64{"POST pods/binding": 100, "POST events": 100, "PATCH nodes/status": 10}
	gangWrites  = map[string]float64{"POST pods/binding": 100, "POST events": 100, "PATCH pods": 100, "PATCH nodes/status": 30, "PUT leases": 10}
)

func sampleReport() *Report {
	run := func(mode Mode, s Scheduler, pair int, rate, p99 float64) Run {
		w := plainWrites
		if s != Plain {
			w = gangWrites
		}
		return sampleRun(mode, s, pair, rate, p99, w, 1)
	}
	return &Report{
		Started: time.Unix(0, 0), Finished: time.Unix(60, 0),
		Micro: []MicroResult{
			{Name: "BenchmarkDecideWarm", NsPerOp: 2500, AllocsPerOp: 22, Runs: 5},
			{Name: "BenchmarkExpand", NsPerOp: 60000, Runs: 5},
		},
		Throughput: ThroughputSetup{Gangs: 10, PodsPerGang: 10, Pairs: 2, Modes: []Mode{Running, Backlog}, QPS: 50, Burst: 100, HighQPS: 500, HighBurst: 1000, HighPairs: 1,
			BarePairs: 1, BareModes: []Mode{Backlog}, Scale: ScaleSetup{Pods: 1000, PodsPerGang: 8, Nodes: 100, GPUsPerNode: 16, Pairs: 1}},
		Runs: []Run{
			run(Running, Plain, 1, 50, 100), run(Running, Gang, 1, 40, 900),
			run(Backlog, Plain, 1, 60, 0), run(Backlog, Gang, 1, 30, 0),
			run(Backlog, Plain, 2, 50, 0), run(Backlog, Gang, 2, 30, 0),
			{Mode: Running, Scheduler: Plain, Pair: 2, Error: "boom"}, run(Running, Gang, 2, 45, 1100),
		},
		HighRuns:  []Run{run(Backlog, Plain, 1, 100, 0), run(Backlog, Gang, 1, 95, 0)},
		BareRuns:  []Run{sampleRun(Backlog, Plain, 1, 60, 0, plainWrites, 1), sampleRun(Backlog, Gang, 1, 54, 0, plainWrites, 1.5)},
		ScaleRuns: []Run{sampleRun(Backlog, Plain, 1, 50, 0, plainWrites, 0.5), sampleRun(Backlog, Gang, 1, 40, 0, gangWrites, 0.75)},
		CLI:       &CLIResult{Pods: 1000, ChildKinds: 1, Requests: 4, Ms: 200, OfflineMs: 60, VersionMs: 20, Paths: []string{"GET /a"}},
		Memory:    &MemoryResult{Pods: 10000, Gangs: 1250, BytesPerPod: 9000, PodObjectBytes: 6000},
	}
}

// withOther adds O to every pair of the sample's main, high-limit and scale runs.
func withOther(r *Report) *Report {
	r.Throughput.Other = &OtherScheduler{Binary: "/bin/coscheduler", ConfigPath: "cos.yaml", Name: "coscheduling", PodGroups: true}
	r.Runs = append(r.Runs,
		sampleRun(Running, Other, 1, 45, 300, plainWrites, 1), sampleRun(Running, Other, 2, 45, 300, plainWrites, 1),
		sampleRun(Backlog, Other, 1, 54, 0, plainWrites, 1), sampleRun(Backlog, Other, 2, 45, 0, plainWrites, 1))
	r.HighRuns = append(r.HighRuns, sampleRun(Backlog, Other, 1, 80, 0, plainWrites, 1))
	r.ScaleRuns = append(r.ScaleRuns, sampleRun(Backlog, Other, 1, 25, 0, plainWrites, 0.25))
	return r
}

func resultsMap(t *testing.T, res Results) map[string]*float64 {
	t.Helper()
	data, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]*float64
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func keys(m map[string]*float64) string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

const wantKeys = "cli_tree_file_ms cli_tree_ms_1000_pods cli_tree_requests_1000_pods expand_ns futile_preemptions gang_pods_per_s gang_throughput_ratio gang_throughput_ratio_high_qps gang_throughput_ratio_running gang_to_native_throughput_ratio gang_to_native_throughput_ratio_137 gang_to_native_throughput_ratio_running gang_whole_p99_ratio_running gang_write_bound_ratio gang_write_bound_ratio_running grouper_bytes_per_pod native_futile_preemptions native_gang_throughput_ratio native_gang_throughput_ratio_137 native_gang_throughput_ratio_high_qps native_gang_throughput_ratio_running native_partial_victim_gangs native_pods_per_s native_preemption_attempt_p99_ms native_preemption_scheduler_rss_bytes native_preemption_victims_per_gang p99_create_to_bound_ms p99_ratio_running partial_victim_gangs per_pod_decision_allocs per_pod_decision_ns plain_overhead_ratio plain_pods_per_s pod_patches_per_pod pod_patches_per_pod_with_webhook preemption_attempt_p99_ms preemption_scheduler_rss_bytes preemption_victims_per_gang requeue_after_free_p99_ms scale20k_gang_throughput_ratio scale20k_memory_bytes_per_pod_gang scale20k_memory_bytes_per_pod_plain scale_cpu_seconds_per_pod_gang scale_cpu_seconds_per_pod_plain scale_gang_throughput_ratio scale_memory_bytes_per_pod_gang scale_memory_bytes_per_pod_plain topology_gang_throughput_ratio topology_gang_to_native_ratio topology_placement_ns_per_domain_1000_racks topology_placement_ns_per_domain_100_racks topology_placement_ns_per_domain_10_racks topology_single_domain_fraction topology_single_domain_fraction_native webhook_gang_throughput_ratio writes_per_pod_extra"

// withNative adds D (native gangs) and E (workmap-scheduler with workmap-webhook) to the
// sample's main and high-limit runs.
func withNative(r *Report) *Report {
	nativeWrites := map[string]float64{"POST pods/binding": 100, "POST events": 100, "POST podgroups": 10, "PATCH pods/status": 100}
	webhookWrites := map[string]float64{"POST pods/binding": 100, "POST events": 100, "POST podgroups": 10}
	r.Runs = append(r.Runs,
		sampleRun(Running, Native, 1, 20, 2000, nativeWrites, 1), sampleRun(Running, Native, 2, 25, 2000, nativeWrites, 1),
		sampleRun(Backlog, Native, 1, 24, 0, nativeWrites, 1), sampleRun(Backlog, Native, 2, 25, 0, nativeWrites, 1),
		sampleRun(Backlog, GangWebhook, 1, 33, 0, webhookWrites, 1), sampleRun(Backlog, GangWebhook, 2, 30, 0, webhookWrites, 1),
		sampleRun(Running, GangWebhook, 1, 44, 800, webhookWrites, 1))
	r.HighRuns = append(r.HighRuns, sampleRun(Backlog, Native, 1, 40, 0, nativeWrites, 1))
	r.Versions.Kubernetes137 = "v1.37.2"
	r.Native137Runs = []Run{
		sampleRun(Backlog, Plain, 1, 50, 0, plainWrites, 1), sampleRun(Backlog, Gang, 1, 40, 0, plainWrites, 1), sampleRun(Backlog, Native, 1, 20, 0, nativeWrites, 1),
		sampleRun(Backlog, Plain, 2, 60, 0, plainWrites, 1), sampleRun(Backlog, Gang, 2, 30, 0, plainWrites, 1), sampleRun(Backlog, Native, 2, 36, 0, nativeWrites, 1),
	}
	return r
}

func TestResults(t *testing.T) {
	m := resultsMap(t, sampleReport().Results())
	require.Equal(t, wantKeys, keys(m))
	for k, want := range map[string]float64{
		"per_pod_decision_ns": 2500, "per_pod_decision_allocs": 22, "expand_ns": 60000,
		// Backlog: ratios 0.5 and 0.6 → 0.55; medians 55 and 30.
		"gang_throughput_ratio": 0.55, "plain_pods_per_s": 55, "gang_pods_per_s": 30,
		// Running: only pair 1 has both runs: 40/50, p99 900/100.
		"gang_throughput_ratio_running": 0.8, "p99_ratio_running": 9, "p99_create_to_bound_ms": 1000,
		"gang_throughput_ratio_high_qps": 0.95,
		// 300 − 200 writes per 100 pods, the node heartbeats left out: bound 1 ÷ (1 + 1).
		"writes_per_pod_extra":   1,
		"gang_write_bound_ratio": 0.5, "gang_write_bound_ratio_running": 0.5,
		"plain_overhead_ratio":        0.9,
		"scale_gang_throughput_ratio": 0.8, "scale_cpu_seconds_per_pod_plain": 0.005, "scale_cpu_seconds_per_pod_gang": 0.0075,
		"cli_tree_requests_1000_pods": 4, "cli_tree_ms_1000_pods": 200, "cli_tree_file_ms": 60, "grouper_bytes_per_pod": 9000,
	} {
		if assert.NotNil(t, m[k], k) {
			assert.InDelta(t, want, *m[k], 1e-9, k)
		}
	}
	res := (&Report{}).Results()
	assert.Nil(t, res.PerPodDecisionNs)
	assert.Nil(t, res.GangThroughputRatio)
	assert.Nil(t, res.PlainOverheadRatio)
	assert.Nil(t, res.ScaleCPUSecondsPerPodGang)
	assert.Nil(t, res.WritesPerPodExtra)
	assert.Nil(t, res.CLITreeMs1000Pods)
}

func TestResultsNative(t *testing.T) {
	m := resultsMap(t, withNative(sampleReport()).Results())
	for k, want := range map[string]float64{
		"native_gang_throughput_ratio":            0.45, // 24/60 and 25/50
		"native_gang_throughput_ratio_running":    0.4,  // pair 1 only: 20/50
		"native_gang_throughput_ratio_high_qps":   0.4,  // 40/100
		"native_pods_per_s":                       24.5,
		"gang_to_native_throughput_ratio":         1.225, // 30/24 and 30/25
		"gang_to_native_throughput_ratio_running": 1.9,   // 40/20 and 45/25
		"webhook_gang_throughput_ratio":           0.575, // 33/60 and 30/50
		"pod_patches_per_pod":                     1,     // B's label patches
		"pod_patches_per_pod_with_webhook":        0,     // E's pods came labelled
		"gang_throughput_ratio":                   0.55,  // B's keys are unchanged by D and E
		"native_gang_throughput_ratio_137":        0.5,   // 20/50 and 36/60
		"gang_to_native_throughput_ratio_137":     1.417, // 40/20 and 30/36
	} {
		if assert.NotNil(t, m[k], k) {
			assert.InDelta(t, want, *m[k], 1e-9, k)
		}
	}
	plain := sampleReport().Results()
	assert.Nil(t, plain.NativeGangThroughputRatio, "no D runs")
	assert.Nil(t, plain.PodPatchesPerPodWithWebhook, "no E runs")
}

func TestMarkdownNative(t *testing.T) {
	md := withNative(sampleReport()).Markdown("x.svg")
	for _, want := range []string{
		"| `native_gang_throughput_ratio` | 0.45 |  |  |",
		"| `pod_patches_per_pod_with_webhook` | 0 | = 0 | pass |",
		"- **D** is the same kube-scheduler binary as A with Kubernetes' own gang scheduling on",
		"## Row D on Kubernetes 1.37",
		"kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2",
		"| `native_gang_throughput_ratio_137` | 0.5 |  |  |",
		"- **E** is B (workmap-scheduler, the shipped configuration) with workmap-webhook in front",
		"D: kube-scheduler-native-gangs pods/s | D/A (median of pairs)",
		"B/D (median of pairs)",
		"**What the native path adds and avoids** (running mode): D ran at 0.400 of A (pairs 0.4) and B at 1.900 of D (pairs 2, 1.8).",
		"D's writes per pod beyond A's: `PATCH pods/status` +1.00, `POST podgroups` +0.10",
		"`PATCH pods` per pod 0.00 against B's 1.00.",
		"| backlog | 55.0 | 30.0 | 0.550 | 0.5, 0.6 | 24.5 | 0.450 | 0.4, 0.5 | 31.5 | 0.575 | 0.55, 0.6 | 1.225 | 1.25, 1.2 |",
	} {
		assert.Contains(t, md, want)
	}
	svg := string(ThroughputSVG(withNative(sampleReport()).Runs, []Mode{Running, Backlog}, "t", ""))
	assert.Contains(t, svg, "D: kube-scheduler, native gangs (workmap-webhook)")
	assert.Contains(t, svg, "E: workmap-scheduler with workmap-webhook")
}

func TestResultsOther(t *testing.T) {
	m := resultsMap(t, withOther(sampleReport()).Results())
	require.Equal(t, "other_p99_ratio_running other_throughput_ratio other_throughput_ratio_high_qps other_throughput_ratio_running other_writes_per_pod_extra scale_cpu_seconds_per_pod_other scale_other_throughput_ratio "+wantKeys,
		strings.Join(sortedOtherFirst(m), " "))
	for k, want := range map[string]float64{
		"other_throughput_ratio":          0.9, // 54/60 and 45/50
		"other_throughput_ratio_running":  0.9, // pair 1 only
		"other_p99_ratio_running":         3,
		"other_throughput_ratio_high_qps": 0.8,
		"other_writes_per_pod_extra":      0,
		"scale_other_throughput_ratio":    0.5, "scale_cpu_seconds_per_pod_other": 0.0025,
		"gang_throughput_ratio": 0.55, // B's keys are unchanged by O
	} {
		if assert.NotNil(t, m[k], k) {
			assert.InDelta(t, want, *m[k], 1e-9, k)
		}
	}
}

// sortedOtherFirst lists O's keys, then the others, each sorted.
func sortedOtherFirst(m map[string]*float64) []string {
	var o, rest []string
	for k := range m {
		if strings.Contains(k, "other") {
			o = append(o, k)
		} else {
			rest = append(rest, k)
		}
	}
	sort.Strings(o)
	sort.Strings(rest)
	return append(o, rest...)
}

func TestMarkdown(t *testing.T) {
	md := sampleReport().Markdown("benchmarks-throughput.svg")
	for _, want := range []string{
		"| `per_pod_decision_ns` | 2,500 | ≤ 2000 | **MISS** |",
		"| `gang_write_bound_ratio` | 0.5 |  |  |",
		"| `gang_throughput_ratio` | 0.55 | ≥ write bound − 0.03 = 0.47 | pass |",
		"| `gang_throughput_ratio_running` | 0.8 | ≥ write bound − 0.03 = 0.47 | pass |",
		"| `gang_throughput_ratio_high_qps` | 0.95 | ≥ 0.95 | pass |",
		"| `p99_ratio_running` | 9 | ≤ 1.2 | **MISS** |",
		"| `writes_per_pod_extra` | 1 | ≤ 0.25 | **MISS** |",
		"| `plain_overhead_ratio` | 0.9 | ≥ 0.95 | **MISS** |",
		"| `scale_gang_throughput_ratio` | 0.8 | ≥ 0.9 | **MISS** |",
		"| `scale_cpu_seconds_per_pod_plain` | 0.005 |  |  |",
		"| `scale_cpu_seconds_per_pod_gang` | 0.0075 |  |  |",
		"| `cli_tree_requests_1000_pods` | 4 | ≤ child kinds + 3 = 4 | pass |",
		"| `cli_tree_ms_1000_pods` | 200 | < 300 | pass |",
		"| `cli_tree_file_ms` | 60 | < 100 | pass |",
		"| `grouper_bytes_per_pod` | 9,000 | ≤ 2048 | **MISS** |",
		"![pods bound over time, every run](benchmarks-throughput.svg)",
		"failed: boom",
		"## workmap-scheduler on pods without a gang (row C)",
		"| backlog | 60.0 | 54.0 | 0.900 | 0.9 |",
		"## Scale: 1,000 pods on 100 nodes",
		"| B: workmap-scheduler | 40.0 | 0.800 | 0.8 | 0.00750 | 0.01500 |",
		"| all but the node heartbeats (median of each run's) | 2.00 | 3.00 |",
		"**per_pod_decision_ns = 2,500 > 2000.**",
		"**p99_ratio_running = 9.000 > 1.2.**",
		"each pair runs A B in that order",
		"a process budget of 100 requests/s (burst 200) in all",
		"**writes_per_pod_extra = 1.00 > 0.25** (backlog mode). B's writes per pod beyond A's, by kind: `PATCH pods` +1.00",
		"**plain_overhead_ratio = 0.900 < 0.95** (backlog mode, bare pods).",
		"**scale_gang_throughput_ratio = 0.800 < 0.9** (backlog mode).",
		"**grouper_bytes_per_pod = 9,000 > 2048.**",
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "cli_tree_ms_1000_pods = ", "a CLI miss that did not happen")
	assert.NotContains(t, md, "gang_throughput_ratio_high_qps = ", "a miss that did not happen")
	assert.NotContains(t, md, "**gang_throughput_ratio = ", "within 0.03 of its write bound: no miss")
	assert.NotContains(t, md, "O: ", "O without an other scheduler")
}

func TestMarkdownOther(t *testing.T) {
	md := withOther(sampleReport()).Markdown("x.svg")
	for _, want := range []string{
		"| other scheduler (O) | `/bin/coscheduler` (unknown), configuration `cos.yaml`, profile `coscheduling`; its pods get PodGroups |",
		"| `other_throughput_ratio` | 0.9 |  |  |",
		"| mode | A: kube-scheduler pods/s | B: workmap-scheduler pods/s | B/A (median of pairs) | pair ratios | O: coscheduling pods/s | O/A (median of pairs) | pair ratios |",
		"| backlog | 55.0 | 30.0 | 0.550 | 0.5, 0.6 | 49.5 | 0.900 | 0.9, 0.9 |",
		"| O: coscheduling | 25.0 | 0.500 | 0.5 | 0.00250 |",
		"each pair runs A B O in that order",
		"| write | A: kube-scheduler | B: workmap-scheduler | O: coscheduling | made by |",
	} {
		assert.Contains(t, md, want)
	}
}

// TestWriteBoundTarget: at the main limits B/A is held to the write bound its extra writes
// allow, not to a fixed ratio.
func TestWriteBoundTarget(t *testing.T) {
	for name, tc := range map[string]struct {
		gangWrites map[string]float64
		want       []string
		wantNot    []string
	}{
		"no extra writes: the bound is 1, and 0.55 misses it": {
			gangWrites: plainWrites,
			want: []string{
				"| `gang_write_bound_ratio` | 1 |  |  |",
				"| `gang_throughput_ratio` | 0.55 | ≥ write bound − 0.03 = 0.97 | **MISS** |",
				"**gang_throughput_ratio = 0.550 < 0.97 (write bound 1.000 − 0.03)** (backlog mode).",
				"**gang_throughput_ratio_running = 0.800 < 0.97 (write bound 1.000 − 0.03)** (running mode).",
			},
		},
		"one extra write per pod: the bound is 0.5, and 0.55 is within it": {
			gangWrites: gangWrites,
			want:       []string{"| `gang_throughput_ratio` | 0.55 | ≥ write bound − 0.03 = 0.47 | pass |"},
			wantNot:    []string{"**gang_throughput_ratio = "},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := sampleReport()
			for i, run := range r.Runs {
				if run.Scheduler == Gang {
					r.Runs[i].Server = sampleRun(run.Mode, Gang, run.Pair, 1, 0, tc.gangWrites, 1).Server
				}
			}
			md := r.Markdown("x.svg")
			for _, want := range tc.want {
				assert.Contains(t, md, want)
			}
			for _, not := range tc.wantNot {
				assert.NotContains(t, md, not)
			}
		})
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

// TestScale20k: the large scale row has its ratio against the same target as the scale row,
// each scheduler's resident memory per pod, and a section of its own.
func TestScale20k(t *testing.T) {
	r := sampleReport()
	withRSS := func(run Run, rss float64) Run {
		run.Client.RSSBytes = rss
		return run
	}
	r.ScaleRuns[0], r.ScaleRuns[1] = withRSS(r.ScaleRuns[0], 100e6), withRSS(r.ScaleRuns[1], 150e6)
	r.Scale20k = &ScaleRow{
		Setup:        ScaleSetup{Pods: 20000, PodsPerGang: 8, Nodes: 2000, GPUsPerNode: 16, Pairs: 1},
		NodesSeconds: 42,
		Runs: []Run{
			withRSS(sampleRun(Backlog, Plain, 1, 50, 0, plainWrites, 0.5), 400e6),
			withRSS(sampleRun(Backlog, Gang, 1, 46, 0, gangWrites, 0.75), 500e6),
		},
	}
	res := r.Results()
	assert.Equal(t, 0.92, *res.Scale20kGangThroughputRatio)
	assert.Equal(t, 4e6, *res.Scale20kMemoryBytesPerPodPlain, "400 MB over the run's 100 pods")
	assert.Equal(t, 5e6, *res.Scale20kMemoryBytesPerPodGang)
	assert.Equal(t, 1.5e6, *res.ScaleMemoryBytesPerPodGang)
	md := r.Markdown("x.svg")
	for _, want := range []string{
		"| `scale20k_gang_throughput_ratio` | 0.92 | ≥ 0.9 | pass |",
		"| `scale20k_memory_bytes_per_pod_gang` | 5,000,000 |  |  |",
		"## Scale: 20,000 pods on 2,000 nodes",
		"2000 kwok nodes of 16 GPUs, created in parallel and all Ready and schedulable 42.0 s later",
		"| B: workmap-scheduler | 46.0 | 0.920 | 0.92 | 0.00750 | 0.01500 | 0.34 | 3.00 | 5,000,000 |",
		"- `scale20k_*` are the same from the large scale row (a control plane of its own, 20,000 pods in gangs of 8 on 2,000 nodes).",
	} {
		assert.Contains(t, md, want)
	}

	without := sampleReport().Results()
	assert.Nil(t, without.Scale20kGangThroughputRatio, "not measured")
	assert.Nil(t, without.ScaleMemoryBytesPerPodGang, "no memory read")
}
