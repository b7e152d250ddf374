package bench

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestNodeSchedulable(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"ready", corev1.Node{Status: corev1.NodeStatus{Conditions: ready}}, true},
		{"no conditions yet", corev1.Node{}, false},
		{"not ready", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}}, false},
		{"ready, still tainted not-ready", corev1.Node{
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: ready}}, false},
		{"ready, a PreferNoSchedule taint", corev1.Node{
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: ready}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, NodeSchedulable(&tc.node)) })
	}
	taints := []corev1.Taint{{Key: NotReadyTaint, Effect: corev1.TaintEffectNoSchedule}, {Key: "x", Effect: corev1.TaintEffectNoExecute}}
	rest, had := withoutTaint(taints, NotReadyTaint)
	assert.True(t, had)
	assert.Equal(t, taints[1:], rest)
	_, had = withoutTaint(rest, NotReadyTaint)
	assert.False(t, had)

	nodes := ScaleNodes(3, 16)
	assert.Len(t, nodes, 3)
	assert.Equal(t, "scale-node-2", nodes[2].Name)
	assert.Equal(t, int64(16), nodes[2].GPUs)
}

func TestForEach(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]bool{}
	err := forEach([]int{1, 2, 3, 4, 5}, 3, func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i] = true
		if i == 4 {
			return errors.New("four")
		}
		return nil
	})
	assert.EqualError(t, err, "four")
	assert.Len(t, seen, 5, "every item is tried")
}
