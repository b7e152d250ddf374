package plugin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

func TestQueueingHints(t *testing.T) {
	members := grouper.NewMembership(nil)
	g := &Gang{members: members}
	pod := func(uid, namespace, group, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: namespace, UID: types.UID("uid-" + uid)}, Spec: corev1.PodSpec{NodeName: node}}
		place := grouper.Placement{}
		if group != "" {
			place = grouper.Placement{Key: grouper.GroupKey(namespace, group), Namespace: namespace, Name: group}
		}
		members.Join(p, place, time.Now())
		return p
	}
	held := pod("held", "ns", "train", "")
	tests := map[string]struct {
		hint     fwk.QueueingHintFn
		old, new any
		want     fwk.QueueingHint
	}{
		"a pod joins the same group":          {hint: g.sameGroupPod, new: pod("other", "ns", "train", ""), want: fwk.Queue},
		"a pod of another group":              {hint: g.sameGroupPod, new: pod("eval", "ns", "eval", ""), want: fwk.QueueSkip},
		"the same name in another namespace":  {hint: g.sameGroupPod, new: pod("elsewhere", "other", "train", ""), want: fwk.QueueSkip},
		"a pod not decided yet":               {hint: g.sameGroupPod, new: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "new"}}, want: fwk.QueueSkip},
		"the held pod itself":                 {hint: g.sameGroupPod, new: held, want: fwk.Queue},
		"an object of an unexpected type":     {hint: g.sameGroupPod, new: "?", want: fwk.Queue},
		"a bound pod goes: its node has room": {hint: assignedPodDeleted, old: pod("gone", "ns", "", "node"), want: fwk.Queue},
		"an unbound pod goes: no room freed":  {hint: assignedPodDeleted, old: pod("gone2", "ns", "", ""), want: fwk.QueueSkip},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.hint(klog.Background(), held, tc.old, tc.new)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
