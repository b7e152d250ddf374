package plugin

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// BenchmarkPodPath is one pod's way through the plugin (joining its gang, PreEnqueue, two
// QueueSort comparisons, PreFilter, Reserve, Permit) in a gang of 100 and of 10,000 pods:
// membership is kept by events and read in O(1), so the cost per pod does not grow with the
// gang. The gang's minMember is its size; the first pod of the attempt (PreFilter with nothing
// assigned) sums the gang's requests once.
func BenchmarkPodPath(b *testing.B) {
	for _, size := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("gang=%d", size), func(b *testing.B) {
			ctx := context.Background()
			pods := make([]*corev1.Pod, size)
			for i := range pods {
				name := fmt.Sprintf("p%05d", i)
				pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			var done int
			for b.Loop() {
				b.StopTimer()
				f := newGangFixture(&testing.T{})
				f.addPodGroup("big", int32(size), nil)
				b.StartTimer()
				for _, pod := range pods {
					f.decide(pod, "big")
				}
				prev := pods[0]
				for _, pod := range pods {
					f.gang.PreEnqueue(ctx, pod)
					f.gang.Less(queued{pod: pod}, queued{pod: prev})
					f.gang.Less(queued{pod: prev}, queued{pod: pod})
					f.gang.PreFilter(ctx, framework.NewCycleState(), pod, nil)
					f.gang.Reserve(ctx, nil, pod, "node")
					if s, _ := f.gang.Permit(ctx, nil, pod, "node"); s.Code() == fwk.Wait {
						f.handle.waiting[pod.UID] = &fakeWaitingPod{pod: pod, handle: f.handle}
					}
					prev = pod
				}
				done += size
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/pod")
		})
	}
}
