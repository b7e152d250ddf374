package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func sampleSetup() TopologySetup {
	return TopologySetup{Racks: 10, NodesPerRack: 100, RacksPerBlock: 5, GPUsPerNode: 8, Batches: []int{150, 450},
		GangSize: 4, GPUsPerPod: 2, LargeGangs: 3, LargeGangSize: 200, LargeGPUsPerPod: 2, Pairs: 1,
		RackLabel: DefaultRackLabel, BlockLabel: DefaultBlockLabel, QPS: 500, Burst: 1000, Native: true}
}

func TestTopologySetup(t *testing.T) {
	s := sampleSetup()
	require.NoError(t, s.Check())
	assert.Equal(t, 1000, s.Nodes())
	assert.Equal(t, 2400, s.RunPods(450))
	assert.Equal(t, int64(4800), s.RunGPUs(450), "60% of 8,000 GPUs")
	assert.Equal(t, "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true", s.Gates())
	assert.Equal(t, "block", s.Levels()[0].Name)
	assert.Equal(t, DefaultRackLabel, s.Levels()[1].NodeLabel)

	nodes := s.NodeList()
	require.Len(t, nodes, 1000)
	last := nodes[999]
	assert.Equal(t, "topo-r9-n99", last.Name)
	assert.Equal(t, map[string]string{DefaultRackLabel: "r9", DefaultBlockLabel: "b1"}, last.Labels)
	assert.Equal(t, "b0", nodes[499].Labels[DefaultBlockLabel], "racks 0-4 are block 0")
	rackOf, blockOf := s.Domains(nodes)
	assert.Equal(t, "r4", rackOf["topo-r4-n0"])
	assert.Equal(t, "b1", blockOf["topo-r5-n0"])

	for name, change := range map[string]func(*TopologySetup){
		"racks not in whole blocks":   func(s *TopologySetup) { s.RacksPerBlock = 3 },
		"a large gang over a rack":    func(s *TopologySetup) { s.LargeGangSize = 401 },
		"pods bigger than a node":     func(s *TopologySetup) { s.GPUsPerPod = 9 },
		"more GPUs than the cluster":  func(s *TopologySetup) { s.Batches = []int{150, 900} },
		"no batch":                    func(s *TopologySetup) { s.Batches = nil },
		"a gang of one":               func(s *TopologySetup) { s.GangSize = 1 },
		"no node":                     func(s *TopologySetup) { s.NodesPerRack = 0 },
		"a negative number of gangs":  func(s *TopologySetup) { s.Batches = []int{-1} },
		"large gangs of one GPU-less": func(s *TopologySetup) { s.LargeGPUsPerPod = 0 },
	} {
		bad := sampleSetup()
		change(&bad)
		assert.Error(t, bad.Check(), name)
	}
}

func TestTopologyGangs(t *testing.T) {
	native := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha2", Resource: "podgroups"}
	g := TopologyGangs{Setup: sampleSetup(), Namespace: "ns", Small: 2, SchedulerName: "s", Native: native}
	gangs := g.Gangs()
	require.Len(t, gangs, 5)
	assert.Equal(t, TopologyGang{Name: "large-0", Size: 200, GPUs: 2}, gangs[0], "the large gangs first")
	assert.Equal(t, TopologyGang{Name: "small-1", Size: 4, GPUs: 2}, gangs[4])
	assert.Equal(t, 608, g.Pods())

	// A: no gang at all, only the bench's own label.
	pod := g.Pod(gangs[4], 3)
	assert.Equal(t, "small-1-3", pod.Name)
	assert.Equal(t, map[string]string{TopologyGangLabel: "small-1"}, pod.Labels)
	assert.Nil(t, pod.Spec.SchedulingGroup)
	assert.Equal(t, "s", pod.Spec.SchedulerName)
	gpus := pod.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	assert.Equal(t, int64(2), gpus.Value())
	pg, _, err := g.PodGroup(gangs[4])
	require.NoError(t, err)
	assert.Nil(t, pg)

	// B: the operator's PodGroup, the rack required by annotation, and its label on the pods.
	g.Form = OperatorGang
	pod = g.Pod(gangs[0], 0)
	assert.Equal(t, "large-0", pod.Labels["scheduling.x-k8s.io/pod-group"])
	pg, res, err := g.PodGroup(gangs[0])
	require.NoError(t, err)
	assert.Equal(t, PodGroupResource, res)
	assert.Equal(t, "scheduling.x-k8s.io/v1alpha1", pg.GetAPIVersion())
	assert.Equal(t, map[string]string{"workmap.dev/topology-required": "rack"}, pg.GetAnnotations())
	min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	assert.Equal(t, int64(200), min)

	// D: a native PodGroup with the rack's node label as its topology, named by the pods.
	g.Form = NativeGang
	pod = g.Pod(gangs[1], 0)
	require.NotNil(t, pod.Spec.SchedulingGroup)
	assert.Equal(t, "large-1", *pod.Spec.SchedulingGroup.PodGroupName)
	assert.NotContains(t, pod.Labels, "scheduling.x-k8s.io/pod-group")
	pg, res, err = g.PodGroup(gangs[1])
	require.NoError(t, err)
	assert.Equal(t, native, res)
	assert.Equal(t, "scheduling.k8s.io/v1alpha2", pg.GetAPIVersion())
	count, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
	assert.Equal(t, int64(200), count)
	topology, _, _ := unstructured.NestedSlice(pg.Object, "spec", "schedulingConstraints", "topology")
	assert.Equal(t, []any{map[string]any{"key": DefaultRackLabel}}, topology)

	assert.Equal(t, NoGang, FormOf(Plain))
	assert.Equal(t, OperatorGang, FormOf(Gang))
	assert.Equal(t, NativeGang, FormOf(Native))
}

func TestPlacementOf(t *testing.T) {
	rackOf := map[string]string{"n1": "r1", "n2": "r1", "n3": "r2", "n4": "r3"}
	blockOf := map[string]string{"n1": "b1", "n2": "b1", "n3": "b1", "n4": "b2"}
	p := PlacementOf([]PodPlacement{
		{"one-rack", "n1"}, {"one-rack", "n2"}, {"one-rack", "n2"},
		{"one-block", "n1"}, {"one-block", "n3"},
		{"spread", "n1"}, {"spread", "n3"}, {"spread", "n4"},
		{"waiting", "n1"}, {"waiting", ""},
		{"unknown-node", "elsewhere"},
	}, rackOf, blockOf)
	assert.Equal(t, Placement{Gangs: 4, OneRack: 2, OneBlock: 3, MaxRacks: 3, Unbound: 1, SplitBySize: map[int]int{2: 1, 3: 1}}, p)
	assert.InDelta(t, 0.5, p.SingleDomainFraction(), 1e-9)
	assert.Equal(t, "1 of 2 pods, 1 of 3 pods", p.Split())
	assert.Equal(t, "none", Placement{Gangs: 1, OneRack: 1}.Split())
	assert.Zero(t, Placement{}.SingleDomainFraction())

	sum := p.Add(Placement{Gangs: 2, OneRack: 2, OneBlock: 2, MaxRacks: 1, SplitBySize: map[int]int{3: 2}})
	assert.Equal(t, Placement{Gangs: 6, OneRack: 4, OneBlock: 5, MaxRacks: 3, Unbound: 1, SplitBySize: map[int]int{2: 1, 3: 3}}, sum)
}

// withTopology adds the topology step's runs (two batches, one pair each, A B D) and the
// placement micro-benchmark to the sample.
func withTopology(r *Report) *Report {
	r.Topology = sampleSetup()
	placed := func(gangs, one int) *Placement {
		p := Placement{Gangs: gangs, OneRack: one, OneBlock: one, MaxRacks: 1}
		if one < gangs {
			p.MaxRacks, p.SplitBySize = 10, map[int]int{4: gangs - one}
		}
		return &p
	}
	nativeWrites := map[string]float64{"POST pods/binding": 100, "POST events": 100, "PATCH pods/status": 100}
	run := func(s Scheduler, pair, gangs int, rate float64, w map[string]float64, p *Placement) Run {
		x := sampleRun(Backlog, s, pair, rate, 0, w, 1)
		x.Gangs, x.Placement = gangs, p
		return x
	}
	r.TopologyRuns = []Run{
		run(Plain, 1, 153, 100, plainWrites, placed(153, 3)), run(Gang, 1, 153, 90, plainWrites, placed(153, 153)), run(Native, 1, 153, 30, nativeWrites, placed(153, 150)),
		run(Plain, 2, 453, 100, plainWrites, placed(453, 0)), run(Gang, 2, 453, 70, plainWrites, placed(453, 453)), run(Native, 2, 453, 20, nativeWrites, placed(453, 453)),
	}
	r.TopologyNodesSeconds, r.TopologySeconds = 7, 300
	r.Micro = append(r.Micro,
		MicroResult{Name: "BenchmarkTopologyPlacement/racks=10/free", NsPerOp: 280000, Runs: 5, Metrics: map[string]float64{"ns/domain": 28000}},
		MicroResult{Name: "BenchmarkTopologyPlacement/racks=10/worst", NsPerOp: 370000, Runs: 5, Metrics: map[string]float64{"ns/domain": 37000}},
		MicroResult{Name: "BenchmarkTopologyPlacement/racks=1000/worst", NsPerOp: 43e6, Runs: 5, Metrics: map[string]float64{"ns/domain": 43000}})
	return r
}

func TestResultsTopology(t *testing.T) {
	m := resultsMap(t, withTopology(sampleReport()).Results())
	for k, want := range map[string]float64{
		"topology_gang_throughput_ratio":              0.8,   // 0.9 and 0.7
		"topology_gang_to_native_ratio":               3.25,  // 3 and 3.5
		"topology_single_domain_fraction":             1,     // 606 of 606
		"topology_single_domain_fraction_native":      0.995, // 603 of 606
		"topology_placement_ns_per_domain_10_racks":   37000,
		"topology_placement_ns_per_domain_1000_racks": 43000,
	} {
		if assert.NotNil(t, m[k], k) {
			assert.InDelta(t, want, *m[k], 1e-9, k)
		}
	}
	assert.Nil(t, m["topology_placement_ns_per_domain_100_racks"], "not measured")
	res := (&Report{}).Results()
	assert.Nil(t, res.TopologyGangThroughputRatio)
	assert.Nil(t, res.TopologySingleDomainFraction)
}

func TestMarkdownTopology(t *testing.T) {
	r := withTopology(sampleReport())
	r.TopologyRuns[4].PodsPerSecond = 50 // pair 2: B/A 0.5, B/D 2.5
	md := r.Markdown("x.svg")
	for _, want := range []string{
		"| `topology_gang_throughput_ratio` | 0.7 | ≥ 0.8 | **MISS** |",
		"| `topology_gang_to_native_ratio` | 2.75 | ≥ 1.5 | pass |",
		"| `topology_single_domain_fraction` | 1 | ≥ 1 | pass |",
		"| `topology_single_domain_fraction_native` | 0.995 |  |  |",
		"## Topology-aware gangs: one rack each",
		"1,000 kwok nodes of 8 GPUs in 10 racks of 100 nodes",
		"| 150 | 1 | 100.0 | 90.0 | 0.900 | 30.0 | 0.300 | 3.000 | 3 of 153 / 153 of 153 / 150 of 153 |",
		"| 450 | 2 | 100.0 | 50.0 | 0.500 | 20.0 | 0.200 | 2.500 | 0 of 453 / 453 of 453 / 453 of 453 |",
		"| 1 | D: kube-scheduler, native gangs + topology | 153 | 150 | 150 | 10 | 3 of 4 pods | 0 |",
		"D kept 603 of its 606 gangs in one rack: Kubernetes' own topology split 3 of 4 pods across racks",
		"| 10 | 0.28 ms | 28 µs | 0.37 ms | 37 µs |",
		"| 100 | — | — | — | — |",
		"**topology_gang_throughput_ratio = 0.700 < 0.8** (backlog mode; pairs 0.9, 0.5).",
		"`BenchmarkTopologyPlacement/racks=10/free` (",
		"place one gang of 4 pods of 8 GPUs that asks for a rack of 4 nodes",
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "**topology_gang_to_native_ratio =", "met")
	assert.NotContains(t, md, "**topology_single_domain_fraction =", "met")
	assert.NotContains(t, sampleReport().Markdown("x.svg"), "## Topology-aware gangs", "no section without the step")
}

func TestTopologyRoundTrip(t *testing.T) {
	path := t.TempDir() + "/raw.json"
	r := withTopology(sampleReport())
	r.Stamp(Steps)
	require.NoError(t, WriteJSON(path, r))
	back, err := ReadReport(path)
	require.NoError(t, err)
	assert.Equal(t, r.Markdown("x.svg"), back.Markdown("x.svg"))
	assert.Equal(t, map[int]int{4: 3}, back.TopologyRuns[2].Placement.SplitBySize)
}
