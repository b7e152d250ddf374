package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

func TestQueueingHints(t *testing.T) {
	g := &Gang{}
	pod := func(uid, group, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID("uid-" + uid)}, Spec: corev1.PodSpec{NodeName: node}}
		if group != "" {
			p.Labels = map[string]string{v1alpha1.PodGroupLabel: group}
		}
		return p
	}
	podGroup := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	held := pod("held", "train", "")
	tests := map[string]struct {
		hint     fwk.QueueingHintFn
		old, new any
		want     fwk.QueueingHint
	}{
		"a pod joins the same group":            {hint: g.sameGroupPod, new: pod("other", "train", ""), want: fwk.Queue},
		"a pod of another group":                {hint: g.sameGroupPod, new: pod("other", "eval", ""), want: fwk.QueueSkip},
		"the same name in another namespace":    {hint: g.sameGroupPod, new: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", UID: "x", Labels: map[string]string{v1alpha1.PodGroupLabel: "train"}}}, want: fwk.QueueSkip},
		"the held pod itself is labelled":       {hint: g.sameGroupPod, new: held, want: fwk.Queue},
		"a bound pod goes: its node has room":   {hint: assignedPodDeleted, old: pod("gone", "", "node"), want: fwk.Queue},
		"an unbound pod goes: no room freed":    {hint: assignedPodDeleted, old: pod("gone", "", ""), want: fwk.QueueSkip},
		"its PodGroup appears":                  {hint: g.samePodGroup, new: podGroup("ns", "train"), want: fwk.Queue},
		"another PodGroup":                      {hint: g.samePodGroup, new: podGroup("ns", "eval"), want: fwk.QueueSkip},
		"a PodGroup of that name elsewhere":     {hint: g.samePodGroup, new: podGroup("other", "train"), want: fwk.QueueSkip},
		"an object of an unexpected type: safe": {hint: g.samePodGroup, new: "?", want: fwk.Queue},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.hint(klog.Background(), held, tc.old, tc.new)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
