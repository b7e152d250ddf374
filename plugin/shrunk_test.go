package plugin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

func (h *fakeHandle) IterateOverWaitingPods(callback func(fwk.WaitingPod)) {
	for _, wp := range h.waiting {
		callback(wp)
	}
}

// TestShrunkGangIsAdmittedWhileWaiting: members of a gang waiting at Permit for more pods bind
// as soon as its minMember falls to what holds a node (the workload scaled down), without
// waiting out their timeout or another pod's arrival.
func TestShrunkGangIsAdmittedWhileWaiting(t *testing.T) {
	f := newGangFixture(t)
	a, b := f.member("a", "train"), f.member("b", "train")
	f.member("c", "train")
	for _, p := range []*corev1.Pod{a, b} {
		s, _ := f.reserveAndPermit(p)
		require.Equal(t, fwk.Wait, s.Code())
	}
	waitingA, waitingB := f.handle.waiting[a.UID], f.handle.waiting[b.UID]

	f.gang.admitShrunk(context.Background())
	require.Len(t, f.handle.waiting, 2, "2 of minMember 3: still waiting")

	f.addPodGroup("train", 2, nil) // scaled down: its grouping is decided again
	f.decide(a, "train")
	f.gang.admitShrunk(context.Background())
	require.Empty(t, f.handle.waiting)
	require.Equal(t, "allowed", waitingA.verdict)
	require.Equal(t, "allowed", waitingB.verdict)
}
