package plugin

import (
	"cmp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cpuNode is a node of 2 CPUs in a zone and rack, as Kubernetes' own topology-aware
// scheduling tests build their clusters.
func cpuNode(name, zone, rack string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, zoneLabel: zone, rackLabel: rack}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

// cpuPod is a pod asking for cpus CPUs.
func cpuPod(name string, cpus int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI)}},
		}}},
	}
}

// tasGang is one gang of a case: its pods' CPUs, its minMember and the level it requires.
type tasGang struct {
	name      string
	cpus      []int64
	minMember int32
	level     string
	// wantDomain is the one value of the level's label all its pods land in; "" means none
	// of its pods is placed.
	wantDomain string
}

// TestTopologyLikeKubernetes re-expresses, for workmap's gangs, the single-level behaviours
// Kubernetes' own topology-aware gang scheduling is tested for: nodes of 2 CPUs in racks and
// zones, gangs created one after another, each required in one rack or zone.
func TestTopologyLikeKubernetes(t *testing.T) {
	tests := map[string]struct {
		nodes []*corev1.Node
		bound []*corev1.Pod
		gangs []tasGang
	}{
		"only one rack is feasible: the gang lands there": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r1"), cpuNode("n4", "z1", "r2"), cpuNode("n5", "z1", "r2"), cpuNode("n6", "z2", "r3")},
			bound: []*corev1.Pod{on(cpuPod("existing", 2), "n4")},
			gangs: []tasGang{{name: "g", cpus: []int64{1, 1, 1}, minMember: 3, level: "rack", wantDomain: "r1"}},
		},
		"no rack holds the gang though the cluster would: it stays pending": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r2"), cpuNode("n4", "z2", "r3")},
			gangs: []tasGang{{name: "g", cpus: []int64{2, 2, 2}, minMember: 3, level: "rack"}},
		},
		"room taken by pods already bound: it stays pending": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r1")},
			bound: []*corev1.Pod{on(cpuPod("e1", 2), "n1"), on(cpuPod("e3", 2), "n3")},
			gangs: []tasGang{{name: "g", cpus: []int64{1, 1, 1}, minMember: 3, level: "rack"}},
		},
		"two racks fit: the tightest is chosen": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r2"), cpuNode("n4", "z1", "r2"), cpuNode("n5", "z1", "r2"), cpuNode("n6", "z2", "r3")},
			gangs: []tasGang{{name: "g", cpus: []int64{1, 1, 1}, minMember: 3, level: "rack", wantDomain: "r1"}},
		},
		"pods already bound make a rack the fullest of those with the least room left": {
			nodes: []*corev1.Node{
				cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"),
				cpuNode("n3", "z1", "r2"), cpuNode("n4", "z1", "r2"), cpuNode("n5", "z1", "r2"),
				cpuNode("n6", "z2", "r3"), cpuNode("n7", "z2", "r3"), cpuNode("n8", "z2", "r3"),
				cpuNode("n9", "z2", "r4"),
			},
			bound: []*corev1.Pod{on(cpuPod("e3", 2), "n3"), on(cpuPod("e8", 1), "n8")},
			gangs: []tasGang{{name: "g", cpus: []int64{1, 1, 1}, minMember: 3, level: "rack", wantDomain: "r2"}},
		},
		"two gangs one after another, each in a rack of its own": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r1"), cpuNode("n4", "z1", "r2"), cpuNode("n5", "z1", "r2")},
			gangs: []tasGang{
				{name: "g1", cpus: []int64{2, 2, 2}, minMember: 3, level: "rack", wantDomain: "r1"},
				{name: "g2", cpus: []int64{1, 1}, minMember: 2, level: "rack", wantDomain: "r2"},
			},
		},
		"two gangs one after another in the same rack, the only one that holds the first": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r1"), cpuNode("n4", "z1", "r2")},
			gangs: []tasGang{
				{name: "g1", cpus: []int64{2, 1}, minMember: 2, level: "rack", wantDomain: "r1"},
				{name: "g2", cpus: []int64{1, 1, 1}, minMember: 3, level: "rack", wantDomain: "r1"},
			},
		},
		"two gangs at different levels: a rack, then a zone spanning two racks": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r2"), cpuNode("n4", "z2", "r3"), cpuNode("n5", "z2", "r3"), cpuNode("n6", "z2", "r3")},
			gangs: []tasGang{
				{name: "g1", cpus: []int64{2, 2, 2}, minMember: 3, level: "rack", wantDomain: "r3"},
				{name: "g2", cpus: []int64{2, 2, 2}, minMember: 3, level: "zone", wantDomain: "z1"},
			},
		},
		"two gangs, room for the first only: the second stays pending whole": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1")},
			gangs: []tasGang{
				{name: "g1", cpus: []int64{1, 1, 1}, minMember: 3, level: "rack", wantDomain: "r1"},
				{name: "g2", cpus: []int64{1, 1}, minMember: 2, level: "rack"},
			},
		},
		"a gang with more pods than minMember lands whole in one rack": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r2"), cpuNode("n4", "z1", "r2")},
			gangs: []tasGang{{name: "g", cpus: []int64{1, 1, 1}, minMember: 2, level: "rack", wantDomain: "r1"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newTopologyCluster(t, testLevels, tc.nodes, tc.bound)
			labels := map[string]map[string]string{}
			for _, n := range tc.nodes {
				labels[n.Name] = n.Labels
			}
			for _, gang := range tc.gangs {
				var gangPods []*corev1.Pod
				for i, cpus := range gang.cpus {
					gangPods = append(gangPods, cpuPod(gang.name+"-"+string(rune('a'+i)), cpus))
				}
				c.addGang(gang.name, gang.minMember, gang.level, "", gangPods...)
				placed, failure := c.scheduleAll(gangPods...)
				label := map[string]string{"rack": rackLabel, "zone": zoneLabel}[gang.level]
				if gang.wantDomain == "" {
					require.NotEmpty(t, failure, "gang %s", gang.name)
					for pod, node := range placed {
						require.Empty(t, node, "gang %s: pod %s placed though the gang fits no %s", gang.name, pod, gang.level)
					}
					continue
				}
				require.Empty(t, failure, "gang %s", gang.name)
				for pod, node := range placed {
					require.Equal(t, gang.wantDomain, labels[node][label], "gang %s: pod %s on %s", gang.name, pod, node)
				}
			}
		})
	}
}

// TestTopologyLaterPodsJoinTheDomain: a gang with more pods than minMember keeps its domain
// for pods created after it was placed, and a pod that no longer fits there waits rather
// than leave it, though another rack has room.
func TestTopologyLaterPodsJoinTheDomain(t *testing.T) {
	nodes := []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z1", "r1"), cpuNode("n4", "z1", "r2"), cpuNode("n5", "z1", "r2"), cpuNode("n6", "z2", "r3")}
	c := newTopologyCluster(t, testLevels, nodes, nil)
	first := []*corev1.Pod{cpuPod("p1", 1), cpuPod("p2", 1), cpuPod("p3", 1)}
	c.addGang("g", 3, "rack", "", first...)
	placed, failure := c.scheduleAll(first...)
	require.Empty(t, failure)
	require.Equal(t, []string{"r2"}, distinct(rackOf(nodes, placed)), "the tightest rack")
	for _, p := range first {
		c.members.Update(on(p, placed[p.Name])) // bound
	}

	p4 := cpuPod("p4", 1)
	c.addGang("g", 3, "rack", "", p4)
	node, status := c.schedule(p4)
	require.Nil(t, status)
	require.Equal(t, "r2", rackOf(nodes, map[string]string{"p4": node})["p4"], "joins the rack of its gang")
	c.members.Update(on(p4, node))

	p5 := cpuPod("p5", 1)
	c.addGang("g", 3, "rack", "", p5)
	_, status = c.schedule(p5)
	require.NotNil(t, status, "rack r2 is full: p5 waits, though rack r1 has room")
}

// nestedPart is one part of a gang with nested topology: its pods' CPUs, and the block and
// rack all of them must land in ("" for any one).
type nestedPart struct {
	cpus                []int64
	wantBlock, wantRack string
}

// blockNode is a node of 2 CPUs in a zone, block and rack.
func blockNode(name, zone, block, rack string) *corev1.Node {
	n := cpuNode(name, zone, rack)
	n.Labels[blockLabel] = block
	return n
}

// TestTopologyNestedLikeKubernetes re-expresses Kubernetes' multi-level topology cases (a
// composite pod group whose children, and their children, have their own level) as workmap
// gangs with nested topology: the gang in one zone (or anywhere), each part (a role instance,
// a replica) in one domain of a narrower level of it, and each smaller part inside it in one
// domain of a narrower level still. A part is named by its path, outer first ("sub1 pg1").
func TestTopologyNestedLikeKubernetes(t *testing.T) {
	tests := map[string]struct {
		nodes    []*corev1.Node
		bound    []*corev1.Pod
		boundOf  map[string]string // part of each bound pod of the gang
		required string            // the gang's level ("" for none)
		nested   string            // the gang's nested levels, as its annotation says them
		parts    map[string]nestedPart
		wantZone string // "" when the gang stays pending
	}{
		"zone required, each part in one rack: the zone whose racks hold both parts": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r2"), cpuNode("n3", "z2", "r3"), cpuNode("n4", "z2", "r3")},
			bound: []*corev1.Pod{on(cpuPod("other", 1), "n3")},
			parts: map[string]nestedPart{
				"pg1": {cpus: []int64{1, 1}, wantRack: "r1"},
				"pg2": {cpus: []int64{1, 1}, wantRack: "r2"},
			},
			required: "zone", wantZone: "z1",
		},
		"no rack holds a part although the zone has room: the gang stays pending whole": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r2")},
			parts: map[string]nestedPart{
				"pg1": {cpus: []int64{2, 2}},
				"pg2": {cpus: []int64{1}},
			},
			required: "zone",
		},
		"the gang's level unconstrained, each part in a rack of its own": {
			nodes: []*corev1.Node{cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r1"), cpuNode("n3", "z2", "r2"), cpuNode("n4", "z2", "r2")},
			parts: map[string]nestedPart{
				"pg1": {cpus: []int64{2, 2}, wantRack: "r1"},
				"pg2": {cpus: []int64{2, 2}, wantRack: "r2"},
			},
			wantZone: "*",
		},
		"a part's pod bound already pins the zone and its part's rack": {
			nodes: []*corev1.Node{
				cpuNode("n1", "z1", "r1"), cpuNode("n2", "z1", "r2"), cpuNode("n3", "z1", "r2"),
				cpuNode("n4", "z2", "r3"), cpuNode("n5", "z2", "r3"),
			},
			bound:   []*corev1.Pod{on(cpuPod("pg1-bound", 1), "n1")},
			boundOf: map[string]string{"pg1-bound": "pg1"},
			parts: map[string]nestedPart{
				"pg1": {cpus: []int64{1}, wantRack: "r1"},
				"pg2": {cpus: []int64{2, 2}, wantRack: "r2"},
			},
			required: "zone", wantZone: "z1",
		},
		// Kubernetes' nodes: rack values repeat across blocks, and each is a domain of its block.
		"three levels: the gang in one zone, each part in one block of it, each smaller part in one rack of that": {
			nodes: []*corev1.Node{
				blockNode("n1", "z1", "b1", "r1"), blockNode("n2", "z1", "b1", "r2"),
				blockNode("n3", "z1", "b2", "r1"), blockNode("n4", "z1", "b2", "r2"),
				blockNode("n5", "z2", "b1", "r1"), blockNode("n6", "z2", "b1", "r1"),
			},
			nested: "replica=block,instanceReplica=rack",
			parts: map[string]nestedPart{
				"sub1 pg1": {cpus: []int64{1, 1}}, "sub1 pg2": {cpus: []int64{1, 1}},
				"sub2 pg3": {cpus: []int64{1, 1}}, "sub2 pg4": {cpus: []int64{1, 1}},
			},
			required: "zone", wantZone: "z1",
		},
		"three levels, the gang's level unconstrained: each part in a zone, each smaller part in one rack of it": {
			nodes: []*corev1.Node{
				blockNode("n1", "z1", "b1", "r1"), blockNode("n2", "z1", "b1", "r2"),
				blockNode("n3", "z2", "b2", "r3"), blockNode("n4", "z2", "b2", "r4"), blockNode("n5", "z2", "b2", "r5"),
			},
			nested: "replica=zone,instanceReplica=rack",
			parts: map[string]nestedPart{
				"sub1 pg1": {cpus: []int64{1, 1}}, "sub1 pg2": {cpus: []int64{1, 1}},
				"sub2 pg3": {cpus: []int64{1, 1}}, "sub2 pg4": {cpus: []int64{1, 1}},
			},
			wantZone: "*",
		},
		"three levels: a block with room whose racks cannot hold a smaller part is passed over for one whose racks can": {
			nodes: []*corev1.Node{
				blockNode("n1", "z1", "b1", "r1"), blockNode("n2", "z1", "b1", "r2"), blockNode("n3", "z1", "b1", "r3"),
				blockNode("n4", "z1", "b2", "r4"), blockNode("n5", "z1", "b2", "r5"),
			},
			// Block b1 has 3 CPUs free, one per rack: the tightest block that could hold the part.
			bound:  []*corev1.Pod{on(cpuPod("other1", 1), "n1"), on(cpuPod("other2", 1), "n2"), on(cpuPod("other3", 1), "n3")},
			nested: "replica=block,instanceReplica=rack",
			parts: map[string]nestedPart{
				"sub1 pg1": {cpus: []int64{1, 1}, wantBlock: "b2"}, "sub1 pg2": {cpus: []int64{1}, wantBlock: "b2"},
			},
			required: "zone", wantZone: "z1",
		},
		"three levels: no block holds a part although each of its smaller parts fits a rack: the gang stays pending whole": {
			nodes: []*corev1.Node{
				blockNode("n1", "z1", "b1", "r1"), blockNode("n2", "z1", "b2", "r2"),
			},
			nested: "replica=block,instanceReplica=rack",
			parts: map[string]nestedPart{
				"sub1 pg1": {cpus: []int64{1, 1}}, "sub1 pg2": {cpus: []int64{1, 1}},
			},
			required: "zone",
		},
		"three levels: a smaller part's pod bound already pins the zone, its part's block and its own rack": {
			nodes: []*corev1.Node{
				blockNode("n1", "z1", "b1", "r1"), blockNode("n2", "z1", "b1", "r2"),
				blockNode("n3", "z2", "b2", "r3"), blockNode("n4", "z2", "b2", "r4"),
				blockNode("n5", "z2", "b3", "r5"), blockNode("n6", "z2", "b3", "r6"),
			},
			bound:   []*corev1.Pod{on(cpuPod("pg1-bound", 1), "n4")},
			boundOf: map[string]string{"pg1-bound": "sub1 pg1"},
			nested:  "replica=block,instanceReplica=rack",
			parts: map[string]nestedPart{
				"sub1 pg1": {cpus: []int64{1}, wantRack: "r4"}, "sub1 pg2": {cpus: []int64{1, 1}, wantRack: "r3"},
				"sub2 pg3": {cpus: []int64{1, 1}}, "sub2 pg4": {cpus: []int64{1, 1}},
			},
			required: "zone", wantZone: "z2",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newTopologyCluster(t, testLevels, tc.nodes, tc.bound)
			partOf := map[string][]string{}
			var pods []*corev1.Pod
			for _, part := range sortedKeys(tc.parts) {
				for i, cpus := range tc.parts[part].cpus {
					p := cpuPod(strings.ReplaceAll(part, " ", "-")+"-"+string(rune('a'+i)), cpus)
					pods, partOf[p.Name] = append(pods, p), strings.Fields(part)
				}
			}
			var boundMembers []*corev1.Pod
			for _, b := range tc.bound {
				if part, ok := tc.boundOf[b.Name]; ok {
					partOf[b.Name] = strings.Fields(part)
					boundMembers = append(boundMembers, b)
				}
			}
			nested := cmp.Or(tc.nested, "instance=rack")
			minMember := int32(len(pods) + len(boundMembers))
			c.addNestedGang("g", minMember, tc.required, "", nested, partOf, append(boundMembers, pods...)...)
			placed, failure := c.scheduleAll(pods...)
			labels := map[string]map[string]string{}
			for _, n := range tc.nodes {
				labels[n.Name] = n.Labels
			}
			if tc.wantZone == "" {
				require.NotEmpty(t, failure)
				for pod, node := range placed {
					require.Empty(t, node, "pod %s placed though the gang fits nowhere", pod)
				}
				return
			}
			require.Empty(t, failure)
			for _, b := range boundMembers {
				placed[b.Name] = b.Spec.NodeName
			}
			// Every part, at each level, in one domain of it (inside its outer part's), and the
			// gang in one zone.
			levels := []string{tasLabelOf(tc.required)}
			for _, level := range strings.Split(nested, ",") {
				_, name, _ := strings.Cut(level, "=")
				levels = append(levels, tasLabelOf(name))
			}
			domainsOf := map[string]map[string]bool{}
			for pod, node := range placed {
				path := append([]string{"gang"}, partOf[pod]...)
				for depth := range path {
					if levels[depth] == "" {
						continue
					}
					key := strings.Join(path[:depth+1], " ")
					if domainsOf[key] == nil {
						domainsOf[key] = map[string]bool{}
					}
					domainsOf[key][labels[node][levels[depth]]] = true
				}
				want := tc.parts[strings.Join(partOf[pod], " ")]
				for label, value := range map[string]string{blockLabel: want.wantBlock, rackLabel: want.wantRack} {
					if value != "" {
						require.Equal(t, value, labels[node][label], "pod %s of part %v on %s", pod, partOf[pod], node)
					}
				}
			}
			for key, values := range domainsOf {
				require.Len(t, values, 1, "%s spans %v", key, values)
			}
			if tc.wantZone != "*" {
				require.Equal(t, map[string]bool{tc.wantZone: true}, domainsOf["gang"])
			}
		})
	}
}

// tasLabelOf is the node label of a level of testLevels ("" for none).
func tasLabelOf(name string) string {
	for _, l := range testLevels {
		if l.Name == name {
			return l.NodeLabel
		}
	}
	return ""
}
