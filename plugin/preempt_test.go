package plugin

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/grouper"
)

// prioPod is a pod asking for gpus GPUs at a priority.
func prioPod(name string, gpus int64, priority int32) *corev1.Pod {
	p := gpuPod(name, gpus)
	p.Spec.Priority = ptr.To(priority)
	return p
}

// TestGangPreemption: a gang that fits nowhere preempts lower-priority pods only when, with
// them gone, the whole gang fits; a victim in a gang takes its whole gang; of the victim sets
// that work, the lowest priority and then the fewest pods is taken.
func TestGangPreemption(t *testing.T) {
	type running struct {
		name, node string
		gpus       int64
		priority   int32
		gang       string // "" for a pod in no gang
	}
	tests := map[string]struct {
		nodes     []*corev1.Node
		running   []running
		gang      []*corev1.Pod // the preemptor gang
		minMember int32         // 0: all of it
		required  string
		// guardedAllowed, when set, is a PodDisruptionBudget over the running pods named
		// guarded-…, allowing that many to go.
		guardedAllowed *int32
		// wantVictims are the pods deleted (nil: no preemption, the gang backed off).
		wantVictims []string
		// wantNodes are the nodes the gang's pods are nominated to (nil: any).
		wantNodes []string
		// wantResult is the preemptions_total result counted ("" for preempted, or
		// would_not_fit when nobody is preempted).
		wantResult string
	}{
		"a victim in a gang takes its whole gang, not the one pod that would make room": {
			nodes:       []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running:     []running{{"low-0", "n1", 8, 0, "low"}, {"low-1", "n2", 8, 0, "low"}},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100)},
			wantVictims: []string{"low-0", "low-1"},
		},
		"pods in no gang are taken before a gang of more pods at the same priority": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8), gpuNode("n3", "z/b/r1", 8)},
			running: []running{
				{"lone", "n1", 8, 0, ""},
				{"low-0", "n2", 8, 0, "low"}, {"low-1", "n3", 8, 0, "low"},
			},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100)},
			wantVictims: []string{"lone"},
			wantNodes:   []string{"n1"},
		},
		"the lowest priority is taken first, though it is more pods": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running: []running{
				{"mid", "n1", 8, 50, ""},
				{"low-0", "n2", 4, 0, "low"}, {"low-1", "n2", 4, 0, "low"},
			},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100)},
			wantVictims: []string{"low-0", "low-1"},
			wantNodes:   []string{"n2"},
		},
		"only as many victims as the whole gang needs, the least important": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8), gpuNode("n3", "z/b/r1", 8)},
			running: []running{
				{"a", "n1", 8, 0, ""}, {"b", "n2", 8, 0, ""}, {"c", "n3", 8, 10, ""},
			},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100)},
			wantVictims: []string{"a", "b"},
		},
		"never in vain: when the gang would not fit even with every lower-priority pod gone, nobody is preempted": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running: []running{
				{"low", "n1", 8, 0, ""}, {"urgent", "n2", 8, 200, ""},
			},
			gang: []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100)},
		},
		"a gang is as important as its least important pod: a victim whole though one pod outranks the preemptor": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running: []running{
				{"mixed-0", "n1", 8, 0, "mixed"}, {"mixed-1", "n2", 8, 200, "mixed"},
			},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100)},
			wantVictims: []string{"mixed-0", "mixed-1"},
		},
		// Kubernetes' workload-aware preemption cases, as gangs.
		"a gang of more pods than minMember preempts for as many as fit without taking higher-priority pods": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8), gpuNode("n3", "z/b/r1", 8), gpuNode("n4", "z/b/r1", 8)},
			running: []running{
				{"p1", "n1", 8, 10, ""}, {"p2", "n2", 8, 10, ""}, {"p3", "n3", 8, 200, ""}, {"p4", "n4", 8, 200, ""},
			},
			gang:        []*corev1.Pod{prioPod("p-a", 8, 100), prioPod("p-b", 8, 100), prioPod("p-c", 8, 100)},
			minMember:   1,
			wantVictims: []string{"p1", "p2"},
			wantNodes:   []string{"n1", "n2"},
		},
		"a lower-priority victim gang is not spared when the gang needs its room": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8), gpuNode("n3", "z/b/r1", 8)},
			running: []running{
				{"v1", "n1", 8, 50, "victim"}, {"v2", "n2", 8, 50, "victim"}, {"v3", "n3", 8, 10, ""},
			},
			gang:        []*corev1.Pod{prioPod("p-a", 8, 100), prioPod("p-b", 8, 100), prioPod("p-c", 8, 100)},
			wantVictims: []string{"v1", "v2", "v3"},
		},
		"a victim gang is taken, a higher-priority gang is not, and the gang gets what room that makes": {
			nodes: []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8), gpuNode("n3", "z/b/r1", 8), gpuNode("n4", "z/b/r1", 8)},
			running: []running{
				{"v1", "n1", 8, 50, "victim"}, {"v2", "n2", 8, 50, "victim"},
				{"v3", "n3", 8, 200, "victim2"}, {"v4", "n4", 8, 200, "victim2"},
			},
			gang:        []*corev1.Pod{prioPod("p-a", 8, 100), prioPod("p-b", 8, 100), prioPod("p-c", 8, 100)},
			minMember:   1,
			wantVictims: []string{"v1", "v2"},
			wantNodes:   []string{"n1", "n2"},
		},
		"a victim whose label the gang's anti-affinity rejects is taken, though it holds no GPU": {
			nodes:       []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running:     []running{{"affine-a", "n1", 0, 0, ""}, {"b", "n2", 8, 50, ""}},
			gang:        []*corev1.Pod{avoiding(prioPod("high-0", 8, 100), "affine")},
			wantVictims: []string{"affine-a"},
			wantNodes:   []string{"n1"},
		},
		"a PodDisruptionBudget is respected where another victim set exists": {
			nodes:          []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running:        []running{{"a", "n1", 8, 0, ""}, {"guarded-b", "n2", 8, 0, ""}},
			gang:           []*corev1.Pod{prioPod("high-0", 8, 100)},
			guardedAllowed: ptr.To[int32](0),
			wantVictims:    []string{"a"},
		},
		"without the budget the same cluster gives up the other pod (the case above discriminates)": {
			nodes:       []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running:     []running{{"a", "n1", 8, 0, ""}, {"guarded-b", "n2", 8, 0, ""}},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100)},
			wantVictims: []string{"guarded-b"},
		},
		"a PodDisruptionBudget yields when no other victim set exists": {
			nodes:          []*corev1.Node{gpuNode("n1", "z/b/r1", 8)},
			running:        []running{{"guarded-a", "n1", 8, 0, ""}},
			gang:           []*corev1.Pod{prioPod("high-0", 8, 100)},
			guardedAllowed: ptr.To[int32](0),
			wantVictims:    []string{"guarded-a"},
		},
		"a gang of the preemptor's priority is no victim": {
			nodes:      []*corev1.Node{gpuNode("n1", "z/b/r1", 8)},
			running:    []running{{"peer-0", "n1", 8, 100, "peer"}},
			gang:       []*corev1.Pod{prioPod("high-0", 8, 100)},
			wantResult: preemptionNoVictims,
		},
		"a host port a lower-priority pod holds is freed, so that each pod of the gang, asking for it, has a node": {
			nodes:       []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running:     []running{{"port-holder", "n1", 0, 10, ""}},
			gang:        []*corev1.Pod{withHostPort(prioPod("high-0", 4, 100), 8080), withHostPort(prioPod("high-1", 4, 100), 8080)},
			wantVictims: []string{"port-holder"},
		},
		"a topology spread constraint: the pod that skews it is taken, not the lower-priority pod that does not": {
			nodes:   []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)},
			running: []running{{"spread-a", "n1", 1, 10, ""}, {"spread-b", "n2", 1, 5, ""}},
			// At most 2 pods labelled app=spread on n1 (the minimum of 10 domains makes the
			// global minimum 0), where both pods of the gang must go.
			gang:        []*corev1.Pod{spreadOnN1(prioPod("high-0", 1, 100)), spreadOnN1(prioPod("high-1", 1, 100))},
			wantVictims: []string{"spread-a"},
			wantNodes:   []string{"n1", "n1"},
		},
		"a required rack: the one rack whose pods are all of lower priority": {
			nodes: []*corev1.Node{
				gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8),
				gpuNode("n3", "z/b/r2", 8), gpuNode("n4", "z/b/r2", 8),
			},
			running: []running{
				{"low-1", "n1", 8, 10, ""}, {"low-2", "n2", 8, 10, ""},
				{"urgent-1", "n3", 8, 200, ""}, {"urgent-2", "n4", 8, 200, ""},
			},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100)},
			required:    "rack",
			wantVictims: []string{"low-1", "low-2"},
			wantNodes:   []string{"n1", "n2"},
		},
		"never in vain with a required rack: no rack holds the gang even with its victims gone, nobody is preempted": {
			nodes: []*corev1.Node{
				gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8),
				gpuNode("n3", "z/b/r2", 8), gpuNode("n4", "z/b/r2", 8),
			},
			running: []running{
				{"low-1", "n1", 8, 10, ""}, {"urgent-1", "n2", 8, 200, ""},
				{"low-2", "n3", 8, 10, ""}, {"urgent-2", "n4", 8, 200, ""},
			},
			gang:     []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100)},
			required: "rack",
		},
		"a required rack: the rack where the fewest victims free room for the whole gang": {
			nodes: []*corev1.Node{
				gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8),
				gpuNode("n3", "z/b/r2", 8), gpuNode("n4", "z/b/r2", 8),
			},
			running: []running{
				{"r1-a", "n1", 8, 0, ""}, {"r1-b", "n2", 8, 0, ""},
				{"r2-a", "n3", 8, 0, ""},
			},
			gang:        []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100)},
			required:    "rack",
			wantVictims: []string{"r2-a"},
			wantNodes:   []string{"n3", "n4"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var bound []*corev1.Pod
			gangs := map[string][]*corev1.Pod{}
			for _, r := range tc.running {
				p := on(prioPod(r.name, r.gpus, r.priority), r.node)
				switch app, _, _ := strings.Cut(r.name, "-"); app {
				case "guarded", "affine", "spread":
					p.Labels = map[string]string{"app": app}
				case "port":
					p = withHostPort(p, 8080)
				}
				bound = append(bound, p)
				if r.gang != "" {
					gangs[r.gang] = append(gangs[r.gang], p)
				}
			}
			c := newTopologyCluster(t, testLevels, tc.nodes, bound)
			if tc.guardedAllowed != nil {
				c.createPDB(&policy.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "ns"},
					Spec:       policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
					Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: *tc.guardedAllowed},
				})
			}
			c.create(append(slices.Clone(bound), tc.gang...)...)
			for name, members := range gangs {
				c.addGang(name, int32(len(members)), "", "", members...)
			}
			c.addGang("high", cmp.Or(tc.minMember, int32(len(tc.gang))), tc.required, "", tc.gang...)

			result, status := c.gang.PostFilter(ctx, framework.NewCycleState(), tc.gang[0], nil)
			wantResult := tc.wantResult
			switch {
			case wantResult != "":
			case tc.wantVictims == nil:
				wantResult = preemptionWouldNotFit
			default:
				wantResult = preemptionPreempted
			}
			for _, r := range []string{preemptionPreempted, preemptionWouldNotFit, preemptionNoVictims} {
				want := 0.0
				if r == wantResult {
					want = 1
				}
				require.Equal(t, want, testutil.ToFloat64(c.gang.metrics.Preemptions.WithLabelValues(r)), "preemptions_total{result=%q}", r)
			}
			var evaluations dto.Metric
			require.NoError(t, c.gang.metrics.EvaluationSeconds.Write(&evaluations))
			require.EqualValues(t, 1, evaluations.GetHistogram().GetSampleCount(), "preemption_evaluation_duration_seconds: one look for victims")
			if tc.wantVictims == nil {
				require.NotEqual(t, fwk.Success, status.Code(), "no preemption: %v", status)
				group, _ := c.members.Group("ns/high")
				require.True(t, c.clock.Now().Before(group.BackoffUntil), "the gang is backed off")
				require.Empty(t, deletedPods(t, c), "nobody is preempted")
				return
			}
			require.True(t, status.IsSuccess(), "%v", status)
			require.NotNil(t, result.NominatingInfo)
			var victims dto.Metric
			require.NoError(t, c.gang.metrics.VictimPods.Write(&victims))
			require.Equal(t, float64(len(tc.wantVictims)), victims.GetHistogram().GetSampleSum(), "preemption_victim_pods")
			require.Eventually(t, func() bool { return len(deletedPods(t, c)) == len(tc.wantVictims) }, 5*time.Second, 10*time.Millisecond)
			require.ElementsMatch(t, tc.wantVictims, deletedPods(t, c))
			nominated := []string{result.NominatingInfo.NominatedNodeName}
			for _, p := range tc.gang[1:] {
				for _, node := range tc.nodes {
					for _, n := range c.queue.NominatedPodsForNode(node.Name) {
						if n.GetPod().UID == p.UID {
							nominated = append(nominated, node.Name)
						}
					}
				}
			}
			if tc.wantNodes == nil {
				require.Len(t, nominated, len(tc.gang), "every pod of the gang is nominated")
			}
			// While its victims go, a failed attempt of a gang's pod keeps it nominated.
			for i, p := range tc.gang[1:] {
				if i+1 >= len(nominated) {
					break
				}
				again, status := c.gang.PostFilter(ctx, framework.NewCycleState(), p, nil)
				require.Contains(t, status.Message(), "waits for the")
				require.NotNil(t, again, "pod %s: its nomination is renewed", p.Name)
				require.Equal(t, fwk.ModeOverride, again.NominatingInfo.Mode())
				require.Contains(t, nominated, again.NominatingInfo.NominatedNodeName)
			}
			if tc.wantNodes != nil {
				slices.Sort(nominated)
				require.Equal(t, tc.wantNodes, nominated)
			}
			events := drain(c.events.Events)
			require.Contains(t, events, "Normal Preempting PodGroup ns/high (priority 100) preempts")
			require.Equal(t, len(tc.wantVictims), strings.Count(events, "Normal Preempted Preempted by PodGroup ns/high (priority 100), with the"), "an event on each victim: %s", events)
			victimGangs := sets.New[string]()
			for _, r := range tc.running {
				if r.gang != "" && slices.Contains(tc.wantVictims, r.name) {
					victimGangs.Insert(r.gang)
				}
			}
			require.Equal(t, victimGangs.Len(), strings.Count(events, "Normal Preempted Preempted by PodGroup ns/high (priority 100) to fit it whole"), "an event on each victim gang's PodGroup: %s", events)
			var marked []string
			for _, a := range c.client.Actions() {
				if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
					patch := string(a.(clienttesting.PatchAction).GetPatch())
					require.Contains(t, patch, `"type":"DisruptionTarget"`)
					require.Contains(t, patch, `"reason":"PreemptionByScheduler"`)
					marked = append(marked, a.(clienttesting.PatchAction).GetName())
				}
			}
			require.ElementsMatch(t, tc.wantVictims, marked, "each victim is marked DisruptionTarget before it is deleted")
		})
	}
}

// TestGangPreemptionLeavesNominatedRoom: room nominated to a pod of the gang's priority or
// higher (by an earlier preemption) is not the gang's: counting it would preempt in vain.
func TestGangPreemptionLeavesNominatedRoom(t *testing.T) {
	ctx := context.Background()
	low := on(prioPod("low", 8, 0), "n1")
	c := newTopologyCluster(t, testLevels, []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8)}, []*corev1.Pod{low})
	peer := prioPod("peer", 8, 100)
	gang := []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100)}
	c.create(append([]*corev1.Pod{low, peer}, gang...)...)
	// The peer waits in the scheduling queue, nominated to n2.
	c.queue.Add(ctx, peer)
	info, err := framework.NewPodInfo(peer)
	require.NoError(t, err)
	c.queue.AddNominatedPod(klog.Background(), info, &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: "n2"})
	require.Len(t, c.queue.NominatedPodsForNode("n2"), 1)
	c.addGang("high", 2, "", "", gang...)

	_, status := c.gang.PostFilter(ctx, framework.NewCycleState(), gang[0], nil)
	require.False(t, status.IsSuccess(), "%v", status)
	require.Empty(t, deletedPods(t, c), "n2 is the peer's: taking low would not make room for both pods")
	require.Equal(t, 1.0, testutil.ToFloat64(c.gang.metrics.Preemptions.WithLabelValues(preemptionWouldNotFit)))
}

// TestGangPreemptionReservesWhilePlacing: a plugin that keeps what it reserved out of later
// pods' Filter (as device allocation does) is run at Reserve while the gang is placed, so the
// victims chosen are those whose removal lets the gang fit as it will be scheduled. Here at
// most two of the gang's reserved pods and pods labelled taken share a node: sparing the
// taken pod (the higher priority) would not make room, so it goes and the other is spared.
func TestGangPreemptionReservesWhilePlacing(t *testing.T) {
	ctx := context.Background()
	taken, other := on(prioPod("taken", 1, 15), "n1"), on(prioPod("other", 1, 10), "n1")
	taken.Labels = map[string]string{"taken": "true"}
	limit := &reservedLimit{max: 2}
	c := newTopologyClusterWith(t, testLevels, []*corev1.Node{gpuNode("n1", "z/b/r1", 3)}, []*corev1.Pod{taken, other}, limit)
	gang := []*corev1.Pod{prioPod("high-0", 1, 100), prioPod("high-1", 1, 100)}
	c.create(append([]*corev1.Pod{taken, other}, gang...)...)
	c.addGang("high", 2, "", "", gang...)

	_, status := c.gang.PostFilter(ctx, framework.NewCycleState(), gang[0], nil)
	require.True(t, status.IsSuccess(), "%v", status)
	require.Eventually(t, func() bool { return len(deletedPods(t, c)) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"taken"}, deletedPods(t, c))
	require.Zero(t, limit.count(), "every pod the placement reserved is unreserved")
}

// reservedLimit is a Filter and Reserve plugin that lets at most max pods, counting those it
// reserved and those labelled taken on the node, hold a node.
type reservedLimit struct {
	mu       sync.Mutex
	max      int
	reserved int
}

func (p *reservedLimit) Name() string { return "ReservedLimit" }

func (p *reservedLimit) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserved
}

func (p *reservedLimit) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	taken := 0
	for _, info := range node.GetPods() {
		if info.GetPod().Labels["taken"] == "true" {
			taken++
		}
	}
	if p.count()+taken >= p.max {
		return fwk.NewStatus(fwk.Unschedulable, "already reserved")
	}
	return nil
}

func (p *reservedLimit) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserved++
	return nil
}

func (p *reservedLimit) Unreserve(context.Context, fwk.CycleState, *corev1.Pod, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserved--
}

// withHostPort makes a pod ask for a host port.
func withHostPort(p *corev1.Pod, port int32) *corev1.Pod {
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}}
	return p
}

// spreadOnN1 labels a pod app=spread and keeps it to node n1, where at most 2 pods so labelled
// may run: its topology spread constraint over nodes (maxSkew 2) counts at least 10 domains,
// so the global minimum is 0.
func spreadOnN1(p *corev1.Pod) *corev1.Pod {
	p.Labels = map[string]string{"app": "spread"}
	p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "n1"}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr.To[int32](10),
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	return p
}

// TestGangPreemptionHoldsRoomUntilRetried: once a gang's victims are gone, its pods keep their
// nominations while the backoff of the attempt that preempted still runs, so that a pod of
// the same priority does not take the room before the gang is tried again; the gang's next
// attempt (a new failure, or one after that backoff) ends the hold.
func TestGangPreemptionHoldsRoomUntilRetried(t *testing.T) {
	tests := map[string]struct {
		// tryAgain is what happens after the victims are gone and before the last attempt.
		tryAgain func(c *topologyCluster)
	}{
		"the gang fails again": {tryAgain: func(c *topologyCluster) {
			c.clock.Step(time.Hour)
			c.gang.backOff("ns/high", grouper.Cause{Message: "PodGroup ns/high needs more than the cluster has free"})
		}},
		"the gang's backoff is over": {tryAgain: func(c *topologyCluster) { c.clock.Step(time.Hour) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			low := []*corev1.Pod{on(prioPod("low-0", 8, 10), "n1"), on(prioPod("low-1", 8, 10), "n2")}
			nodes := []*corev1.Node{gpuNode("n1", "z/b/r1", 8), gpuNode("n2", "z/b/r1", 8), gpuNode("n3", "z/b/r1", 8)}
			c := newTopologyCluster(t, testLevels, nodes, low)
			gang := []*corev1.Pod{prioPod("high-0", 8, 100), prioPod("high-1", 8, 100), prioPod("high-2", 8, 100)}
			c.create(append(slices.Clone(low), gang...)...)
			c.addGang("low", 2, "", "", low...)
			c.addGang("high", 3, "", "", gang...)
			// PreFilter found no room and backed the gang off; its PostFilter preempts.
			c.gang.backOff("ns/high", grouper.Cause{Message: "PodGroup ns/high needs more than the cluster has free"})
			_, status := c.gang.PostFilter(ctx, framework.NewCycleState(), gang[0], nil)
			require.True(t, status.IsSuccess(), "%v", status)
			require.Eventually(t, func() bool { return len(deletedPods(t, c)) == 2 }, 5*time.Second, 10*time.Millisecond)

			waiting, status := c.gang.PostFilter(ctx, framework.NewCycleState(), gang[2], nil)
			require.Contains(t, status.Message(), "waits for the 2 pods it preempted to go")
			require.NotNil(t, waiting)
			planned := waiting.NominatingInfo.NominatedNodeName
			require.NotEmpty(t, planned)

			for _, p := range low {
				info, err := c.snapshot.NodeInfos().Get(p.Spec.NodeName)
				require.NoError(t, err)
				require.NoError(t, info.RemovePod(klog.Background(), p))
			}
			held, status := c.gang.PostFilter(ctx, framework.NewCycleState(), gang[2], nil)
			require.Contains(t, status.Message(), "PodGroup ns/high: the pods it preempted are gone; it is tried again")
			require.NotNil(t, held, "the victims are gone: the pod keeps its nomination until its gang is tried again")
			require.Equal(t, fwk.ModeOverride, held.NominatingInfo.Mode())
			require.Equal(t, planned, held.NominatingInfo.NominatedNodeName)

			tc.tryAgain(c)
			_, status = c.gang.PostFilter(ctx, framework.NewCycleState(), gang[2], nil)
			require.NotContains(t, status.Message(), "preempted", "the gang's own attempt: the preemption is over")
		})
	}
}

// avoiding gives a pod a required anti-affinity to pods labelled app, per node.
func avoiding(p *corev1.Pod, app string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: corev1.LabelHostname,
	}}}}
	return p
}

// TestGangPreemptionNeverPolicy: a gang whose pods' PriorityClass says preemptionPolicy Never
// waits instead.
func TestGangPreemptionNeverPolicy(t *testing.T) {
	ctx := context.Background()
	low := on(prioPod("low", 8, 0), "n1")
	c := newTopologyCluster(t, testLevels, []*corev1.Node{gpuNode("n1", "z/b/r1", 8)}, []*corev1.Pod{low})
	c.create(low)
	high := prioPod("high-0", 8, 100)
	high.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	c.addGang("high", 1, "", "", high)
	_, status := c.gang.PostFilter(ctx, framework.NewCycleState(), high, nil)
	require.False(t, status.IsSuccess())
	require.Empty(t, deletedPods(t, c))
}

// create makes pods in the framework's clientset and waits until its pod lister has them.
func (c *topologyCluster) create(pods ...*corev1.Pod) {
	c.t.Helper()
	lister := c.informers.Core().V1().Pods().Lister()
	c.informers.Start(c.t.Context().Done())
	for _, p := range pods {
		_, err := c.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
		require.NoError(c.t, err)
	}
	pdbs, err := c.client.PolicyV1().PodDisruptionBudgets("").List(context.Background(), metav1.ListOptions{})
	require.NoError(c.t, err)
	pdbLister := c.informers.Policy().V1().PodDisruptionBudgets().Lister()
	require.Eventually(c.t, func() bool {
		list, err := lister.List(labels.Everything())
		budgets, _ := pdbLister.List(labels.Everything())
		return err == nil && len(list) == len(pods) && len(budgets) == len(pdbs.Items)
	}, 5*time.Second, 10*time.Millisecond, "the listers have the pods and budgets")
}

// createPDB makes a PodDisruptionBudget in the framework's clientset; create, which starts
// the informers, waits for it too.
func (c *topologyCluster) createPDB(pdb *policy.PodDisruptionBudget) {
	c.t.Helper()
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Create(context.Background(), pdb, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

// deletedPods are the pods deleted through the framework's clientset.
func deletedPods(t *testing.T, c *topologyCluster) []string {
	t.Helper()
	var out []string
	for _, a := range c.client.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			out = append(out, a.(interface{ GetName() string }).GetName())
		}
	}
	return out
}

// drain reads the events recorded so far.
func drain(events chan string) string {
	var out string
	for {
		select {
		case e := <-events:
			out += e + "\n"
		default:
			return out
		}
	}
}
