package plugin_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// The suite's zone level (its block and rack levels are those of the other topology tests),
// and the label that keeps each case's pods on its own nodes.
const (
	e2eZoneLabel = "e2e.workmap.dev/zone"
	e2eCaseLabel = "e2e.workmap.dev/case"
	// tasPartLabel names a GroupSet pod's part, tasSubLabel its sub-gang.
	tasPartLabel = "e2e.workmap.dev/part"
	tasSubLabel  = "e2e.workmap.dev/sub"
)

// tasLevels are the labels of the suite's topology levels, by name.
var tasLevels = map[string]string{"zone": e2eZoneLabel, "block": e2eBlockLabel, "rack": e2eRackLabel}

// groupSetKind is a workload kind of gangs whose parts each may need one domain of a narrower
// level: a stand-in for a framework with nested gangs, described by groupSetDefinition.
var groupSetKind = harness.CustomKind{Group: "e2e.workmap.dev", Version: "v1", Kind: "GroupSet", Plural: "groupsets"}

var groupSets = schema.GroupVersionResource{Group: "e2e.workmap.dev", Version: "v1", Resource: "groupsets"}

// groupSetDefinition makes one gang of a GroupSet's pods, minMember spec.minMember, in one
// domain of the level its workmap.dev/topology-required annotation names; each of its
// spec.parts is a nested part in one domain of the level spec.nested, and the pods of
// spec.free go anywhere in the gang's domain. A pod's part is its e2e.workmap.dev/part label.
// With spec.outer, the parts are themselves in sub-gangs, each in one domain of that level:
// a pod's sub-gang is its e2e.workmap.dev/sub label (its replica).
const groupSetDefinition = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: groupsets.e2e.workmap.dev}
spec:
  workload: {group: e2e.workmap.dev, kind: GroupSet, versions: [v1]}
  roles:
  - name: part
    podTemplate: spec.parts[*].template
    replicas: "item.pods"
    podInstance: "pod.metadata.?labels[?'e2e.workmap.dev/part'].orValue('')"
    podReplica: "int(pod.metadata.?labels[?'e2e.workmap.dev/sub'].orValue('0'))"
  - name: free
    podTemplate: spec.free[*].template
    replicas: "item.pods"
    podInstance: "pod.metadata.?labels[?'e2e.workmap.dev/part'].orValue('')"
  gang:
    groups:
    - name: all
      members: [part, free]
      minMember: "self.spec.minMember"
      topology:
        nested:
          scope: replica
          required: "self.spec.?outer.orValue('')"
          nested: {scope: instanceReplica, required: "self.spec.?nested.orValue('')"}
`

// tasNode is a node of 2 CPUs of a case, in one domain of each level it names.
type tasNode struct {
	name, zone, block, rack string
	// taint is the key of a NoSchedule taint ("" for none).
	taint string
}

func node(name, zone, rack string) tasNode { return tasNode{name: name, zone: zone, rack: rack} }

// tasPod is a pod of a case, asking for 1 CPU unless cpu says otherwise.
type tasPod struct {
	name, cpu string
	// group is its PodGroup, or its part of the GroupSet workload ("" for none); sub its
	// sub-gang of the GroupSet ("" for none).
	group, workload, sub string
	// node: the pod is created bound to it, already running.
	node string
	// tolerate is a taint key it tolerates; prefer a node it prefers (soft node affinity).
	tolerate, prefer string
}

func pod(name, group string) tasPod        { return tasPod{name: name, group: group} }
func largePod(name, group string) tasPod   { return tasPod{name: name, group: group, cpu: "2"} } // a whole node
func unfittable(name, group string) tasPod { return tasPod{name: name, group: group, cpu: "3"} } // more than a node
func running(name, node, cpu string) tasPod {
	return tasPod{name: name, node: node, cpu: cpu}
}

// member is a pod of a GroupSet's part.
func member(name, workload, part string) tasPod {
	return tasPod{name: name, workload: workload, group: part}
}

// subMember is a pod of a GroupSet's part in its sub-gang (its replica, a number).
func subMember(name, workload, sub, part string) tasPod {
	return tasPod{name: name, workload: workload, group: part, sub: sub}
}

// tasGang is a PodGroup whose pods (labelled with it) must share one domain of a level:
// minMember 1 for a group whose pods are not a gang but share the domain all the same.
type tasGang struct {
	name      string
	minMember int32
	required  string
}

func gang(name, required string, minMember int32) tasGang {
	return tasGang{name: name, minMember: minMember, required: required}
}

func basic(name, required string) tasGang {
	return tasGang{name: name, minMember: 1, required: required}
}

// tasWorkload is a GroupSet: one gang, its parts each in one domain of the nested level.
type tasWorkload struct {
	name      string
	minMember int64
	// required is the gang's level; outer the level of each sub-gang of parts, nested the
	// level of each of parts ("" for none).
	required, outer, nested string
	parts, free             []string
}

// tasWant is what must become of some pods: bound of them hold a node, all in one domain of
// level (domain, unless ""); the rest stay unbound, and an event on one of them says why (its
// parts, split at "…", in order).
type tasWant struct {
	pods          []string
	bound         int
	level, domain string
	why           string
}

func inDomain(level, domain string, pods ...string) tasWant {
	return tasWant{pods: pods, bound: len(pods), level: level, domain: domain}
}

func inOneDomain(level string, pods ...string) tasWant {
	return tasWant{pods: pods, bound: len(pods), level: level}
}

func pending(why string, pods ...string) tasWant { return tasWant{pods: pods, why: why} }

func someIn(bound int, level, domain, why string, pods ...string) tasWant {
	return tasWant{pods: pods, bound: bound, level: level, domain: domain, why: why}
}

// tasStep creates gangs and pods (or deletes pods), then checks what becomes of them.
type tasStep struct {
	gangs      []tasGang
	workloads  []tasWorkload
	pods       []tasPod
	deletePods []string
	want       []tasWant
}

type tasCase struct {
	nodes   []tasNode
	running []tasPod
	steps   []tasStep
}

// tasSettle is how long pods that must stay pending are watched.
const tasSettle = 3 * time.Second

// TestTopologyCases re-expresses, for workmap's gangs on a stock control plane, the behaviours
// Kubernetes' own topology-aware gang scheduling is tested for: nodes of 2 CPUs in zones and
// racks (and blocks), gangs (PodGroups with minMember and workmap.dev/topology-required), and
// groups of minMember 1 whose pods are not a gang but share one domain; then gangs with nested
// parts (GroupSets: the gang in one zone, each part in one rack of it), for Kubernetes'
// composite pod groups. One workmap-scheduler serves every case at once: each case has its own
// namespace, nodes (names and domains prefixed by the case) and pods kept to them.
//
// The behaviours that rely on preemption are left to gang preemption: "gang uses pod group
// preemption when resources are consumed by lower priority existing pods", "gang uses
// preemption and schedules on a single rack, choosing placement with the highest score" (and
// "... with highest allocation percentage with pre-existing pods in cluster"), "gang with
// minCount < pod count schedules on a single rack without preemption, additional pod triggers
// preemption on the same rack", and every composite case of
// TestCPGTopologyAwareSchedulingWorkloadAwarePreemption. A gang that waits while pods of its
// own priority hold the room is here: preemption must not change it.
//
// A composite pod group of three constrained levels (zone, block, rack) is re-expressed as the
// gang in a zone and each part in a rack: workmap nests one level below the gang's.
func TestTopologyCases(t *testing.T) {
	tests := map[string]tasCase{
		// Single level.
		"gang lands in the only rack with room for all its pods": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack2", "zone-1", "rack-2"), node("node5-rack2", "zone-1", "rack-2"), node("node6-zone2", "zone-2", "rack-3"),
			},
			running: []tasPod{running("existing1", "node4-rack2", "2")},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}},
		},
		"gang stays pending whole when no rack holds it, though the cluster would": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"),
				node("node3-rack2", "zone-1", "rack-2"), node("node4-zone2", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{largePod("p1", "pg1"), largePod("p2", "pg1"), largePod("p3", "pg1")},
				want: []tasWant{pending("no rack has room for 3 pods of PodGroup {ns}/pg1 (cpu 2 each); the closest, rack {c}rack-1, has room for 2", "p1", "p2", "p3")},
			}},
		},
		"gang waits while running pods fill its rack, and lands once one of them is deleted": {
			nodes:   []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1")},
			running: []tasPod{running("existing1", "node1-rack1", "2"), running("existing2", "node3-rack1", "2")},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{pending("no rack has room for 3 pods of PodGroup {ns}/pg1 (cpu 1 each); the closest, rack {c}rack-1, has room for 2", "p1", "p2", "p3")},
			}, {
				deletePods: []string{"existing1"},
				want:       []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}},
		},
		"gang lands in the tightest rack that holds it": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"),
				node("node3-rack2", "zone-2", "rack-2"), node("node4-rack2", "zone-2", "rack-2"), node("node5-rack2", "zone-2", "rack-2"),
				node("node6-rack3", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}},
		},
		"gang lands in the rack running pods leave tightest, the larger of two as tight": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"),
				node("node3-rack2", "zone-2", "rack-2"), node("node4-rack2", "zone-2", "rack-2"), node("node5-rack2", "zone-2", "rack-2"),
				node("node6-rack3", "zone-2", "rack-3"), node("node7-rack3", "zone-2", "rack-3"), node("node8-rack3", "zone-2", "rack-3"),
				node("node9-rack4", "zone-2", "rack-4"),
			},
			running: []tasPod{running("existing1", "node3-rack2", "2"), running("existing2", "node8-rack3", "1")},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-2", "p1", "p2", "p3")},
			}},
		},
		"two gangs one after another, the second in the rack the first leaves room in": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack2", "zone-1", "rack-2"), node("node5-rack2", "zone-1", "rack-2"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{largePod("p1", "pg1"), largePod("p2", "pg1"), largePod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}, {
				gangs: []tasGang{gang("pg2", "rack", 2)}, pods: []tasPod{pod("p4", "pg2"), pod("p5", "pg2")},
				want: []tasWant{inDomain("rack", "rack-2", "p4", "p5")},
			}},
		},
		"two gangs at once, both in the one rack that holds either": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack2", "zone-1", "rack-2"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 2), gang("pg2", "rack", 3)},
				pods:  []tasPod{largePod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2"), pod("p5", "pg2")},
				want:  []tasWant{inDomain("rack", "rack-1", "p1", "p2"), inDomain("rack", "rack-1", "p3", "p4", "p5")},
			}},
		},
		"a gang in a rack, then a gang in a zone, each in the one domain that holds it": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack2", "zone-1", "rack-2"),
				node("node4-zone2", "zone-2", "rack-3"), node("node5-zone2", "zone-2", "rack-3"), node("node6-zone2", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{largePod("p1", "pg1"), largePod("p2", "pg1"), largePod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-3", "p1", "p2", "p3")},
			}, {
				gangs: []tasGang{gang("pg2", "zone", 3)}, pods: []tasPod{largePod("p4", "pg2"), largePod("p5", "pg2"), largePod("p6", "pg2")},
				want: []tasWant{inDomain("zone", "zone-1", "p4", "p5", "p6")},
			}},
		},
		"a second gang stays pending whole when the first took its room": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1")},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}, {
				gangs: []tasGang{gang("pg2", "rack", 2)}, pods: []tasPod{pod("p4", "pg2"), pod("p5", "pg2")},
				want: []tasWant{pending("no rack has room for 2 pods of PodGroup {ns}/pg2 (cpu 1 each); the closest, rack {c}rack-1, has room for 1", "p4", "p5")},
			}},
		},
		"gang with more pods than minMember lands whole in one rack": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"),
				node("node3-rack2", "zone-1", "rack-2"), node("node4-rack2", "zone-1", "rack-2"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 2)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inOneDomain("rack", "p1", "p2", "p3")},
			}},
		},
		"pods created after the gang was placed join its rack, and wait there once it is full": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack2", "zone-1", "rack-2"), node("node5-rack2", "zone-1", "rack-2"), node("node6-rack3", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-2", "p1", "p2", "p3")},
			}, {
				pods: []tasPod{pod("p4", "pg1")},
				want: []tasWant{inDomain("rack", "rack-2", "p1", "p2", "p3", "p4")},
			}, {
				pods: []tasPod{pod("p5", "pg1")},
				want: []tasWant{
					inDomain("rack", "rack-2", "p1", "p2", "p3", "p4"),
					pending("PodGroup {ns}/pg1 is admitted in "+e2eRackLabel+"={c}rack-2; this extra member waits for room", "p5"),
				},
			}},
		},
		"gang stays pending while pods of its own priority hold its rack's room": {
			nodes:   []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1")},
			running: []tasPod{running("existing1", "node2-rack1", "2")},
			steps: []tasStep{{
				gangs: []tasGang{gang("pg1", "rack", 3)}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{
					pending("no rack has room for 3 pods of PodGroup {ns}/pg1 (cpu 1 each); the closest, rack {c}rack-1, has room for 2", "p1", "p2", "p3"),
					inDomain("rack", "rack-1", "existing1"),
				},
			}},
		},

		// Groups of minMember 1: their pods are no gang, but share one rack (or zone).
		"group of minMember 1 lands in the only rack": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}},
		},
		"group of minMember 1 lands whole in one of the racks that hold it": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"),
				node("node3-rack2", "zone-1", "rack-2"), node("node4-rack2", "zone-1", "rack-2"),
				node("node5-zone2", "zone-2", "rack-3"), node("node6-zone2", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inOneDomain("rack", "p1", "p2", "p3")},
			}},
		},
		"group of minMember 1 fills one rack, and its last pod waits rather than go to another": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack2", "zone-1", "rack-2")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{someIn(2, "rack", "", "PodGroup {ns}/pg1 is … in "+e2eRackLabel+"={c}rack-… extra member", "p1", "p2", "p3")},
			}},
		},
		"group of minMember 1 stays pending when none of its pods fits a node": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack2", "zone-1", "rack-2")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{unfittable("p1", "pg1"), unfittable("p2", "pg1")},
				want: []tasWant{pending("no rack has room for 1 pod of PodGroup {ns}/pg1 (cpu 3 each)", "p1", "p2")},
			}},
		},
		"group of minMember 1 binds the pod that fits, and the one that fits no node waits": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack2", "zone-1", "rack-2")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{unfittable("p1", "pg1"), pod("p2", "pg1")},
				want: []tasWant{inOneDomain("rack", "p2"), pending("PodGroup {ns}/pg1 is … in "+e2eRackLabel+"={c}rack-… extra member", "p1")},
			}},
		},
		"group of minMember 1 lands in the tightest rack": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"),
				node("node3-rack2", "zone-2", "rack-2"), node("node4-rack2", "zone-2", "rack-2"), node("node5-rack2", "zone-2", "rack-2"),
			},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3")},
			}},
		},
		"group of minMember 1 lands in the rack running pods leave tightest": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack2", "zone-2", "rack-2"), node("node5-rack2", "zone-2", "rack-2"), node("node6-rack2", "zone-2", "rack-2"),
				node("node7-rack3", "zone-2", "rack-3"), node("node8-rack3", "zone-2", "rack-3"), node("node9-rack3", "zone-2", "rack-3"),
				node("node10-rack3", "zone-2", "rack-3"),
			},
			running: []tasPod{running("existing1", "node1-rack1", "1"), running("existing2", "node5-rack2", "1"), running("existing3", "node6-rack2", "1")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{inDomain("rack", "rack-2", "p1", "p2", "p3")},
			}},
		},
		"group of minMember 1 keeps the rack its first pod chose, though it cannot hold the pods created later": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack1", "zone-1", "rack-1"), node("node5-rack2", "zone-1", "rack-2"),
			},
			running: []tasPod{running("existing1", "node1-rack1", "2")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1")},
				want: []tasWant{inDomain("rack", "rack-2", "p1")},
			}, {
				pods: []tasPod{pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{someIn(2, "rack", "rack-2", "PodGroup {ns}/pg1 is admitted in "+e2eRackLabel+"={c}rack-2; this extra member waits for room", "p1", "p2", "p3")},
			}},
		},
		"two groups of minMember 1 at once, the second in the rack the first leaves room in": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1"),
				node("node4-rack2", "zone-1", "rack-2"),
			},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack"), basic("pg2", "rack")},
				pods:  []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")},
				want:  []tasWant{inDomain("rack", "rack-2", "p1", "p2"), inDomain("rack", "rack-1", "p3", "p4")},
			}},
		},
		"two groups of minMember 1 share the only rack": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack1", "zone-1", "rack-1")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack"), basic("pg2", "rack")},
				pods:  []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2"), pod("p5", "pg2")},
				want:  []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3", "p4", "p5")},
			}},
		},
		"a group of minMember 1 in a rack and one in a zone, at once": {
			nodes: []tasNode{
				node("node1-rack1", "zone-1", "rack-1"), node("node2-zone2", "zone-2", "rack-2"), node("node3-zone2", "zone-2", "rack-2"),
				node("node4-zone2", "zone-2", "rack-3"), node("node5-zone2", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack"), basic("pg2", "zone")},
				pods:  []tasPod{pod("p1", "pg1"), pod("p2", "pg1"), largePod("p3", "pg2"), largePod("p4", "pg2"), largePod("p5", "pg2")},
				want:  []tasWant{inDomain("rack", "rack-1", "p1", "p2"), inDomain("zone", "zone-2", "p3", "p4", "p5")},
			}},
		},
		"a group of minMember 1 keeps its rack for pods created later, and the next group goes to another": {
			nodes: []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack1", "zone-1", "rack-1"), node("node3-rack2", "zone-1", "rack-2")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1")},
				want: []tasWant{inDomain("rack", "rack-2", "p1")},
			}, {
				pods: []tasPod{pod("p2", "pg1"), pod("p3", "pg1")},
				want: []tasWant{someIn(2, "rack", "rack-2", "PodGroup {ns}/pg1 is admitted in "+e2eRackLabel+"={c}rack-2; this extra member waits for room", "p1", "p2", "p3")},
			}, {
				gangs: []tasGang{basic("pg2", "rack")}, pods: []tasPod{pod("p4", "pg2"), pod("p5", "pg2"), pod("p6", "pg2")},
				want: []tasWant{inDomain("rack", "rack-1", "p4", "p5", "p6")},
			}},
		},
		"a later pod of a group of minMember 1 waits in the group's rack, and binds there once room is freed": {
			nodes:   []tasNode{node("node1-rack1", "zone-1", "rack-1"), node("node2-rack2", "zone-1", "rack-2")},
			running: []tasPod{running("existing1", "node1-rack1", "1")},
			steps: []tasStep{{
				gangs: []tasGang{basic("pg1", "rack")}, pods: []tasPod{pod("p1", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1")},
			}, {
				pods: []tasPod{pod("p2", "pg1")},
				want: []tasWant{inDomain("rack", "rack-1", "p1"), pending("PodGroup {ns}/pg1 is admitted in "+e2eRackLabel+"={c}rack-1; this extra member waits for room", "p2")},
			}, {
				deletePods: []string{"existing1"},
				want:       []tasWant{inDomain("rack", "rack-1", "p1", "p2")},
			}},
		},

		// Nested: one gang of parts (GroupSets), for Kubernetes' composite pod groups.
		"gang of parts without levels of their own lands in the one rack that holds them all": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r1", "zone-1", "rack-1"),
				node("node3-z1-r2", "zone-1", "rack-2"), node("node4-z1-r2", "zone-1", "rack-2"),
			},
			running: []tasPod{running("existing", "node4-z1-r2", "2")},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "rack", free: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg1"), member("p3", "cpg", "pg2"), member("p4", "cpg", "pg2")},
				want:      []tasWant{inDomain("rack", "rack-1", "p1", "p2", "p3", "p4")},
			}},
		},
		"a member already running pins the rack of its gang": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r1", "zone-1", "rack-1"),
				node("node3-z1-r2", "zone-1", "rack-2"), node("node4-z1-r2", "zone-1", "rack-2"),
			},
			running: []tasPod{{name: "existing", workload: "cpg", group: "pg1", node: "node4-z1-r2"}},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "rack", free: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg2"), member("p3", "cpg", "pg2")},
				want:      []tasWant{inDomain("rack", "rack-2", "existing", "p1", "p2", "p3")},
			}},
		},
		"gang of single-pod parts stays pending when no rack holds them all": {
			nodes:   []tasNode{node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r2", "zone-1", "rack-2")},
			running: []tasPod{running("existing1", "node1-z1-r1", "1"), running("existing2", "node2-z1-r2", "1")},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 2, required: "rack", free: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg2")},
				want:      []tasWant{pending("no rack has room for 2 pods of PodGroup {ns}/cpg-all (cpu 1 each); the closest, rack {c}rack-1, has room for 1", "p1", "p2")},
			}},
		},
		"gang in one zone, each part in one rack of it": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r2", "zone-1", "rack-2"),
				node("node3-z2-r1", "zone-2", "rack-1"), node("node4-z2-r1", "zone-2", "rack-1"),
			},
			running: []tasPod{running("existing-z2", "node3-z2-r1", "1")},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg1"), member("p3", "cpg", "pg2"), member("p4", "cpg", "pg2")},
				want: []tasWant{
					inDomain("zone", "zone-1", "p1", "p2", "p3", "p4"),
					inOneDomain("rack", "p1", "p2"), inOneDomain("rack", "p3", "p4"),
				},
			}},
		},
		"gang in one zone with one part in one rack of it, the other part anywhere in the zone": {
			nodes: []tasNode{
				// The part with a rack fits only on the tainted node, which only it tolerates.
				{name: "node1-z1-r1", zone: "zone-1", rack: "rack-1", taint: "e2e.workmap.dev/taint"},
				node("node2-z1-r2", "zone-1", "rack-2"), node("node3-z1-r3", "zone-1", "rack-3"),
				node("node4-z2-r1", "zone-2", "rack-1"), node("node5-z2-r2", "zone-2", "rack-2"),
			},
			running: []tasPod{
				running("existing-z2", "node5-z2-r2", "1"), // zone-2 has room for 3 of the gang's 4 pods
				running("existing-z1-r2", "node2-z1-r2", "1"), running("existing-z1-r3", "node3-z1-r3", "1"),
			},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg1"}, free: []string{"pg2"}}},
				pods: []tasPod{
					{name: "p1", workload: "cpg", group: "pg1", tolerate: "e2e.workmap.dev/taint"},
					{name: "p2", workload: "cpg", group: "pg1", tolerate: "e2e.workmap.dev/taint"},
					// They prefer a node of zone-2, which cannot hold the gang.
					{name: "p3", workload: "cpg", group: "pg2", prefer: "node4-z2-r1"},
					{name: "p4", workload: "cpg", group: "pg2", prefer: "node4-z2-r1"},
				},
				want: []tasWant{inDomain("zone", "zone-1", "p1", "p2", "p3", "p4"), inOneDomain("rack", "p1", "p2")},
			}},
		},
		// A member created bound has no part for workmap (parts are known of the pods it
		// groups): its part's rack is the tightest that holds the rest, which is its own here.
		"a member already running pins the zone, and each part lands in a rack of it": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r2", "zone-1", "rack-2"), node("node3-z1-r2", "zone-1", "rack-2"),
				node("node4-z2-r1", "zone-2", "rack-1"), node("node5-z2-r1", "zone-2", "rack-1"),
			},
			running: []tasPod{{name: "existing-z1", workload: "cpg", group: "pg1", node: "node1-z1-r1"}},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg2"), member("p3", "cpg", "pg2")},
				want: []tasWant{
					inDomain("zone", "zone-1", "existing-z1", "p1", "p2", "p3"),
					inDomain("rack", "rack-1", "existing-z1", "p1"), inDomain("rack", "rack-2", "p2", "p3"),
				},
			}},
		},
		"members already running in two zones: the gang that requires one zone stays pending": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r1", "zone-1", "rack-1"),
				node("node3-z2-r1", "zone-2", "rack-1"), node("node4-z2-r1", "zone-2", "rack-1"),
			},
			running: []tasPod{
				{name: "existing-z1", workload: "cpg", group: "pg1", node: "node1-z1-r1"},
				{name: "existing-z2", workload: "cpg", group: "pg2", node: "node3-z2-r1"},
			},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg2")},
				want:      []tasWant{pending("PodGroup {ns}/cpg-all needs one zone, and its members bound already are in 2: {c}zone-1, {c}zone-2", "p1", "p2")},
			}},
		},
		// Kubernetes' nodes: rack values repeat across blocks; a part's rack is one of its block's.
		"three levels: gang in one zone, each sub-gang in one block of it, each part in one rack of that": {
			nodes: []tasNode{
				{name: "node1-z1-g1-r1", zone: "zone-1", block: "block-1", rack: "rack-1"},
				{name: "node2-z1-g1-r2", zone: "zone-1", block: "block-1", rack: "rack-2"},
				{name: "node3-z1-g2-r1", zone: "zone-1", block: "block-2", rack: "rack-1"},
				{name: "node4-z1-g2-r2", zone: "zone-1", block: "block-2", rack: "rack-2"},
				{name: "node5-z2-g1-r1", zone: "zone-2", block: "block-1", rack: "rack-1"},
				{name: "node6-z2-g1-r1", zone: "zone-2", block: "block-1", rack: "rack-1"},
			},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 8, required: "zone", outer: "block", nested: "rack", parts: []string{"pg1", "pg2", "pg3", "pg4"}}},
				pods: []tasPod{
					subMember("p1", "cpg", "1", "pg1"), subMember("p2", "cpg", "1", "pg1"), subMember("p3", "cpg", "1", "pg2"), subMember("p4", "cpg", "1", "pg2"),
					subMember("p5", "cpg", "2", "pg3"), subMember("p6", "cpg", "2", "pg3"), subMember("p7", "cpg", "2", "pg4"), subMember("p8", "cpg", "2", "pg4"),
				},
				want: []tasWant{
					inDomain("zone", "zone-1", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"),
					inOneDomain("block", "p1", "p2", "p3", "p4"), inOneDomain("block", "p5", "p6", "p7", "p8"),
					inOneDomain("rack", "p1", "p2"), inOneDomain("rack", "p3", "p4"), inOneDomain("rack", "p5", "p6"), inOneDomain("rack", "p7", "p8"),
				},
			}},
		},
		"three levels, the gang unconstrained: each sub-gang in one zone, each part in one rack of it": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r2", "zone-1", "rack-2"),
				node("node3-z2-r3", "zone-2", "rack-3"), node("node4-z2-r4", "zone-2", "rack-4"), node("node5-z2-r5", "zone-2", "rack-5"),
			},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 8, outer: "zone", nested: "rack", parts: []string{"pg1", "pg2", "pg3", "pg4"}}},
				pods: []tasPod{
					subMember("p1", "cpg", "1", "pg1"), subMember("p2", "cpg", "1", "pg1"), subMember("p3", "cpg", "1", "pg2"), subMember("p4", "cpg", "1", "pg2"),
					subMember("p5", "cpg", "2", "pg3"), subMember("p6", "cpg", "2", "pg3"), subMember("p7", "cpg", "2", "pg4"), subMember("p8", "cpg", "2", "pg4"),
				},
				want: []tasWant{
					inOneDomain("zone", "p1", "p2", "p3", "p4"), inOneDomain("zone", "p5", "p6", "p7", "p8"),
					inOneDomain("rack", "p1", "p2"), inOneDomain("rack", "p3", "p4"), inOneDomain("rack", "p5", "p6"), inOneDomain("rack", "p7", "p8"),
				},
			}},
		},
		// As above, the running member's sub-gang and part are found their block and rack by tight fit.
		"three levels: a member already running pins the zone, its sub-gang's block and its part's rack": {
			nodes: []tasNode{
				{name: "node1-z1-g1-r1", zone: "zone-1", block: "block-1", rack: "rack-1"},
				{name: "node2-z1-g1-r2", zone: "zone-1", block: "block-1", rack: "rack-2"},
				{name: "node3-z2-g2-r1", zone: "zone-2", block: "block-2", rack: "rack-1"},
				{name: "node4-z2-g2-r2", zone: "zone-2", block: "block-2", rack: "rack-2"},
				{name: "node5-z2-g3-r1", zone: "zone-2", block: "block-3", rack: "rack-1"},
				{name: "node6-z2-g3-r2", zone: "zone-2", block: "block-3", rack: "rack-2"},
			},
			running: []tasPod{{name: "existing-pg1", workload: "cpg", sub: "1", group: "pg1", node: "node4-z2-g2-r2"}},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 8, required: "zone", outer: "block", nested: "rack", parts: []string{"pg1", "pg2", "pg3", "pg4"}}},
				pods: []tasPod{
					subMember("p1", "cpg", "1", "pg1"), subMember("p2", "cpg", "1", "pg2"), subMember("p3", "cpg", "1", "pg2"),
					subMember("p4", "cpg", "2", "pg3"), subMember("p5", "cpg", "2", "pg3"), subMember("p6", "cpg", "2", "pg4"), subMember("p7", "cpg", "2", "pg4"),
				},
				want: []tasWant{
					inDomain("zone", "zone-2", "existing-pg1", "p1", "p2", "p3", "p4", "p5", "p6", "p7"),
					inDomain("block", "block-2", "existing-pg1", "p1", "p2", "p3"), inDomain("block", "block-3", "p4", "p5", "p6", "p7"),
					inDomain("rack", "rack-2", "existing-pg1", "p1"), inDomain("rack", "rack-1", "p2", "p3"),
				},
			}},
		},
		"gang in one zone, each part in one rack of it, the level between unconstrained": {
			nodes: []tasNode{node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r2", "zone-1", "rack-2"), node("node3-z2-r1", "zone-2", "rack-1")},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg1", "pg2"}}},
				pods:      []tasPod{member("p1", "cpg", "pg1"), member("p2", "cpg", "pg1"), member("p3", "cpg", "pg2"), member("p4", "cpg", "pg2")},
				want: []tasWant{
					inDomain("zone", "zone-1", "p1", "p2", "p3", "p4"),
					inOneDomain("rack", "p1", "p2"), inOneDomain("rack", "p3", "p4"),
				},
			}},
		},
		"two gangs under an unconstrained root, each in a zone, each part in one rack of it": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r2", "zone-1", "rack-2"),
				node("node3-z2-r3", "zone-2", "rack-3"), node("node4-z2-r4", "zone-2", "rack-4"), node("node5-z2-r5", "zone-2", "rack-5"),
			},
			steps: []tasStep{{
				workloads: []tasWorkload{
					{name: "sub1", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg1", "pg2"}},
					{name: "sub2", minMember: 4, required: "zone", nested: "rack", parts: []string{"pg3", "pg4"}},
				},
				pods: []tasPod{
					member("p1", "sub1", "pg1"), member("p2", "sub1", "pg1"), member("p3", "sub1", "pg2"), member("p4", "sub1", "pg2"),
					member("p5", "sub2", "pg3"), member("p6", "sub2", "pg3"), member("p7", "sub2", "pg4"), member("p8", "sub2", "pg4"),
				},
				want: []tasWant{
					inOneDomain("zone", "p1", "p2", "p3", "p4"), inOneDomain("zone", "p5", "p6", "p7", "p8"),
					inOneDomain("rack", "p1", "p2"), inOneDomain("rack", "p3", "p4"), inOneDomain("rack", "p5", "p6"), inOneDomain("rack", "p7", "p8"),
				},
			}},
		},
		"gang in one zone, each of its sub-gangs in one rack of it": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r1", "zone-1", "rack-1"),
				node("node3-z1-r2", "zone-1", "rack-2"), node("node4-z1-r2", "zone-1", "rack-2"),
				node("node5-z2-r3", "zone-2", "rack-3"), node("node6-z2-r3", "zone-2", "rack-3"),
			},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 8, required: "zone", nested: "rack", parts: []string{"sub1", "sub2"}}},
				pods: []tasPod{
					member("p1", "cpg", "sub1"), member("p2", "cpg", "sub1"), member("p3", "cpg", "sub1"), member("p4", "cpg", "sub1"),
					member("p5", "cpg", "sub2"), member("p6", "cpg", "sub2"), member("p7", "cpg", "sub2"), member("p8", "cpg", "sub2"),
				},
				want: []tasWant{
					inDomain("zone", "zone-1", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"),
					inOneDomain("rack", "p1", "p2", "p3", "p4"), inOneDomain("rack", "p5", "p6", "p7", "p8"),
				},
			}},
		},
		// As above, the running member's sub-gang is found its rack by tight fit.
		"a member already running pins the zone of its gang, and each sub-gang lands in a rack of it": {
			nodes: []tasNode{
				node("node1-z1-r1", "zone-1", "rack-1"), node("node2-z1-r1", "zone-1", "rack-1"),
				node("node3-z1-r2", "zone-1", "rack-2"), node("node4-z1-r2", "zone-1", "rack-2"),
				node("node5-z2-r1", "zone-2", "rack-1"), node("node6-z2-r1", "zone-2", "rack-1"),
				node("node7-z2-r2", "zone-2", "rack-2"), node("node8-z2-r2", "zone-2", "rack-2"),
			},
			running: []tasPod{{name: "existing-pg1", workload: "cpg", group: "sub1", node: "node5-z2-r1"}},
			steps: []tasStep{{
				workloads: []tasWorkload{{name: "cpg", minMember: 8, required: "zone", nested: "rack", parts: []string{"sub1", "sub2"}}},
				pods: []tasPod{
					member("p1", "cpg", "sub1"), member("p2", "cpg", "sub1"), member("p3", "cpg", "sub1"),
					member("p4", "cpg", "sub2"), member("p5", "cpg", "sub2"), member("p6", "cpg", "sub2"), member("p7", "cpg", "sub2"),
				},
				want: []tasWant{
					inDomain("zone", "zone-2", "p1", "p2", "p3", "p4", "p5", "p6", "p7"),
					inDomain("rack", "rack-1", "existing-pg1", "p1", "p2", "p3"), inDomain("rack", "rack-2", "p4", "p5", "p6", "p7"),
				},
			}},
		},
	}

	names := slices.Sorted(maps.Keys(tests))
	var nodes []harness.Node
	for i, name := range names {
		id := fmt.Sprintf("c%02d", i+1)
		for _, n := range tests[name].nodes {
			nodes = append(nodes, tasHarnessNode(id, n))
		}
	}
	c := harness.Start(t, harness.Options{NoScheduler: true, CustomKinds: []harness.CustomKind{groupSetKind}, Nodes: nodes})
	c.StartWorkmapScheduler(harness.SchedulerOptions{
		PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: 1,
		TopologyLevels: []harness.TopologyLevel{{Name: "zone", NodeLabel: e2eZoneLabel}, {Name: "block", NodeLabel: e2eBlockLabel}, {Name: "rack", NodeLabel: e2eRackLabel}},
	})
	applyGroupSetDefinition(t, c)
	require.Eventually(t, func() bool {
		list, err := c.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, n := range list.Items {
			if !nodeReady(&n) {
				return false
			}
		}
		return len(list.Items) == len(nodes)
	}, 60*time.Second, 100*time.Millisecond, "every node ready, untainted by the node controller")

	for i, name := range names {
		id := fmt.Sprintf("c%02d", i+1)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runTASCase(t, c, id, tests[name])
		})
	}
}

// tasHarnessNode is a case's node as the harness makes it: named and in domains prefixed by
// the case, labelled with it.
func tasHarnessNode(id string, n tasNode) harness.Node {
	labels := map[string]string{e2eCaseLabel: id}
	for label, value := range map[string]string{e2eZoneLabel: n.zone, e2eBlockLabel: n.block, e2eRackLabel: n.rack} {
		if value != "" {
			labels[label] = id + "-" + value
		}
	}
	hn := harness.Node{Name: id + "-" + n.name, CPU: "2", Labels: labels}
	if n.taint != "" {
		hn.Taints = []corev1.Taint{{Key: n.taint, Effect: corev1.TaintEffectNoSchedule}}
	}
	return hn
}

// applyGroupSetDefinition applies groupSetDefinition and waits until workmap-scheduler says it
// is in effect.
func applyGroupSetDefinition(t *testing.T, c *harness.Cluster) {
	t.Helper()
	ctx := context.Background()
	docs, err := manifest.Read([]byte(groupSetDefinition), "groupset-definition.yaml")
	require.NoError(t, err)
	_, err = c.Dynamic.Resource(workloadDefinitions).Create(ctx, docs[0].Object, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		def, err := c.Dynamic.Resource(workloadDefinitions).Get(ctx, docs[0].Object.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		conditions, _, _ := unstructured.NestedSlice(def.Object, "status", "conditions")
		for _, cond := range conditions {
			if m, _ := cond.(map[string]any); m["type"] == "Accepted" {
				require.Equal(t, "True", m["status"], "the GroupSet definition: %v", m["message"])
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "workmap-scheduler accepts the GroupSet definition")
}

// runTASCase runs one case in its own namespace, on its own nodes.
func runTASCase(t *testing.T, c *harness.Cluster, id string, tc tasCase) {
	ctx := context.Background()
	ns := "tas-" + id
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	g := c.NewGangs(t, ns)
	nodeLabels := map[string]map[string]string{}
	for _, n := range tc.nodes {
		hn := tasHarnessNode(id, n)
		nodeLabels[hn.Name] = hn.Labels
	}
	expand := strings.NewReplacer("{ns}", ns, "{c}", id+"-").Replace
	logGangEventsOnFailure(t, c, ns)

	// The pods of each GroupSet's part, over the whole case: the GroupSet lists them.
	partPods := map[[2]string]int64{}
	for _, p := range tc.running {
		partPods[[2]string{p.workload, p.group}]++
	}
	for _, s := range tc.steps {
		for _, p := range s.pods {
			partPods[[2]string{p.workload, p.group}]++
		}
	}
	owners := map[string]metav1.OwnerReference{}
	createWorkload := func(w tasWorkload) {
		t.Helper()
		list := func(parts []string) []any {
			out := []any{}
			for _, part := range parts {
				out = append(out, map[string]any{"name": part, "pods": partPods[[2]string{w.name, part}], "template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "c", "image": "i", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}},
				}}})
			}
			return out
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "e2e.workmap.dev/v1", "kind": "GroupSet",
			"metadata": map[string]any{"name": w.name, "namespace": ns},
			"spec":     map[string]any{"minMember": w.minMember, "outer": w.outer, "nested": w.nested, "parts": list(w.parts), "free": list(w.free)},
		}}
		if w.required != "" {
			obj.SetAnnotations(map[string]string{grouper.TopologyRequiredAnnotation: w.required})
		}
		created, err := c.Dynamic.Resource(groupSets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
		owners[w.name] = metav1.OwnerReference{APIVersion: "e2e.workmap.dev/v1", Kind: "GroupSet", Name: w.name, UID: created.GetUID(), Controller: ptr.To(true)}
	}
	createPod := func(p tasPod) {
		t.Helper()
		cpu := p.cpu
		if cpu == "" {
			cpu = "1"
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns, Labels: map[string]string{}},
			Spec: corev1.PodSpec{
				SchedulerName: harness.SchedulerName, TerminationGracePeriodSeconds: ptr.To[int64](0),
				NodeSelector: map[string]string{e2eCaseLabel: id},
				Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				}}},
			},
		}
		switch {
		case p.workload != "":
			pod.Labels[tasPartLabel] = p.group
			if p.sub != "" {
				pod.Labels[tasSubLabel] = p.sub
			}
			if p.node != "" {
				pod.Labels[v1alpha1.PodGroupLabel] = p.workload + "-all" // a member bound already
			}
			if owner, ok := owners[p.workload]; ok {
				pod.OwnerReferences = []metav1.OwnerReference{owner}
			}
		case p.group != "":
			pod.Labels[v1alpha1.PodGroupLabel] = p.group
		}
		if p.node != "" {
			pod.Spec.NodeName = id + "-" + p.node
		}
		if p.tolerate != "" {
			pod.Spec.Tolerations = []corev1.Toleration{{Key: p.tolerate, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}
		if p.prefer != "" {
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100, Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{id + "-" + p.prefer}}}},
			}}}}
		}
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	for _, p := range tc.running {
		createPod(p)
	}
	for i, step := range tc.steps {
		t.Logf("step %d", i+1)
		for _, name := range step.deletePods {
			require.NoError(t, c.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
			require.Eventually(t, func() bool {
				_, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}, 30*time.Second, 100*time.Millisecond, "pod %s deleted", name)
		}
		for _, gang := range step.gangs {
			pg := &v1alpha1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Name: gang.name, Namespace: ns, Annotations: map[string]string{grouper.TopologyRequiredAnnotation: gang.required}},
				Spec:       v1alpha1.PodGroupSpec{MinMember: gang.minMember},
			}
			require.NoError(t, g.Client().Create(ctx, pg))
		}
		for _, w := range step.workloads {
			createWorkload(w)
		}
		for _, p := range step.pods {
			createPod(p)
		}
		checkTASWants(t, c, g, ns, nodeLabels, id, step.want, expand)
	}
}

// checkTASWants waits until the pods each want binds hold a node, watches the pods that must
// stay pending for tasSettle, then checks the domains of the bound pods and why the others wait.
func checkTASWants(t *testing.T, c *harness.Cluster, g *harness.Gangs, ns string, nodeLabels map[string]map[string]string, id string, wants []tasWant, expand func(string) string) {
	t.Helper()
	boundOf := func(pods map[string]corev1.Pod, w tasWant) (n int) {
		for _, name := range w.pods {
			if pods[name].Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	list := func() map[string]corev1.Pod {
		out := map[string]corev1.Pod{}
		for _, p := range g.Pods("") {
			out[p.Name] = p
		}
		return out
	}
	require.Eventually(t, func() bool {
		pods := list()
		for _, w := range wants {
			if boundOf(pods, w) < w.bound {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "pods bound as %+v", wants)
	if slices.ContainsFunc(wants, func(w tasWant) bool { return w.bound < len(w.pods) }) {
		for end := time.Now().Add(tasSettle); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			pods := list()
			for _, w := range wants {
				require.Equal(t, w.bound, boundOf(pods, w), "bound of %v", w.pods)
			}
		}
	}
	pods := list()
	for _, w := range wants {
		require.Equal(t, w.bound, boundOf(pods, w), "bound of %v", w.pods)
		if w.level == "" {
			continue
		}
		label := tasLevels[w.level]
		domains := map[string][]string{}
		for _, name := range w.pods {
			if node := pods[name].Spec.NodeName; node != "" {
				domains[nodeLabels[node][label]] = append(domains[nodeLabels[node][label]], name)
			}
		}
		require.Len(t, domains, 1, "pods %v in one %s: %v", w.pods, w.level, domains)
		if w.domain != "" {
			require.Contains(t, domains, id+"-"+w.domain, "pods %v in %s %s", w.pods, w.level, w.domain)
		}
	}
	for _, w := range wants {
		if w.bound == len(w.pods) {
			continue
		}
		require.NotEmpty(t, w.why, "pods that wait say why")
		why := expand(w.why)
		require.Eventually(t, func() bool {
			events, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
			require.NoError(t, err)
			for _, e := range events.Items {
				if slices.Contains(w.pods, e.InvolvedObject.Name) && pods[e.InvolvedObject.Name].Spec.NodeName == "" && containsInOrder(e.Message, strings.Split(why, "…")) {
					return true
				}
			}
			return false
		}, 30*time.Second, 200*time.Millisecond, "an event on a pending pod of %v says %q", w.pods, why)
	}
}

// containsInOrder says whether s holds each of parts, one after another.
func containsInOrder(s string, parts []string) bool {
	for _, part := range parts {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

// nodeReady says whether a node is Ready and carries no taint of the node controller's.
func nodeReady(n *corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
