package plugin_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// The preemption contention's PriorityClasses, by name.
var contentionPriorities = map[string]int32{"p10": 10, "p100": 100, "p1000": 1000}

// TestPreemptionContention: rounds in which gangs of whole-node pods (8 GPUs) of random
// priorities fill 4 nodes, then gangs of random, often higher, priorities arrive. Once each
// round settles: no preemption was in vain (every gang that preempted is bound whole, unless a
// gang of higher priority that arrived with it took the room: a gang's preemption holds the
// room against lower priorities only, as kube-scheduler's nominations do), no victim gang was
// left in part (a gang's pods are all there or all preempted), no gang is partly bound, and no
// priority is inverted (no gang waits while the free nodes and those of lower-priority gangs
// would hold it). WORKMAP_CONTENTION_ROUNDS (default 100) and WORKMAP_CONTENTION_SEED change
// the run.
func TestPreemptionContention(t *testing.T) {
	rounds, rng := contentionRounds(t)

	var nodeList []harness.Node
	for i := range contentionNodes {
		nodeList = append(nodeList, harness.Node{Name: fmt.Sprintf("gpu-node-%d", i), GPUs: contentionGPUs})
	}
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: nodeList})
	c.StartWorkmapScheduler(harness.SchedulerOptions{PermitWaitingTimeSeconds: 5, PodGroupBackoffSeconds: 1})
	g := newGangs(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.CreatePriorityClasses(ctx, contentionPriorities)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace("default"))
	pods, events := factory.Core().V1().Pods().Informer(), factory.Core().V1().Events().Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	classes := []string{"p10", "p100", "p1000"}
	var gangs, preemptors, outranked, futile, partialVictims, partial, inversions int
	for round := range rounds {
		var contenders []contender
		waveOf := map[string]int{}
		wave := func(n int, lowest int) {
			var created []contender
			for range n {
				waveOf[fmt.Sprintf("r%d-g%d", round, len(contenders))] = lowest
				ct := contender{name: fmt.Sprintf("r%d-g%d", round, len(contenders)), size: 1 + rng.IntN(3), gpus: contentionGPUs, priorityClass: classes[lowest+rng.IntN(len(classes)-lowest)]}
				contenders = append(contenders, ct)
				created = append(created, ct)
			}
			for _, ct := range created {
				createGang(t, c, g, ct)
			}
			settlePreemption(contenders, pods, events)
		}
		wave(2+rng.IntN(2), 0) // fill the nodes
		wave(1+rng.IntN(2), 1) // then often outrank them

		state := preemptionState(contenders, pods, events)
		for _, ct := range contenders {
			gangs++
			s := state[ct.name]
			if s.preempting {
				preemptors++
			}
			switch {
			case s.preempting && s.present == 0:
				// It bound, and was preempted in turn (victims are pods that hold a node).
			case s.preempting && s.bound != ct.size && outrankedBy(ct, contenders, state, waveOf) != "":
				outranked++
				t.Logf("round %d: gang %s (%s) preempted, and gang %s of a higher priority that arrived with it took the room", round, ct.name, ct.priorityClass, outrankedBy(ct, contenders, state, waveOf))
			case s.preempting && s.bound != ct.size:
				futile++
				t.Errorf("round %d: gang %s (%s, %d pods) preempted, and has %d of its pods bound; the round: %+v %+v; %s", round, ct.name, ct.priorityClass, ct.size, s.bound, contenders, state, roundEvents(events, fmt.Sprintf("r%d-", round)))
			case s.present > 0 && s.present < ct.size:
				partialVictims++
				t.Errorf("round %d: gang %s (%s) was preempted in part: %d of its %d pods are left", round, ct.name, ct.priorityClass, s.present, ct.size)
			case s.bound > 0 && s.bound < s.present:
				partial++
				t.Errorf("round %d: gang %s (%s) has %d of %d pods bound", round, ct.name, ct.priorityClass, s.bound, s.present)
			}
		}
		for _, ct := range invertedGangs(contenders, state) {
			inversions++
			t.Errorf("round %d: gang %s (%s, %d pods) waits though lower-priority gangs hold the nodes it needs: %+v", round, ct.name, ct.priorityClass, ct.size, state)
		}
		deleteRound(t, c, g, contenders)
	}
	t.Logf("preemption contention: %d rounds, %d gangs, %d preempted for (%d of them outranked by a gang arriving with them), %d in vain, %d victim gangs left in part, %d partly bound, %d priority inversions",
		rounds, gangs, preemptors, outranked, futile, partialVictims, partial, inversions)
	require.Zero(t, futile, "preemptions in vain")
	require.Zero(t, partialVictims, "victim gangs left in part")
	require.Zero(t, partial, "partly bound gangs")
	require.Zero(t, inversions, "priority inversions")
}

// outrankedBy names a gang of the same wave and a higher priority than ct that is bound ("":
// none).
func outrankedBy(ct contender, contenders []contender, state map[string]gangState, waveOf map[string]int) string {
	for _, other := range contenders {
		if o := state[other.name]; waveOf[other.name] == waveOf[ct.name] && o.priority > state[ct.name].priority && o.bound > 0 {
			return other.name
		}
	}
	return ""
}

// gangState is a contention gang as the cluster has it: its pods still there, those bound,
// and whether it preempted (a Preempting event on one of its pods).
type gangState struct {
	present, bound int
	preempting     bool
	priority       int32
}

// preemptionState reads each gang's state from the informers' stores.
func preemptionState(contenders []contender, pods, events cache.SharedIndexInformer) map[string]gangState {
	out := map[string]gangState{}
	for _, ct := range contenders {
		out[ct.name] = gangState{priority: contentionPriorities[ct.priorityClass]}
	}
	for _, obj := range pods.GetStore().List() {
		p := obj.(*corev1.Pod)
		s, ok := out[p.Labels[v1alpha1.PodGroupLabel]]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		s.present++
		if p.Spec.NodeName != "" {
			s.bound++
		}
		out[p.Labels[v1alpha1.PodGroupLabel]] = s
	}
	for _, obj := range events.GetStore().List() {
		e := obj.(*corev1.Event)
		if e.Reason != "Preempting" {
			continue
		}
		for _, ct := range contenders {
			if strings.HasPrefix(e.InvolvedObject.Name, ct.name+"-") {
				s := out[ct.name]
				s.preempting = true
				out[ct.name] = s
			}
		}
	}
	return out
}

// invertedGangs are the gangs with no pod bound that the free nodes and the nodes of
// lower-priority gangs would hold (each pod takes a whole node).
func invertedGangs(contenders []contender, state map[string]gangState) []contender {
	used := 0
	for _, s := range state {
		used += s.bound
	}
	var out []contender
	for _, ct := range contenders {
		s := state[ct.name]
		if s.bound > 0 || s.present == 0 {
			continue
		}
		room := contentionNodes - used
		for _, other := range contenders {
			if o := state[other.name]; o.priority < s.priority {
				room += o.bound
			}
		}
		if room >= ct.size {
			out = append(out, ct)
		}
	}
	return out
}

// settlePreemption waits until no pod was bound or removed for half a second, every gang that
// preempted is bound whole and no priority is inverted (at most 30 s).
func settlePreemption(contenders []contender, pods, events cache.SharedIndexInformer) {
	last, lastChange, deadline := "", time.Now(), time.Now().Add(30*time.Second)
	for time.Now().Before(deadline) {
		state := preemptionState(contenders, pods, events)
		now := fmt.Sprint(state)
		if now != last {
			last, lastChange = now, time.Now()
		}
		done := time.Since(lastChange) >= 500*time.Millisecond && len(invertedGangs(contenders, state)) == 0
		for _, ct := range contenders {
			if s := state[ct.name]; s.preempting && s.present > 0 && s.bound != ct.size {
				done = false
			}
		}
		if done {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// roundEvents are the messages of the events about a round's pods, for a failure's message.
func roundEvents(events cache.SharedIndexInformer, prefix string) string {
	var out []string
	for _, obj := range events.GetStore().List() {
		if e := obj.(*corev1.Event); strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			out = append(out, fmt.Sprintf("%s %s %s: %s", e.EventTime.Format("15:04:05.000"), e.InvolvedObject.Name, e.Reason, e.Message))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
