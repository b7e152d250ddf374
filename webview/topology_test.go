package webview

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/grouper"
)

var testLevels = []TopologyLevel{{Name: "block", NodeLabel: "example.com/block"}, {Name: "rack", NodeLabel: "example.com/rack"}, {Name: "hostname", NodeLabel: "kubernetes.io/hostname"}}

func rackNode(name string, gpus float64, block, rack string) Node {
	labels := map[string]string{}
	if block != "" {
		labels["example.com/block"] = block
	}
	if rack != "" {
		labels["example.com/rack"] = rack
	}
	return Node{Name: name, Labels: labels, GPUs: gpus, Ready: true}
}

func entry(ns, name string, pods ...PodUse) *Entry {
	e := &Entry{Key: Key{Group: "jobset.x-k8s.io", Kind: "JobSet", Namespace: ns, Name: name}}
	for _, p := range pods {
		p.Namespace = ns
		e.PodUses = append(e.PodUses, p)
	}
	return e
}

func on(name, node string, gpus float64) PodUse {
	return PodUse{Name: name, Node: node, Phase: "Running", GPUs: gpus}
}

// domainsOf renders a domain tree as one line: "b1[r1[n0 n1] r2[n2]] no block[n9]".
func domainsOf(d *domainView) string {
	var parts []string
	for _, c := range d.Children {
		name := c.Value
		if name == "" {
			name = "no " + c.Level.Name
		}
		parts = append(parts, name+"["+domainsOf(c)+"]")
	}
	for _, n := range d.Nodes {
		parts = append(parts, n.Name)
	}
	return strings.Join(parts, " ")
}

// TestTopologyModel: nodes in their domains, broad to narrow, each with its GPU slots filled by
// the workloads holding them, and the free GPUs of every node and domain.
func TestTopologyModel(t *testing.T) {
	train, serve := "jobset.x-k8s.io/JobSet/ml/train", "jobset.x-k8s.io/JobSet/ml/serve"
	tests := map[string]struct {
		snap   *Snapshot
		levels []TopologyLevel
		// domains is the tree (domainsOf); free and used by node; fills counts the slots each
		// workload key fills ("" for pods of no workload); over counts the slots beyond a
		// node's capacity.
		domains     string
		free, used  map[string]float64
		fills       map[string]int
		over        int
		withoutGPUs int
		legend      []string
	}{
		"no levels: the nodes alone, in natural order": {
			snap:    &Snapshot{NodeAccess: AccessWatching, Nodes: []Node{rackNode("n10", 8, "", ""), rackNode("n2", 8, "", ""), rackNode("n1", 4, "", "")}},
			domains: "n1 n2 n10", free: map[string]float64{"n1": 4, "n2": 8, "n10": 8},
		},
		"block → rack → node; a node without a level's label in its own domain; hostname not drawn": {
			snap: &Snapshot{NodeAccess: AccessWatching, Nodes: []Node{
				rackNode("n0", 8, "b1", "r1"), rackNode("n1", 8, "b1", "r1"), rackNode("n2", 8, "b1", "r2"),
				rackNode("n3", 8, "b2", "r10"), rackNode("n4", 8, "b2", "r9"), rackNode("n9", 8, "", ""),
			}},
			levels:  testLevels,
			domains: "b1[r1[n0 n1] r2[n2]] b2[r9[n4] r10[n3]] no block[no rack[n9]]",
		},
		"a workload's pods fill its slots, pods of no workload last; free is what is left": {
			snap: &Snapshot{
				NodeAccess: AccessWatching,
				Nodes:      []Node{rackNode("n0", 8, "b1", "r1"), rackNode("n1", 8, "b1", "r1")},
				Entries: []*Entry{
					entry("ml", "train", on("leader", "n0", 4), on("w0", "n0", 4), on("w1", "n1", 4),
						PodUse{Name: "done", Node: "n1", Phase: "Succeeded", GPUs: 4}, PodUse{Name: "waits", Phase: "Pending", GPUs: 4}),
					entry("ml", "serve", on("s0", "n1", 2)),
				},
				OtherPods: []PodUse{{Namespace: "tools", Name: "notebook", Node: "n1", Phase: "Running", GPUs: 1}},
			},
			levels:  testLevels,
			domains: "b1[r1[n0 n1]]",
			used:    map[string]float64{"n0": 8, "n1": 7}, free: map[string]float64{"n0": 0, "n1": 1},
			fills:  map[string]int{train: 12, serve: 2, "": 1},
			legend: []string{serve, train, ""},
		},
		"more GPUs held than a node has: the extra slots are drawn as over": {
			snap: &Snapshot{
				NodeAccess: AccessWatching, Nodes: []Node{rackNode("n0", 4, "", "")},
				Entries: []*Entry{entry("ml", "train", on("a", "n0", 4), on("b", "n0", 2))},
			},
			domains: "n0", used: map[string]float64{"n0": 6}, free: map[string]float64{"n0": 0},
			fills: map[string]int{train: 6}, over: 2,
		},
		"a fraction of a GPU fills part of a slot": {
			snap: &Snapshot{
				NodeAccess: AccessWatching, Nodes: []Node{rackNode("n0", 2, "", "")},
				Entries: []*Entry{entry("ml", "serve", on("a", "n0", 0.5)), entry("ml", "train", on("b", "n0", 1))},
			},
			domains: "n0", used: map[string]float64{"n0": 1.5}, free: map[string]float64{"n0": 0.5},
			fills: map[string]int{serve: 1, train: 2}, // train's GPU spans the rest of the first slot and half the second
		},
		"nodes without GPUs are not drawn unless a pod holds GPUs on them": {
			snap: &Snapshot{
				NodeAccess: AccessWatching, Nodes: []Node{rackNode("cpu-0", 0, "", ""), rackNode("cpu-1", 0, "", ""), rackNode("n0", 8, "", "")},
				Entries: []*Entry{entry("ml", "train", on("a", "cpu-1", 1))},
			},
			domains: "cpu-1 n0", withoutGPUs: 1, fills: map[string]int{train: 1}, over: 1,
		},
		"nodes the user may not list: drawn from the pods on them, capacity unknown, no domains": {
			snap: &Snapshot{
				NodeAccess: AccessNotPermitted, NodeMessage: "the user may not list nodes (cluster-wide)",
				Entries: []*Entry{entry("ml", "train", on("a", "n1", 4), on("b", "n0", 4))},
			},
			levels: testLevels, domains: "n0 n1",
			used: map[string]float64{"n0": 4, "n1": 4}, free: map[string]float64{"n0": 0, "n1": 0},
			fills: map[string]int{train: 8}, over: 8,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := newTopologyView(tc.snap, tc.levels)
			require.Equal(t, tc.domains, domainsOf(v.Root))
			require.Equal(t, tc.withoutGPUs, v.WithoutGPUs)
			fills, over := map[string]int{}, 0
			var walk func(d *domainView)
			walk = func(d *domainView) {
				for _, c := range d.Children {
					walk(c)
				}
				for _, n := range d.Nodes {
					if want, ok := tc.used[n.Name]; ok {
						require.Equal(t, want, n.Used, "used on %s", n.Name)
					}
					if want, ok := tc.free[n.Name]; ok {
						require.Equal(t, want, n.Free, "free on %s", n.Name)
					}
					for _, h := range n.Holds {
						for _, f := range h.Fills {
							fills[h.Workload]++
							require.Positive(t, f.W)
							require.LessOrEqual(t, f.W, slotSize)
						}
					}
					for _, c := range n.Cells {
						if c.Over {
							over++
						}
					}
				}
			}
			walk(v.Root)
			if tc.fills == nil {
				tc.fills = map[string]int{}
			}
			require.Equal(t, tc.fills, fills)
			require.Equal(t, tc.over, over)
			if tc.legend != nil {
				var got []string
				for _, l := range v.Legend {
					if l.Entry == nil {
						got = append(got, "")
					} else {
						got = append(got, workloadKey(l.Key))
					}
				}
				require.Equal(t, tc.legend, got)
			}
		})
	}
}

// TestDomainTotals: a domain adds up its nodes' GPUs, and free GPUs are seen per domain.
func TestDomainTotals(t *testing.T) {
	snap := &Snapshot{
		NodeAccess: AccessWatching,
		Nodes:      []Node{rackNode("n0", 8, "b1", "r1"), rackNode("n1", 8, "b1", "r1"), rackNode("n2", 8, "b1", "r2")},
		Entries:    []*Entry{entry("ml", "train", on("a", "n0", 8), on("b", "n1", 4))},
	}
	v := newTopologyView(snap, testLevels)
	b1 := v.Root.Children[0]
	tests := map[string]struct {
		d                           *domainView
		title                       string
		gpus, used, free, nodeCount float64
	}{
		"block": {d: b1, title: "block b1", gpus: 24, used: 12, free: 12, nodeCount: 3},
		"rack":  {d: b1.Children[0], title: "rack r1", gpus: 16, used: 12, free: 4, nodeCount: 2},
		"empty": {d: b1.Children[1], title: "rack r2", gpus: 8, used: 0, free: 8, nodeCount: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.title, tc.d.Title())
			require.Equal(t, []float64{tc.gpus, tc.used, tc.free, tc.nodeCount}, []float64{tc.d.GPUs, tc.d.Used, tc.d.Free, float64(tc.d.NodeCount)})
		})
	}
}

// TestClusterCapacity: capacity from the nodes, bound from every pod seen, free the difference;
// nodes that may not be listed leave the capacity unknown, not 0.
func TestClusterCapacity(t *testing.T) {
	pods := []*Entry{entry("ml", "train", on("a", "n0", 8), PodUse{Name: "w", Phase: "Pending", GPUs: 8}, PodUse{Name: "d", Node: "n0", Phase: "Succeeded", GPUs: 8})}
	other := []PodUse{{Name: "x", Node: "n1", Phase: "Running", GPUs: 2}}
	nodes := []Node{rackNode("n0", 8, "", ""), rackNode("n1", 8, "", ""), rackNode("cpu", 0, "", "")}
	tests := map[string]struct {
		snap *Snapshot
		want capacity
	}{
		"every namespace": {
			snap: &Snapshot{NodeAccess: AccessWatching, Nodes: nodes, Entries: pods, OtherPods: other},
			want: capacity{Known: true, Nodes: 2, GPUs: 16, Bound: 10, Free: 6},
		},
		"one namespace: free is at most": {
			snap: &Snapshot{Namespace: "ml", NodeAccess: AccessWatching, Nodes: nodes, Entries: pods},
			want: capacity{Known: true, Nodes: 2, GPUs: 16, Bound: 8, Free: 8, Partial: true},
		},
		"nodes not permitted": {
			snap: &Snapshot{NodeAccess: AccessNotPermitted, NodeMessage: "no", Entries: pods},
			want: capacity{Why: "not permitted to list nodes: no", Bound: 8},
		},
		"nodes still syncing": {
			snap: &Snapshot{NodeAccess: AccessSyncing, Entries: pods},
			want: capacity{Why: "reading the nodes", Bound: 8},
		},
		"more bound than the nodes have (DRA GPUs): none free": {
			snap: &Snapshot{NodeAccess: AccessWatching, Nodes: nodes[:1], Entries: pods, OtherPods: other},
			want: capacity{Known: true, Nodes: 1, GPUs: 8, Bound: 10, Free: 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, clusterCapacity(tc.snap)) })
	}
}

func TestParseTopologyLevels(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    []TopologyLevel
		wantErr string
	}{
		"none":                    {in: ""},
		"broad to narrow, spaces": {in: "block=example.com/block, rack=example.com/rack,hostname=kubernetes.io/hostname", want: testLevels},
		"no label":                {in: "rack", wantErr: `topology level "rack": want name=node-label`},
		"bad name":                {in: "Rack=example.com/rack", wantErr: "want name=node-label"},
		"bad label":               {in: "rack=example.com/rack/x", wantErr: "want name=node-label"},
		"a name twice":            {in: "rack=a/rack,rack=b/rack", wantErr: "given twice"},
		"a label twice":           {in: "rack=a/rack,block=a/rack", wantErr: "given twice"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := grouper.ParseTopologyLevels(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestGangDone(t *testing.T) {
	pods := func(phases ...string) []definitions.FoundPod {
		var out []definitions.FoundPod
		for _, p := range phases {
			out = append(out, definitions.FoundPod{Phase: p})
		}
		return out
	}
	tests := map[string]struct {
		state v1alpha1.State
		pods  []definitions.FoundPod
		want  string
	}{
		"running":                          {state: v1alpha1.StateRunning, pods: pods("Running", "Succeeded")},
		"the workload completed":           {state: v1alpha1.StateCompleted, want: "Completed"},
		"the workload failed":              {state: v1alpha1.StateFailed, pods: pods("Failed", "Running"), want: "Failed"},
		"every pod succeeded":              {state: v1alpha1.StateRunning, pods: pods("Succeeded", "Succeeded"), want: "Completed"},
		"no pods yet":                      {state: v1alpha1.StatePending},
		"pending, some pods not yet bound": {state: v1alpha1.StatePending, pods: pods("Pending")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, gangDone(tc.state, tc.pods)) })
	}
}

func TestPodSpecGPUs(t *testing.T) {
	gpu := func(requests, limits any) map[string]any {
		r := map[string]any{}
		if requests != nil {
			r["requests"] = map[string]any{"nvidia.com/gpu": requests}
		}
		if limits != nil {
			r["limits"] = map[string]any{"nvidia.com/gpu": limits}
		}
		return map[string]any{"name": "c", "resources": r}
	}
	tests := map[string]struct {
		pod  map[string]any
		want float64
	}{
		"limits only":                {pod: map[string]any{"spec": map[string]any{"containers": []any{gpu(nil, "4")}}}, want: 4},
		"requests, as numbers":       {pod: map[string]any{"spec": map[string]any{"containers": []any{gpu(int64(2), nil), gpu(float64(1), nil)}}}, want: 3},
		"an init container's larger": {pod: map[string]any{"spec": map[string]any{"containers": []any{gpu("1", nil)}, "initContainers": []any{gpu("8", nil)}}}, want: 8},
		"a sidecar adds": {pod: map[string]any{"spec": map[string]any{"containers": []any{gpu("1", nil)}, "initContainers": []any{
			func() map[string]any { c := gpu("2", nil); c["restartPolicy"] = "Always"; return c }()}}}, want: 3},
		"amd.com/gpu counts too": {pod: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"resources": map[string]any{"limits": map[string]any{"amd.com/gpu": "2"}}}}}}, want: 2},
		"a fraction":             {pod: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"gpu-fraction": "0.5"}}, "spec": map[string]any{"containers": []any{}}}, want: 0.5},
		"no GPUs":                {pod: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, podSpecGPUs(tc.pod, gpuResources(definitions.ExpandOptions{})))
		})
	}
	require.Zero(t, podSpecGPUs(tests["amd.com/gpu counts too"].pod, []corev1.ResourceName{"nvidia.com/gpu"}), "only what counts as a GPU")
}

func TestNaturalCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"node-2", "node-10", -1}, {"node-10", "node-2", 1}, {"r1", "r1", 0}, {"a", "b", -1},
		{"gpu-node-1", "gpu-node-1b", -1}, {"rack9-x", "rack10-a", -1}, {"n007", "n8", -1},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, naturalCompare(tc.a, tc.b), "%s vs %s", tc.a, tc.b)
	}
}

// TestWorkloadColour: one colour per workload, the same on every load.
func TestWorkloadColour(t *testing.T) {
	a := workloadColour("jobset.x-k8s.io/JobSet/ml/train")
	require.Equal(t, a, workloadColour("jobset.x-k8s.io/JobSet/ml/train"))
	require.Regexp(t, `^hsl\(\d+, 62%, (42|58)%\)$`, a)
	seen := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		seen[workloadColour("jobset.x-k8s.io/JobSet/ml/"+k)] = true
	}
	require.Greater(t, len(seen), 5, "workloads get different colours")
}

// topologyCluster: racks r1 (gpu-node-0, gpu-node-1) and r2 (gpu-node-2) in block b1,
// gpu-node-3 in block b2 without a rack, and a node without GPUs; ml/train running on r1
// (placed there by workmap-scheduler), team-b/big waiting for a rack with room for its 6
// pods, a finished workload whose PodGroup still says Pending, and a notebook of no workload.
func topologyCluster(t *testing.T) []runtime.Object {
	objs := []runtime.Object{
		node("gpu-node-0", 8, map[string]any{"example.com/block": "b1", "example.com/rack": "r1"}),
		node("gpu-node-1", 8, map[string]any{"example.com/block": "b1", "example.com/rack": "r1"}),
		node("gpu-node-2", 8, map[string]any{"example.com/block": "b1", "example.com/rack": "r2"}),
		node("gpu-node-3", 8, map[string]any{"example.com/block": "b2"}),
		node("cpu-node-0", 0, nil),
		gpuPod("tools", "notebook", "gpu-node-2", 1),
	}
	objs = append(objs, exampleJobSet(t, "ml", "train", 2),
		podOn("ml", "train", "leader", 0, "Running", "gpu-node-0"),
		podOn("ml", "train", "workers", 0, "Running", "gpu-node-0"),
		podOn("ml", "train", "workers", 1, "Running", "gpu-node-1"),
		annotated(podGroup("ml", "train-all", 3, "Running", 3), map[string]string{
			"workmap.dev/topology-required": "rack", "workmap.dev/topology-domain": "example.com/rack=r1",
		}))
	objs = append(objs, exampleJobSet(t, "team-b", "big", 5),
		annotated(podGroup("team-b", "big-all", 6, "Pending", 0), map[string]string{"workmap.dev/topology-required": "rack"}))
	for i := range 6 {
		rj, idx := "workers", i-1
		if i == 0 {
			rj, idx = "leader", 0
		}
		p := podOn("team-b", "big", rj, idx, "Pending", "")
		switch i {
		case 0:
			p = unschedulable(p, "0/5 nodes are available: no rack has room for 6 pods of PodGroup team-b/big-all (nvidia.com/gpu 4 each); the closest, rack r2, has room for 1.")
		case 1, 2:
			p = unschedulable(p, "0/5 nodes are available: no rack has room for 6 pods of PodGroup team-b/big-all (nvidia.com/gpu 4 each); the closest, rack r2, has room for 1.")
		}
		objs = append(objs, p)
	}
	objs = append(objs, jobSetObjects(t, "ml", "done", 1, "Succeeded")...)
	return append(objs, podGroup("ml", "done-all", 2, "Pending", 0))
}

// TestTopologyPage: the page draws block → rack → node with each node's GPU slots filled by
// the workloads holding them, lists the waiting gang with what it asks for and why it waits,
// and follows the cluster through its event stream.
func TestTopologyPage(t *testing.T) {
	t.Parallel()
	clients, dyn := fakeClients(t, nil, topologyCluster(t)...)
	s := startServer(t, clients, Options{TopologyLevels: testLevels})
	code, body := get(t, s.Handler(), "/topology")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`<a href="/topology" id="nav-topology" aria-current="page">Topology</a>`,
		`<dd id="topology-gpus">32 <span class="why">on 4 nodes</span></dd>`, `<dd id="topology-bound">13</dd>`, `<dd id="topology-free" class="free">19</dd>`,
		`<b>block</b> <span class="group">example.com/block</span> → <b>rack</b> <span class="group">example.com/rack</span> → node.`,
		"1 node without GPUs not drawn.",
		`data-level="block" data-domain="b1" data-free="11"`, `<h3>block b1 <span class="counts">24 GPUs · <span class="free">11 free</span></span></h3>`,
		`data-level="rack" data-domain="r1" data-free="4"`, `data-level="rack" data-domain="r2" data-free="7"`,
		`data-level="rack" data-domain="" data-free="8"`, "<h3>no rack ",
		`data-node="gpu-node-0" data-gpus="8" data-used="8" data-free="0"`, `<span class="free none">0/8 free</span>`,
		`data-node="gpu-node-1" data-gpus="8" data-used="4" data-free="4"`,
		`<a href="/workloads/jobset.x-k8s.io/JobSet/ml/train" data-workload="jobset.x-k8s.io/JobSet/ml/train" fill="hsl(`,
		`<title>JobSet ml/train: 8 GPUs on gpu-node-0 (ml/train-leader-0-0, ml/train-workers-0-0)</title><rect class="used" x="0" y="0" width="18" height="18" rx="3"/>`,
		`<g class="other" data-workload="" fill="#8a94a3"><title>pods of no workload: 1 GPU on gpu-node-2 (tools/notebook)</title><rect class="used" x="0" y="0" width="18" height="18" rx="3"/></g>`,
		`12 GPUs on 2 nodes · placed in rack r1`,
		`<tr data-podgroup="team-b/big-all">`, `<td class="asks">one rack</td>`, `<td class="num">6 / 6 / 6</td>`, `<td class="num">24</td>`,
		"<ul class=\"reasons\"><li>0/5 nodes are available: no rack has room for 6 pods of PodGroup team-b/big-all (nvidia.com/gpu 4 each); the closest, rack r2, has room for 1.</li></ul>",
	} {
		require.Contains(t, body, want)
	}
	slotsOf := 0
	for _, m := range regexp.MustCompile(`(?s)<a [^>]*data-workload="jobset.x-k8s.io/JobSet/ml/train"[^>]*>(.*?)</a>`).FindAllStringSubmatch(body, -1) {
		slotsOf += strings.Count(m[1], `<rect class="used"`)
	}
	require.Equal(t, 12, slotsOf, "one slot per GPU of ml/train")
	require.NotContains(t, body, "cpu-node-0")
	require.NotContains(t, body, `data-podgroup="ml/done-all"`, "a finished gang does not wait")
	require.NotContains(t, body, "s3cr3t-env-value")
	// The slots are in the domains: r1 holds gpu-node-0 and 1, r2 gpu-node-2.
	r1 := body[strings.Index(body, `data-domain="r1"`):strings.Index(body, `data-domain="r2"`)]
	require.Contains(t, r1, `data-node="gpu-node-0"`)
	require.Contains(t, r1, `data-node="gpu-node-1"`)
	require.NotContains(t, r1, `data-node="gpu-node-2"`)

	t.Run("a finished workload's gang reads Completed, not Pending 0/2", func(t *testing.T) {
		_, body := get(t, s.Handler(), "/")
		require.Regexp(t, `data-key="jobset.x-k8s.io/JobSet/ml/done"[^>]*>(?s:.)*?<td class="gang" title="gang all: PodGroup done-all, minMember 2, phase Pending 0/2">Completed</td>`, body)
		_, body = get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/done")
		require.Contains(t, body, `data-podgroup="done-all" data-phase="Pending" data-done="Completed"`)
		require.Contains(t, body, `Completed <span class="why">(PodGroup Pending)</span>`)
	})
	t.Run("the workload page shows the gang's topology and why it waits", func(t *testing.T) {
		_, body := get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/ml/train")
		require.Contains(t, body, `one rack <span class="domain">· placed in example.com/rack=r1</span>`)
		_, body = get(t, s.Handler(), "/workloads/jobset.x-k8s.io/JobSet/team-b/big")
		require.Contains(t, body, "the closest, rack r2, has room for 1.</li>")
	})
	t.Run("without levels: nodes only", func(t *testing.T) {
		clients, _ := fakeClients(t, nil, topologyCluster(t)...)
		s := startServer(t, clients, Options{})
		_, body := get(t, s.Handler(), "/topology")
		require.Contains(t, body, "No topology levels (<code>--topology-levels</code>): nodes only.")
		require.NotContains(t, body, `data-level=`)
		require.Contains(t, body, `data-node="gpu-node-3"`)
	})
	t.Run("nodes the user may not list", func(t *testing.T) {
		clients, _ := fakeClients(t, map[string]bool{"nodes": true}, topologyCluster(t)...)
		s := startServer(t, clients, Options{TopologyLevels: testLevels})
		_, body := get(t, s.Handler(), "/topology")
		require.Contains(t, body, `<dd id="topology-gpus">unknown</dd>`)
		require.Contains(t, body, "Node capacity unknown (not permitted to list nodes: cannot list nodes cluster-wide: forbidden; ask for a ClusterRole that grants list on nodes, bound cluster-wide (the built-in view role does not))")
		require.Contains(t, body, `data-node="gpu-node-0" data-gpus="0" data-used="8" data-free="0"`)
		require.NotContains(t, body, `data-node="gpu-node-3"`, "only nodes pods are bound to")
	})

	t.Run("live: a node added and a pod bound reach the open page", func(t *testing.T) {
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events?view=topology", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		stream := bufio.NewReader(resp.Body)
		require.Contains(t, nextUpdate(t, stream), `data-node="gpu-node-0"`)

		_, err = dyn.Resource(nodesResource).Create(ctx, node("gpu-node-4", 8, map[string]any{"example.com/block": "b2", "example.com/rack": "r3"}), metav1.CreateOptions{})
		require.NoError(t, err)
		for data := nextUpdate(t, stream); !strings.Contains(data, `data-node="gpu-node-4" data-gpus="8" data-used="0" data-free="8"`); data = nextUpdate(t, stream) {
		}
		notebook := gpuPod("tools", "trainer", "gpu-node-4", 2)
		_, err = dyn.Resource(podsResource).Namespace("tools").Create(ctx, notebook, metav1.CreateOptions{})
		require.NoError(t, err)
		for data := nextUpdate(t, stream); !strings.Contains(data, `data-node="gpu-node-4" data-gpus="8" data-used="2" data-free="6"`); data = nextUpdate(t, stream) {
		}
	})
}

// TestNodeHeartbeats: a node's status updates that change nothing the view shows (heartbeats,
// images) are not kept in the cache and do not wake the pages.
func TestNodeHeartbeats(t *testing.T) {
	n := node("gpu-node-0", 8, map[string]any{"example.com/rack": "r1"})
	stripped, err := stripNode(n)
	require.NoError(t, err)
	u := stripped.(*unstructured.Unstructured)
	require.NotContains(t, u.Object["status"], "images")
	beat := n.DeepCopy()
	beat.SetResourceVersion("2")
	_ = unstructured.SetNestedSlice(beat.Object, []any{map[string]any{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:01:00Z"}}, "status", "conditions")
	beatStripped, _ := stripNode(beat)
	require.True(t, sameNode(u, beatStripped.(*unstructured.Unstructured)))
	cordoned := beat.DeepCopy()
	_ = unstructured.SetNestedField(cordoned.Object, true, "spec", "unschedulable")
	cordonedStripped, _ := stripNode(cordoned)
	require.False(t, sameNode(u, cordonedStripped.(*unstructured.Unstructured)))
	got := nodeOf(cordonedStripped.(*unstructured.Unstructured), []string{"example.com/rack"}, gpuResources(definitions.ExpandOptions{}))
	require.Equal(t, Node{Name: "gpu-node-0", Labels: map[string]string{"example.com/rack": "r1"}, GPUs: 8, Ready: true, Unschedulable: true}, got)
}
