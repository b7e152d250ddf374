package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// BenchmarkGangPreemption is the cost of one gang's look for victims (no eviction): a gang of
// 4 pods of 8 GPUs at high priority in a cluster of 100 and 1,000 nodes of 8 GPUs, each node
// full with two pods of 4 GPUs of two different low-priority gangs of 2, paired at random
// (the layout of the bench's preemption step). ns/node is the time per node in the cluster.
func BenchmarkGangPreemption(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
			var nodes []*corev1.Node
			for n := range size {
				nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", n), "z/b/r1", 8))
			}
			slots := rand.New(rand.NewPCG(1, 2)).Perm(2 * size) // half a node each
			var bound []*corev1.Pod
			gangs := map[string][]*corev1.Pod{}
			for i, slot := range slots {
				gang := fmt.Sprintf("low%d", i/2)
				p := on(prioPod(fmt.Sprintf("%s-%d", gang, i%2), 4, 10), nodes[slot/2].Name)
				bound = append(bound, p)
				gangs[gang] = append(gangs[gang], p)
			}
			t := &testing.T{}
			c := newTopologyCluster(t, testLevels, nodes, bound)
			for name, members := range gangs {
				c.addGang(name, int32(len(members)), "", "", members...)
			}
			high := []*corev1.Pod{prioPod("high-0", 8, 1000), prioPod("high-1", 8, 1000), prioPod("high-2", 8, 1000), prioPod("high-3", 8, 1000)}
			c.addGang("high", 4, "", "", high...)
			group, ok := c.members.Group("ns/high")
			require.True(b, ok)
			ctx := context.Background()
			victims := 0
			for b.Loop() {
				best, _, result := c.gang.lookForVictims(ctx, group, high[0])
				if best == nil {
					b.Fatalf("no victims found: %s", result)
				}
				victims = best.victimPods()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/node")
			b.ReportMetric(float64(victims), "victim-pods")
			require.False(b, t.Failed())
		})
	}
}
