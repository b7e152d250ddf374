package plugin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// bindTimes records, from a watch, when each pod was first seen bound, and where.
type bindTimes struct {
	mu    sync.Mutex
	times map[string]time.Time
	nodes map[string]string
}

func (b *bindTimes) observe(obj any) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		b.mu.Lock()
		if _, seen := b.times[p.Name]; !seen {
			b.times[p.Name], b.nodes[p.Name] = time.Now(), p.Spec.NodeName
		}
		b.mu.Unlock()
	}
}

func (b *bindTimes) get(name string) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.times[name]
	return t, ok
}

func (b *bindTimes) node(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nodes[name]
}

type contender struct {
	name       string
	size, gpus int
	// rack: the gang requires one rack.
	rack bool
	// priorityClass is its pods' PriorityClass ("" for none).
	priorityClass string
}

// The contention cluster: 4 nodes of 8 GPUs in two racks.
const (
	contentionNodes, contentionGPUs = 4, 8
	contentionRackLabel             = "e2e.workmap.dev/rack"
)

func contentionRack(node int) string { return fmt.Sprintf("rack-%d", node/2) }

// TestContention: rounds of randomly sized gangs, about half of them requiring one rack, compete
// for 32 GPUs in two racks. In every round no gang is ever partly bound (beyond the binding
// skew of an admitted gang), no gang that requires a rack is bound across two, and once the
// round settles no gang is left waiting while a domain it fits in is free (checked from the
// round's final state; a round that does not settle so within 30 s is a deadlock or livelock).
// WORKMAP_CONTENTION_ROUNDS (default 100) and WORKMAP_CONTENTION_SEED change the run.
func TestContention(t *testing.T) {
	rounds, rng := contentionRounds(t)

	var nodeList []harness.Node
	rackOf := map[string]string{}
	for i := range contentionNodes {
		name := fmt.Sprintf("gpu-node-%d", i)
		rackOf[name] = contentionRack(i)
		nodeList = append(nodeList, harness.Node{Name: name, GPUs: contentionGPUs, Labels: map[string]string{contentionRackLabel: contentionRack(i)}})
	}
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: nodeList})
	c.StartWorkmapScheduler(harness.SchedulerOptions{
		PermitWaitingTimeSeconds: 5, PodGroupBackoffSeconds: 1,
		TopologyLevels: []harness.TopologyLevel{{Name: "rack", NodeLabel: contentionRackLabel}},
	})
	g := newGangs(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	binds := &bindTimes{times: map[string]time.Time{}, nodes: map[string]string{}}
	factory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace("default"))
	podInformer := factory.Core().V1().Pods().Informer()
	_, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: binds.observe, UpdateFunc: func(_, o any) { binds.observe(o) }})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	var gangsSeen, gangsBound, racked, partial, split, waitingWhileFits int
	var maxSkew time.Duration
	for round := range rounds {
		var contenders []contender
		for i := range 2 + rng.IntN(4) {
			contenders = append(contenders, contender{name: fmt.Sprintf("r%d-g%d", round, i), size: 2 + rng.IntN(3), gpus: 2 * (1 + rng.IntN(4)), rack: rng.IntN(2) == 0})
		}
		var wg sync.WaitGroup
		for _, ct := range contenders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				createGang(t, c, g, ct)
			}()
		}
		wg.Wait()

		// Settle: until no new binding for a second and no gang waits while it fits the room
		// left (at most 30 s).
		last, lastChange, deadline := -1, time.Now(), time.Now().Add(30*time.Second)
		for time.Now().Before(deadline) && (time.Since(lastChange) < time.Second || len(fitsButWaits(contenders, binds, rackOf)) > 0) {
			n := 0
			for _, ct := range contenders {
				for i := range ct.size {
					if _, ok := binds.get(fmt.Sprintf("%s-%d", ct.name, i)); ok {
						n++
					}
				}
			}
			if n != last {
				last, lastChange = n, time.Now()
			}
			time.Sleep(50 * time.Millisecond)
		}

		for _, ct := range contenders {
			gangsSeen++
			var first, lastBind time.Time
			bound := 0
			for i := range ct.size {
				if at, ok := binds.get(fmt.Sprintf("%s-%d", ct.name, i)); ok {
					bound++
					if first.IsZero() || at.Before(first) {
						first = at
					}
					if at.After(lastBind) {
						lastBind = at
					}
				}
			}
			switch {
			case bound == ct.size:
				gangsBound++
				maxSkew = max(maxSkew, lastBind.Sub(first))
				if racks := racksBound(ct, binds, rackOf); ct.rack && len(racks) != 1 {
					split++
					t.Errorf("round %d: gang %s requires one rack and was bound across %v", round, ct.name, racks)
				} else if ct.rack {
					racked++
				}
				if lastBind.Sub(first) > harness.BindSkewLimit {
					partial++
					t.Errorf("round %d: gang %s (%d pods x %d GPUs) was partly bound for %s", round, ct.name, ct.size, ct.gpus, lastBind.Sub(first))
				}
			case bound > 0:
				partial++
				t.Errorf("round %d: gang %s (%d pods x %d GPUs) has %d of %d pods bound", round, ct.name, ct.size, ct.gpus, bound, ct.size)
			}
		}
		for _, ct := range fitsButWaits(contenders, binds, rackOf) {
			waitingWhileFits++
			t.Errorf("round %d: gang %s (%d pods x %d GPUs, rack %v) waits though a domain it fits in is free: %+v", round, ct.name, ct.size, ct.gpus, ct.rack, contenders)
		}
		deleteRound(t, c, g, contenders)
	}
	t.Logf("contention: %d rounds, %d gangs, %d bound whole (%d of them in one rack as required), %d partial gangs, %d split across racks, %d left waiting while they fit, max bind skew within a gang %s",
		rounds, gangsSeen, gangsBound, racked, partial, split, waitingWhileFits, maxSkew.Round(time.Millisecond))
	require.Zero(t, partial, "partial gangs")
	require.Zero(t, split, "gangs bound across two racks")
	require.Zero(t, waitingWhileFits, "gangs left waiting while a domain they fit in is free")
}

// contentionRounds are how many rounds a contention test runs (WORKMAP_CONTENTION_ROUNDS,
// default 100) and its random source, seeded by WORKMAP_CONTENTION_SEED (default the time),
// which it logs to replay a run.
func contentionRounds(t *testing.T) (int, *rand.Rand) {
	rounds := 100
	if v, err := strconv.Atoi(os.Getenv("WORKMAP_CONTENTION_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("WORKMAP_CONTENTION_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d rounds, seed %d (WORKMAP_CONTENTION_SEED to replay)", rounds, seed)
	return rounds, rand.New(rand.NewPCG(seed, seed>>1|1))
}

// racksBound are the racks of a gang's bound pods.
func racksBound(ct contender, binds *bindTimes, rackOf map[string]string) map[string]bool {
	racks := map[string]bool{}
	for i := range ct.size {
		if node := binds.node(fmt.Sprintf("%s-%d", ct.name, i)); node != "" {
			racks[rackOf[node]] = true
		}
	}
	return racks
}

// fitsButWaits are the gangs with no pod bound that would fit the room the bound pods leave:
// in one rack for a gang that requires one, anywhere for the others (pods packed onto nodes).
func fitsButWaits(contenders []contender, binds *bindTimes, rackOf map[string]string) []contender {
	used := map[string]int{}
	bound := map[string]bool{}
	for _, ct := range contenders {
		for i := range ct.size {
			if node := binds.node(fmt.Sprintf("%s-%d", ct.name, i)); node != "" {
				used[node] += ct.gpus
				bound[ct.name] = true
			}
		}
	}
	var out []contender
	for _, ct := range contenders {
		if bound[ct.name] {
			continue
		}
		slots := map[string]int{} // pods of the gang that fit, by rack ("" for anywhere)
		for node, rack := range rackOf {
			n := (contentionGPUs - used[node]) / ct.gpus
			slots[rack] += n
			slots[""] += n
		}
		fits := slots[""] >= ct.size
		if ct.rack {
			fits = false
			for rack, n := range slots {
				fits = fits || (rack != "" && n >= ct.size)
			}
		}
		if fits {
			out = append(out, ct)
		}
	}
	return out
}

// createGang makes an operator-style gang: a PodGroup and its labelled pods.
func createGang(t *testing.T, c *harness.Cluster, g *gangs, ct contender) {
	ctx := context.Background()
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: ct.name, Namespace: "default"}, Spec: v1alpha1.PodGroupSpec{MinMember: int32(ct.size)}}
	if ct.rack {
		pg.Annotations = map[string]string{grouper.TopologyRequiredAnnotation: "rack"}
	}
	if err := g.Client().Create(ctx, pg); err != nil {
		t.Errorf("creating PodGroup %s: %v", ct.name, err)
		return
	}
	for i := range ct.size {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", ct.name, i), Namespace: "default", Labels: map[string]string{v1alpha1.PodGroupLabel: ct.name, "contention": "true"}},
			Spec: corev1.PodSpec{SchedulerName: harness.SchedulerName, PriorityClassName: ct.priorityClass, TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(ct.gpus), resource.DecimalSI)},
			}}}},
		}
		if _, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Errorf("creating pod %s: %v", pod.Name, err)
		}
	}
}

// deleteRound removes a round's pods and PodGroups and waits until the pods are gone.
func deleteRound(t *testing.T, c *harness.Cluster, g *gangs, contenders []contender) {
	ctx := context.Background()
	require.NoError(t, c.Kube.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: "contention=true"}))
	for _, ct := range contenders {
		_ = g.Client().Delete(ctx, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: ct.name, Namespace: "default"}})
	}
	require.Eventually(t, func() bool { return len(g.Pods("contention=true")) == 0 }, 30*time.Second, 50*time.Millisecond)
}
