package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/workmap/workmap/grouper"
)

// TestRoom: what a gang is told when the cluster is short of what it needs together: whether
// it waits or can never fit, each amount beside the one it is compared with, in one unit.
func TestRoom(t *testing.T) {
	node := func(name string, gpus int64) *corev1.Node {
		alloc := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI),
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
	}
	pod := func(nodeName string, gpus int64, cpu string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p-" + nodeName + cpu, Namespace: "ns", UID: types.UID("p-" + nodeName + cpu)},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), "nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)},
			}}}},
		}
	}
	need := func(gpus int64, cpu string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	memory := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
	const short, never = "PodGroup ns/x needs more than the cluster has free: ", "PodGroup ns/x can never fit this cluster as it is: it needs "
	tests := map[string]struct {
		nodes []*corev1.Node
		pods  []*corev1.Pod
		need  corev1.ResourceList
		want  grouper.Cause
	}{
		"fits across two nodes":    {nodes: []*corev1.Node{node("a", 8), node("b", 8)}, need: need(12, "6")},
		"GPUs in use do not count": {nodes: []*corev1.Node{node("a", 8), node("b", 8)}, pods: []*corev1.Pod{pod("a", 6, "1")}, need: need(12, "1"), want: grouper.Cause{Message: short + "nvidia.com/gpu 12 (10 free)"}},
		"CPU in cores, both amounts": {nodes: []*corev1.Node{node("a", 8)}, pods: []*corev1.Pod{pod("a", 0, "7500m")}, need: need(0, "1"),
			want: grouper.Cause{Message: short + "cpu 1 (0.5 free)"}},
		"memory in one binary unit, both amounts": {nodes: []*corev1.Node{node("a", 8), node("b", 8)}, need: memory("28800Gi"),
			want: grouper.Cause{Never: true, Message: never + "memory 28800Gi (all 2 nodes together have 64Gi)"}},
		"memory short, in the unit of the smaller amount": {nodes: []*corev1.Node{node("a", 8)}, pods: []*corev1.Pod{pod("a", 0, "1")}, need: memory("33Gi"),
			want: grouper.Cause{Never: true, Message: never + "memory 33Gi (its one node has 32Gi)"}},
		"more GPUs than all nodes together have": {nodes: []*corev1.Node{node("a", 8), node("b", 8)}, need: need(128, "1"),
			want: grouper.Cause{Never: true, Message: never + "nvidia.com/gpu 128 (all 2 nodes together have 16)"}},
		"a resource no node has": {nodes: []*corev1.Node{node("a", 8)}, need: corev1.ResourceList{"google.com/tpu": resource.MustParse("256")},
			want: grouper.Cause{Never: true, Message: never + "google.com/tpu 256 (no node has any)"}},
		"never fitting is said before waiting": {nodes: []*corev1.Node{node("a", 8)}, pods: []*corev1.Pod{pod("a", 8, "1")}, need: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), "google.com/tpu": resource.MustParse("1")},
			want: grouper.Cause{Never: true, Message: never + "google.com/tpu 1 (no node has any)"}},
		"several short, in order": {nodes: []*corev1.Node{node("a", 2), node("b", 2)}, pods: []*corev1.Pod{pod("a", 1, "7"), pod("b", 1, "1")}, need: need(3, "9"),
			want: grouper.Cause{Message: short + "cpu 9 (8 free), nvidia.com/gpu 3 (2 free)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, room("ns/x", tc.need, schedcache.NewSnapshot(tc.pods, tc.nodes)))
		})
	}
}
