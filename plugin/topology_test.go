package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	configtesting "k8s.io/kubernetes/pkg/scheduler/apis/config/testing"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// The labels of the test cluster's topology: zones hold blocks, blocks hold racks.
const (
	zoneLabel  = "test.workmap.dev/zone"
	blockLabel = "test.workmap.dev/block"
	rackLabel  = "test.workmap.dev/rack"
)

var testLevels = []TopologyLevel{{Name: "zone", NodeLabel: zoneLabel}, {Name: "block", NodeLabel: blockLabel}, {Name: "rack", NodeLabel: rackLabel}}

// gpuNode is a node with gpus GPUs, in the domains "zone/block/rack" (empty parts: no label).
func gpuNode(name, where string, gpus int64) *corev1.Node {
	labels := map[string]string{corev1.LabelHostname: name}
	parts := strings.Split(where, "/")
	for i, label := range []string{zoneLabel, blockLabel, rackLabel} {
		if i < len(parts) && parts[i] != "" {
			labels[label] = parts[i]
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI),
		}},
	}
}

// gpuPod is a pod asking for gpus GPUs.
func gpuPod(name string, gpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: corev1.PodSpec{SchedulerName: "workmap-scheduler", Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}}},
	}
}

// on binds a copy of a pod to a node.
func on(pod *corev1.Pod, node string) *corev1.Pod {
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// topologyCluster is the plugin inside a real scheduling framework (kube-scheduler's default
// plugins, the WorkmapGang plugin at PreFilter and Filter) on a snapshot of nodes and bound
// pods; schedule runs a pod through PreFilter and Filter as kube-scheduler's cycle does and
// assumes it on the first node that fits, in the order kube-scheduler would be given them.
type topologyCluster struct {
	t        *testing.T
	fw       framework.Framework
	gang     *Gang
	members  *grouper.Membership
	snapshot *schedcache.Snapshot
	clock    *testingclock.FakeClock
	// client, informers, events and queue are the framework's clientset, informers, event
	// recorder and nominator (whose pod lister is the informers').
	client    *fake.Clientset
	informers informers.SharedInformerFactory
	events    *events.FakeRecorder
	queue     *internalqueue.PriorityQueue
}

func newTopologyCluster(t *testing.T, levels []TopologyLevel, nodes []*corev1.Node, bound []*corev1.Pod) *topologyCluster {
	t.Helper()
	return newTopologyClusterWith(t, levels, nodes, bound, nil)
}

// newTopologyClusterWith is newTopologyCluster with one more plugin in the profile (nil:
// none), at Filter and Reserve.
func newTopologyClusterWith(t *testing.T, levels []TopologyLevel, nodes []*corev1.Node, bound []*corev1.Pod, extra fwk.Plugin) *topologyCluster {
	t.Helper()
	schedulermetrics.Register()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	enabled := configv1.PluginSet{Enabled: []configv1.Plugin{{Name: Name}}}
	filters, reserves := enabled, configv1.PluginSet{}
	if extra != nil {
		filters = configv1.PluginSet{Enabled: []configv1.Plugin{{Name: Name}, {Name: extra.Name()}}}
		reserves = configv1.PluginSet{Enabled: []configv1.Plugin{{Name: extra.Name()}}}
	}
	cfg := configtesting.V1ToInternalWithDefaults(t, configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{{
		SchedulerName: ptr.To("workmap-scheduler"),
		Plugins: &configv1.Plugins{
			PreFilter: enabled, Filter: filters, Reserve: reserves,
			// DRA needs the scheduler's DRA manager, which a framework alone does not have.
			MultiPoint: configv1.PluginSet{Disabled: []configv1.Plugin{{Name: "DynamicResources"}}},
		},
	}}})
	profile := &cfg.Profiles[0]
	c := &topologyCluster{t: t, members: grouper.NewMembership(nil), snapshot: schedcache.NewSnapshot(bound, nodes), clock: testingclock.NewFakeClock(time.Now())}
	args := &GangArgs{TopologyLevels: levels}
	args.SetDefaults()
	require.NoError(t, args.Validate())
	registry := frameworkplugins.NewInTreeRegistry()
	require.NoError(t, registry.Register(Name, func(_ context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		c.gang = New(h, args, c.members, c.clock)
		return c.gang, nil
	}))
	if extra != nil {
		require.NoError(t, registry.Register(extra.Name(), func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return extra, nil }))
	}
	c.client = fake.NewClientset()
	c.events = events.NewFakeRecorder(100)
	c.informers = informers.NewSharedInformerFactory(c.client, 0)
	c.queue = internalqueue.NewTestQueueWithInformerFactory(ctx, nil, c.informers)
	fw, err := frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(c.client),
		frameworkruntime.WithInformerFactory(c.informers),
		frameworkruntime.WithSnapshotSharedLister(c.snapshot),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithEventRecorder(c.events),
		frameworkruntime.WithPodNominator(c.queue),
	)
	require.NoError(t, err)
	c.fw = fw
	return c
}

// addGang puts pods in one PodGroup of minMember with the given topology annotations.
func (c *topologyCluster) addGang(name string, minMember int32, required, preferred string, pods ...*corev1.Pod) {
	c.addNestedGang(name, minMember, required, preferred, "", nil, pods...)
}

// addNestedGang puts pods in one PodGroup whose parts (partOf, by pod name, outer first) each
// share a domain of the nested levels.
func (c *topologyCluster) addNestedGang(name string, minMember int32, required, preferred, nested string, partOf map[string][]string, pods ...*corev1.Pod) {
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{grouper.ManagedByLabel: grouper.ManagedByValue}, Annotations: map[string]string{}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember},
	}
	for key, value := range map[string]string{grouper.TopologyRequiredAnnotation: required, grouper.TopologyPreferredAnnotation: preferred, grouper.TopologyNestedAnnotation: nested} {
		if value != "" {
			pg.Annotations[key] = value
		}
	}
	for _, p := range pods {
		c.members.Join(p, grouper.Placement{Key: "ns/" + name, Namespace: "ns", Name: name, Desired: pg, Parts: partOf[p.Name]}, c.clock.Now())
	}
}

// schedule runs one scheduling cycle for a pod: it returns the node the pod was assumed on,
// or the status that kept it from every node.
func (c *topologyCluster) schedule(pod *corev1.Pod) (string, *fwk.Status) {
	ctx := context.Background()
	state := framework.NewCycleState()
	result, status, _ := c.fw.RunPreFilterPlugins(ctx, state, pod)
	if !status.IsSuccess() {
		return "", status
	}
	infos, err := c.snapshot.NodeInfos().List()
	require.NoError(c.t, err)
	slices.SortFunc(infos, func(a, b fwk.NodeInfo) int { return strings.Compare(a.Node().Name, b.Node().Name) })
	var reasons []string
	for _, n := range infos {
		if !result.AllNodes() && !result.NodeNames.Has(n.Node().Name) {
			continue
		}
		if s := c.fw.RunFilterPlugins(ctx, state, pod, n); !s.IsSuccess() {
			reasons = append(reasons, s.Message())
			continue
		}
		podInfo, err := framework.NewPodInfo(on(pod, n.Node().Name))
		require.NoError(c.t, err)
		n.AddPodInfo(podInfo)
		c.members.Reserve(pod.UID)
		return n.Node().Name, nil
	}
	return "", fwk.NewStatus(fwk.Unschedulable, strings.Join(reasons, "; "))
}

// scheduleAll schedules pods in order and returns where each went ("" for nowhere) and the
// first failure's message.
func (c *topologyCluster) scheduleAll(pods ...*corev1.Pod) (map[string]string, string) {
	placed := map[string]string{}
	failure := ""
	for _, p := range pods {
		node, status := c.schedule(p)
		placed[p.Name] = node
		if status != nil && failure == "" {
			failure = status.Message()
		}
	}
	return placed, failure
}

// rackOf returns the rack of each placed pod's node.
func rackOf(nodes []*corev1.Node, placed map[string]string) map[string]string {
	racks := map[string]string{}
	for _, n := range nodes {
		racks[n.Name] = n.Labels[rackLabel]
	}
	out := map[string]string{}
	for pod, node := range placed {
		out[pod] = racks[node]
	}
	return out
}

func distinct(m map[string]string) []string {
	var out []string
	for _, v := range m {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// gpuPods makes n pods named prefix-0… asking for gpus GPUs each.
func gpuPods(prefix string, n int, gpus int64) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = gpuPod(fmt.Sprintf("%s-%d", prefix, i), gpus)
	}
	return out
}

func TestTopologyPlacement(t *testing.T) {
	// Two zones; zone a has racks a1 (2 nodes of 4 GPUs) and a2 (2 of 8); zone b has rack b1
	// (4 of 8). gpu-x has no rack label.
	cluster := func() []*corev1.Node {
		return []*corev1.Node{
			gpuNode("a1-0", "a/blk/a1", 4), gpuNode("a1-1", "a/blk/a1", 4),
			gpuNode("a2-0", "a/blk/a2", 8), gpuNode("a2-1", "a/blk/a2", 8),
			gpuNode("b1-0", "b/blk/b1", 8), gpuNode("b1-1", "b/blk/b1", 8), gpuNode("b1-2", "b/blk/b1", 8), gpuNode("b1-3", "b/blk/b1", 8),
			gpuNode("x", "", 64),
		}
	}
	tests := map[string]struct {
		nodes               []*corev1.Node
		bound               []*corev1.Pod
		gang                []*corev1.Pod
		minMember           int32
		required, preferred string
		levels              []TopologyLevel
		wantRacks           []string // the distinct racks the gang lands on
		wantRackCount       int      // or how many racks
		wantFailure         string   // a part of the first failure's message
	}{
		"the gang lands in one rack, the tightest that holds it": {
			nodes: cluster(), gang: gpuPods("p", 4, 4), minMember: 4, required: "rack",
			wantRacks: []string{"a2"},
		},
		"a gang too big for the small rack goes to the one that holds it whole": {
			nodes: cluster(), gang: gpuPods("p", 6, 4), minMember: 6, required: "rack",
			wantRacks: []string{"b1"},
		},
		"pods already bound count: a full rack is passed over": {
			nodes: cluster(), bound: []*corev1.Pod{on(gpuPod("old-0", 8), "a2-0"), on(gpuPod("old-1", 4), "a2-1")},
			gang: gpuPods("p", 2, 4), minMember: 2, required: "rack",
			wantRacks: []string{"a1"},
		},
		"no rack holds the gang though the cluster has room: it waits and says how close a rack came": {
			nodes: cluster(), gang: gpuPods("p", 5, 8), minMember: 5, required: "rack",
			wantFailure: "no rack has room for 5 pods of PodGroup ns/g (nvidia.com/gpu 8 each); the closest, rack b1, has room for 4",
		},
		"nodes without the level's label host no pod of a constrained gang": {
			nodes: []*corev1.Node{gpuNode("x", "", 64), gpuNode("a1-0", "a/blk/a1", 4)}, gang: gpuPods("p", 2, 4), minMember: 2, required: "rack",
			wantFailure: "no rack has room for 2 pods",
		},
		"no node has the level's label: it waits and says so": {
			nodes: []*corev1.Node{gpuNode("x", "", 64)}, gang: gpuPods("p", 2, 1), minMember: 2, required: "rack",
			wantFailure: "no node has the label " + rackLabel,
		},
		"a node label works as a level without being configured": {
			nodes: cluster(), gang: gpuPods("p", 4, 4), minMember: 4, required: rackLabel, levels: []TopologyLevel{},
			wantRacks: []string{"a2"},
		},
		"an unknown level name keeps the gang waiting and names the levels": {
			nodes: cluster(), gang: gpuPods("p", 2, 1), minMember: 2, required: "rak",
			wantFailure: `topology level "rak" is not one of workmap-scheduler's topology levels (they are zone, block, rack)`,
		},
		"required zone, preferred rack: packed into the fewest racks of one zone": {
			nodes: []*corev1.Node{
				gpuNode("r1", "z/blk/r1", 2), gpuNode("r2", "z/blk/r2", 2), gpuNode("r3", "z/blk/r3", 2),
			},
			gang: gpuPods("p", 3, 1), minMember: 3, required: "zone", preferred: "rack",
			wantRackCount: 2,
		},
		"preferred rack only: one rack when one holds the gang, though others have more room": {
			nodes: cluster(), gang: gpuPods("p", 2, 4), minMember: 2, preferred: "rack",
			wantRacks: []string{"a1"},
		},
		"preferred rack inside a required zone: the zone where one rack holds the gang wins over one where it spans two": {
			nodes: []*corev1.Node{
				gpuNode("z1-r1", "z1/blk/r1", 2), gpuNode("z1-r2", "z1/blk/r2", 2),
				gpuNode("z2-r3", "z2/blk/r3", 4),
			},
			gang: gpuPods("p", 4, 1), minMember: 4, required: "zone", preferred: "rack",
			wantRacks: []string{"r3"},
		},
		"preferred rack, no rack holds the gang: the fewest racks, the roomiest first": {
			nodes: []*corev1.Node{gpuNode("r1-0", "z/blk/r1", 1), gpuNode("r2-0", "z/blk/r2", 2), gpuNode("r3-0", "z/blk/r3", 3)},
			gang:  gpuPods("p", 5, 1), minMember: 5, preferred: "rack",
			wantRacks: []string{"r2", "r3"},
		},
		"a preferred level never keeps a gang waiting: bigger than any rack, it spans them": {
			nodes: []*corev1.Node{gpuNode("r1-0", "z/blk/r1", 2), gpuNode("r2-0", "z/blk/r2", 2), gpuNode("r3-0", "z/blk/r3", 2)},
			gang:  gpuPods("p", 6, 1), minMember: 6, preferred: "rack",
			wantRacks: []string{"r1", "r2", "r3"},
		},
		"preferred rack: nodes without the label are used last": {
			nodes: []*corev1.Node{gpuNode("r1-0", "z/blk/r1", 2), gpuNode("x", "z/blk/", 8)},
			gang:  gpuPods("p", 3, 1), minMember: 3, preferred: "rack",
			wantRacks: []string{"", "r1"},
		},
		"preferred rack: the tightest rack that holds the gang alone": {
			nodes: []*corev1.Node{gpuNode("r1-0", "z/blk/r1", 8), gpuNode("r2-0", "z/blk/r2", 3), gpuNode("r3-0", "z/blk/r3", 2)},
			gang:  gpuPods("p", 3, 1), minMember: 3, preferred: "rack",
			wantRacks: []string{"r2"},
		},
		"a leader and workers of different sizes land together in one rack": {
			nodes: cluster(), gang: append([]*corev1.Pod{gpuPod("leader", 2)}, gpuPods("worker", 3, 8)...), minMember: 4, required: "rack",
			wantRacks: []string{"b1"},
		},
		"a taint on a rack's node is respected: the gang goes to a rack that fits without it": {
			nodes: func() []*corev1.Node {
				n := cluster()
				n[2].Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
				return n
			}(),
			gang: gpuPods("p", 2, 8), minMember: 2, required: "rack",
			wantRacks: []string{"b1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			levels := testLevels
			if tc.levels != nil {
				levels = tc.levels
			}
			c := newTopologyCluster(t, levels, tc.nodes, tc.bound)
			c.addGang("g", tc.minMember, tc.required, tc.preferred, tc.gang...)
			placed, failure := c.scheduleAll(tc.gang...)
			if tc.wantFailure != "" {
				require.Contains(t, failure, tc.wantFailure)
				for _, p := range tc.gang {
					require.Empty(t, placed[p.Name], "no pod of a gang that fits no domain is placed")
				}
				group, _ := c.members.Group("ns/g")
				require.True(t, c.clock.Now().Before(group.BackoffUntil), "the gang is backed off")
				return
			}
			require.Empty(t, failure)
			racks := distinct(rackOf(tc.nodes, placed))
			if tc.wantRackCount > 0 {
				require.Len(t, racks, tc.wantRackCount, "%v", placed)
				return
			}
			require.Equal(t, tc.wantRacks, racks)
		})
	}
}

// TestTopologyDomainIsKept: pods created later or recreated join the domain of the members
// already bound, also after the scheduler restarted (the domain read back from the bound
// pods); the domain is forgotten once no member holds a node.
func TestTopologyDomainIsKept(t *testing.T) {
	nodes := []*corev1.Node{gpuNode("a1-0", "a/blk/a1", 4), gpuNode("b1-0", "b/blk/b1", 8), gpuNode("b1-1", "b/blk/b1", 8)}
	t.Run("a pod created later joins the rack of its bound gang", func(t *testing.T) {
		first := gpuPod("first", 2)
		c := newTopologyCluster(t, testLevels, nodes, []*corev1.Pod{on(first, "a1-0")})
		later := gpuPod("later", 2)
		c.addGang("g", 2, "rack", "", on(first, "a1-0"), later)
		node, status := c.schedule(later)
		require.Nil(t, status)
		require.Equal(t, "a1-0", node, "rack a1 is where the gang is, though rack b1 has more room")
	})
	t.Run("a pod that no longer fits in its gang's rack waits rather than leave it", func(t *testing.T) {
		first := gpuPod("first", 2)
		c := newTopologyCluster(t, testLevels, nodes, []*corev1.Pod{on(first, "a1-0")})
		later := gpuPod("later", 4)
		c.addGang("g", 2, "rack", "", on(first, "a1-0"), later)
		_, status := c.schedule(later)
		require.NotNil(t, status)
	})
	t.Run("the domain is forgotten once no member holds a node", func(t *testing.T) {
		c := newTopologyCluster(t, testLevels, nodes, nil)
		a, b := gpuPod("a", 8), gpuPod("b", 8)
		c.addGang("g", 2, "rack", "", a, b)
		node, status := c.schedule(a)
		require.Nil(t, status)
		require.Contains(t, node, "b1")
		group, _ := c.members.Group("ns/g")
		require.NotNil(t, group.Domain)
		c.members.Unreserve(a.UID)
		group, _ = c.members.Group("ns/g")
		require.Nil(t, group.Domain)
	})
}

func TestTopologyLevelsResolve(t *testing.T) {
	levels := newTopologyLevels(testLevels)
	tests := map[string]struct {
		asked     string
		want      level
		wantError string
	}{
		"a level by its name":                     {asked: "rack", want: level{Label: rackLabel, Name: "rack"}},
		"a level by its node label":               {asked: rackLabel, want: level{Label: rackLabel, Name: "rack"}},
		"a node label that is not a level":        {asked: corev1.LabelHostname, want: level{Label: corev1.LabelHostname, Name: corev1.LabelHostname}},
		"an unknown name says which levels exist": {asked: "row", wantError: "(they are zone, block, rack)"},
		"a malformed label is no level":           {asked: "a/b/c", wantError: "nor a node label"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := levels.resolve(tc.asked)
			if tc.wantError != "" {
				require.ErrorContains(t, err, tc.wantError)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestTopologyFromKueueObject: levels read from a Kueue Topology follow the object as it
// changes; while it is missing, deleted or malformed a gang's level cannot resolve, and the
// error says why.
func TestTopologyFromKueueObject(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "topologies"}
	topology := func(labels ...string) *unstructured.Unstructured {
		var levels []any
		for _, l := range labels {
			levels = append(levels, map[string]any{"nodeLabel": l})
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"levels": levels}}}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind("Topology")
		u.SetName("default")
		return u
	}
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: gvr.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "topologies", Kind: "Topology"}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "TopologyList"})
	levels := &currentLevels{}
	levels.set(topologyLevels{problem: "not read yet"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go followTopology(ctx, disc, dyn, &TopologyReference{Kind: TopologyKindKueue, Name: "default"}, levels)

	resolves := func(asked, wantLabel string) func() bool {
		return func() bool {
			l, err := levels.get().resolve(asked)
			return err == nil && l.Label == wantLabel
		}
	}
	failsWith := func(asked, want string) func() bool {
		return func() bool {
			_, err := levels.get().resolve(asked)
			return err != nil && strings.Contains(err.Error(), want)
		}
	}
	require.Eventually(t, failsWith("rack", "the Kueue Topology default does not exist"), 5*time.Second, 10*time.Millisecond)

	_, err := dyn.Resource(gvr).Create(ctx, topology("cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", corev1.LabelHostname), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, resolves("rack", "cloud.provider.com/topology-rack"), 5*time.Second, 10*time.Millisecond, "levels named by their label's last part")
	require.True(t, resolves("hostname", corev1.LabelHostname)())

	_, err = dyn.Resource(gvr).Update(ctx, topology("example.com/nvlink-domain"), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, resolves("nvlink-domain", "example.com/nvlink-domain"), 5*time.Second, 10*time.Millisecond, "followed as it changes")
	require.True(t, failsWith("rack", "they are nvlink-domain")())

	require.NoError(t, dyn.Resource(gvr).Delete(ctx, "default", metav1.DeleteOptions{}))
	require.Eventually(t, failsWith("nvlink-domain", "the Kueue Topology default was deleted"), 5*time.Second, 10*time.Millisecond)
}

func TestTopologyFromAKindNotServed(t *testing.T) {
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
	levels := &currentLevels{}
	levels.set(topologyLevels{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go followTopology(ctx, disc, nil, &TopologyReference{Kind: TopologyKindKAI, Name: "cluster"}, levels)
	require.Eventually(t, func() bool {
		_, err := levels.get().resolve("rack")
		return err != nil && strings.Contains(err.Error(), "the KAI Topology cluster cannot be read: the API server serves no topologies.kai.scheduler")
	}, 5*time.Second, 10*time.Millisecond)
}

func TestDecodeTopologyArgs(t *testing.T) {
	tests := map[string]struct {
		raw       string
		wantError string
	}{
		"levels":                       {raw: `{"topologyLevels": [{"name": "rack", "nodeLabel": "example.com/rack"}]}`},
		"a Kueue Topology":             {raw: `{"topologyFrom": {"kind": "Kueue", "name": "default"}}`},
		"both":                         {raw: `{"topologyLevels": [{"name": "rack", "nodeLabel": "example.com/rack"}], "topologyFrom": {"kind": "KAI", "name": "x"}}`, wantError: "topologyFrom: Forbidden: set topologyLevels or topologyFrom, not both"},
		"an unknown kind":              {raw: `{"topologyFrom": {"kind": "Volcano", "name": "x"}}`, wantError: `topologyFrom.kind: Unsupported value: "Volcano"`},
		"a level without a node label": {raw: `{"topologyLevels": [{"name": "rack"}]}`, wantError: "topologyLevels[0].nodeLabel"},
		"a level name twice":           {raw: `{"topologyLevels": [{"name": "rack", "nodeLabel": "a/rack"}, {"name": "rack", "nodeLabel": "b/rack"}]}`, wantError: `topologyLevels[1].name: Duplicate value: "rack"`},
		"a malformed node label":       {raw: `{"topologyLevels": [{"name": "rack", "nodeLabel": "a/b/c"}]}`, wantError: "topologyLevels[0].nodeLabel: Invalid value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeArgs(&runtime.Unknown{Raw: []byte(tc.raw)})
			if tc.wantError == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantError)
		})
	}
}

// TestTopologyFailedAttemptForgetsItsPlan: an attempt that fails before any of its pods holds
// a node (its first pod did not fit its planned node) is backed off and its domain forgotten,
// so the next attempt chooses again from the cluster as it is then.
func TestTopologyFailedAttemptForgetsItsPlan(t *testing.T) {
	nodes := []*corev1.Node{gpuNode("a1-0", "a/blk/a1", 8), gpuNode("b1-0", "b/blk/b1", 8), gpuNode("b1-1", "b/blk/b1", 8)}
	c := newTopologyCluster(t, testLevels, nodes, nil)
	a, b := gpuPod("a", 8), gpuPod("b", 8)
	c.addGang("g", 2, "rack", "", a, b)
	_, status, _ := c.fw.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), a)
	require.True(t, status.IsSuccess(), "%v", status)
	group, _ := c.members.Group("ns/g")
	require.NotNil(t, group.Domain)
	require.Equal(t, "b1", group.Domain.Value)

	// The pod fit no node after all (the cluster changed): PostFilter rejects the gang.
	_, status = c.gang.PostFilter(context.Background(), framework.NewCycleState(), a, nil)
	require.Equal(t, fwk.Unschedulable, status.Code())
	group, _ = c.members.Group("ns/g")
	require.True(t, c.clock.Now().Before(group.BackoffUntil))
	require.Nil(t, group.Domain, "the failed attempt's plan is forgotten")
}

// TestTopologyLeaderFirst: a gang whose controller creates the rest of its pods only once the
// first holds a node (a LeaderWorkerSet with exclusive placement) lets its leader bind alone,
// in a rack that holds the whole gang — not in one with room for the leader only — and then
// its workers, created later, bind together in that rack.
func TestTopologyLeaderFirst(t *testing.T) {
	// Rack a1: two nodes of 8 GPUs (room for the leader and one worker); rack b1: three.
	nodes := []*corev1.Node{gpuNode("a1-0", "a/blk/a1", 8), gpuNode("a1-1", "a/blk/a1", 8), gpuNode("b1-0", "b/blk/b1", 8), gpuNode("b1-1", "b/blk/b1", 8), gpuNode("b1-2", "b/blk/b1", 8)}
	c := newTopologyCluster(t, testLevels, nodes, nil)
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", Labels: map[string]string{grouper.ManagedByLabel: grouper.ManagedByValue},
			Annotations: map[string]string{grouper.TopologyRequiredAnnotation: "rack", grouper.LeaderFirstAnnotation: "true"}},
		Spec: v1alpha1.PodGroupSpec{MinMember: 3, MinResources: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("24")}},
	}
	join := func(p *corev1.Pod) {
		c.members.Join(p, grouper.Placement{Key: "ns/g", Namespace: "ns", Name: "g", Desired: pg}, c.clock.Now())
	}
	ctx := context.Background()
	leader := gpuPod("leader", 8)
	join(leader)
	require.Nil(t, c.gang.PreEnqueue(ctx, leader), "the leader is not held for workers its controller has not made")
	node, status := c.schedule(leader)
	require.Nil(t, status)
	require.Contains(t, node, "b1", "a rack that holds the whole gang, with the workers yet to come")
	s, _ := c.gang.Permit(ctx, framework.NewCycleState(), leader, node)
	require.True(t, s.IsSuccess(), "the leader binds alone: %v", s)
	c.members.Update(on(leader, node))

	w1, w2 := gpuPod("worker-1", 8), gpuPod("worker-2", 8)
	join(w1)
	require.NotNil(t, c.gang.PreEnqueue(ctx, w1), "a worker waits for the other")
	join(w2)
	require.Nil(t, c.gang.PreEnqueue(ctx, w1))
	for _, w := range []*corev1.Pod{w1, w2} {
		node, status := c.schedule(w)
		require.Nil(t, status)
		require.Contains(t, node, "b1", "the workers join the leader's rack")
	}
	s, _ = c.gang.Permit(ctx, framework.NewCycleState(), w2, "b1-2")
	require.True(t, s.IsSuccess(), "with the leader bound and both workers holding nodes, the gang is whole: %v", s)
}
