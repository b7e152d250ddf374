package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

func TestShortfall(t *testing.T) {
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
	tests := map[string]struct {
		nodes []*corev1.Node
		pods  []*corev1.Pod
		need  corev1.ResourceList
		want  string
	}{
		"fits across two nodes":     {nodes: []*corev1.Node{node("a", 8), node("b", 8)}, need: need(12, "6"), want: ""},
		"too few GPUs in total":     {nodes: []*corev1.Node{node("a", 8)}, need: need(12, "6"), want: "nvidia.com/gpu 12 (free 8)"},
		"GPUs in use do not count":  {nodes: []*corev1.Node{node("a", 8), node("b", 8)}, pods: []*corev1.Pod{pod("a", 6, "1")}, need: need(12, "1"), want: "nvidia.com/gpu 12 (free 10)"},
		"CPU in millicores":         {nodes: []*corev1.Node{node("a", 8)}, pods: []*corev1.Pod{pod("a", 0, "7500m")}, need: need(0, "1"), want: "cpu 1 (free 500m)"},
		"a resource no node has":    {nodes: []*corev1.Node{node("a", 8)}, need: corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}, want: "example.com/fpga 1 (free 0)"},
		"several missing, in order": {nodes: []*corev1.Node{node("a", 1)}, need: need(2, "9"), want: "cpu 9 (free 8), nvidia.com/gpu 2 (free 1)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, shortfall(tc.need, schedcache.NewSnapshot(tc.pods, tc.nodes)))
		})
	}
}
