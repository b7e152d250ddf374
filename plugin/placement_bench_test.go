package plugin

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

// BenchmarkTopologyPlacement is the cost of placing one gang of 4 pods of 8 GPUs that asks for
// one rack (a rack: 4 nodes of 8 GPUs), in clusters of 10, 100 and 1,000 racks: the first
// pod's PreFilter, which finds the rack by running the profile's filters. In the worst layout
// every rack but the
// last has 32 GPUs free but no 4 nodes with 8 each, so the search runs the filters in every
// rack ("worst"); with every rack free it takes the first ("free"). ns/domain is the time per
// rack in the cluster.
func BenchmarkTopologyPlacement(b *testing.B) {
	for _, racks := range []int{10, 100, 1000} {
		for _, layout := range []string{"free", "worst"} {
			b.Run(fmt.Sprintf("racks=%d/%s", racks, layout), func(b *testing.B) {
				var nodes []*corev1.Node
				var bound []*corev1.Pod
				for r := range racks {
					rack := fmt.Sprintf("z/b/r%d", r)
					for n := range 4 {
						name := fmt.Sprintf("r%d-n%d", r, n)
						nodes = append(nodes, gpuNode(name, rack, 8))
						if layout == "worst" && r < racks-1 && n == 0 {
							bound = append(bound, on(gpuPod("busy-"+name, 1), name))
						}
					}
					if layout == "worst" && r < racks-1 {
						// 32 GPUs free in all, so the rack is tried, but only 3 nodes hold 8.
						nodes = append(nodes, gpuNode(fmt.Sprintf("r%d-small", r), rack, 1))
					}
				}
				t := &testing.T{}
				c := newTopologyCluster(t, testLevels, nodes, bound)
				ctx := context.Background()
				for b.Loop() {
					b.StopTimer()
					pods := gpuPods("p", 4, 8)
					c.members = grouper.NewMembership(nil)
					c.gang.members = c.members
					c.addGang("g", 4, "rack", "", pods...)
					b.StartTimer()
					_, status, _ := c.fw.RunPreFilterPlugins(ctx, framework.NewCycleState(), pods[0])
					if !status.IsSuccess() {
						b.Fatalf("not placed: %v", status)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(racks), "ns/domain")
				require.False(b, t.Failed())
			})
		}
	}
}
