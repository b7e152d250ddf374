package grouper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

func memberPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
}

func desiredGroup(name string, minMember int32) grouper.Placement {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: minMember}}
	return grouper.Placement{Key: "ns/" + name, Namespace: "ns", Name: name, Desired: pg}
}

// TestMembershipCountsWhatHoldsANode: a member holds a node while this scheduler reserved one
// for it or once it is bound; Reserved lists those still waiting to bind.
func TestMembershipCountsWhatHoldsANode(t *testing.T) {
	m := grouper.NewMembership(nil)
	a, b := memberPod("a"), memberPod("b")
	m.Join(a, desiredGroup("g", 2), time.Now())
	view, changed := m.Join(b, desiredGroup("g", 2), time.Now())
	require.True(t, changed)
	require.Equal(t, 2, view.Members)
	require.True(t, view.Known && view.Owned, "workmap's decision gives the spec: no PodGroup object needed")

	m.Reserve(a.UID)
	m.Reserve(a.UID) // idempotent
	g, _ := m.Group("ns/g")
	require.Equal(t, 1, g.Assigned)
	require.Equal(t, []types.UID{"a"}, m.Reserved("ns/g"))

	boundA := a.DeepCopy()
	boundA.Spec.NodeName = "node"
	m.Update(boundA)
	m.Unreserve(a.UID) // after the bind: still holds its node
	g, _ = m.Group("ns/g")
	require.Equal(t, 1, g.Assigned)
	require.Empty(t, m.Reserved("ns/g"), "bound: no longer waiting")

	m.Reserve(b.UID)
	m.Unreserve(b.UID)
	g, _ = m.Group("ns/g")
	require.Equal(t, 1, g.Assigned, "b's reservation was released")

	_, changed = m.Join(b, desiredGroup("g", 2), time.Now())
	require.False(t, changed, "the same decision again")
	_, changed = m.Join(b, desiredGroup("g", 3), time.Now())
	require.True(t, changed, "a new minMember (the definition changed)")
	view, changed = m.Join(b, desiredGroup("other", 2), time.Now())
	require.True(t, changed)
	require.Equal(t, 1, view.Members)
	g, _ = m.Group("ns/g")
	require.Equal(t, 1, g.Members, "b left its old group")
}

// TestMembershipIsBounded: pods are forgotten when they go, and a group with them, with its
// backoff state, once it has no pods and no PodGroup.
func TestMembershipIsBounded(t *testing.T) {
	m := grouper.NewMembership(nil)
	place := desiredGroup("g", 3)
	for i := range 3 {
		m.Join(memberPod(fmt.Sprint(i)), place, time.Now())
	}
	m.SetPodGroup("ns/g", place.Desired)
	_, started := m.BackOff("ns/g", grouper.Cause{}, time.Now(), time.Hour, func(time.Duration, func()) {})
	require.True(t, started)
	for i := range 3 {
		require.Equal(t, "ns/g", m.Remove(memberPod(fmt.Sprint(i))))
	}
	pods, groups := m.Len()
	require.Zero(t, pods)
	require.Equal(t, 1, groups, "its PodGroup still exists: the group is kept for its status")
	m.SetPodGroup("ns/g", nil)
	pods, groups = m.Len()
	require.Zero(t, pods)
	require.Zero(t, groups, "no pods, no PodGroup: forgotten, backoff and all")

	// A pod in no gang is forgotten too.
	m.Join(memberPod("alone"), grouper.Placement{}, time.Now())
	require.Empty(t, m.Remove(memberPod("alone")))
	pods, groups = m.Len()
	require.Zero(t, pods+groups)
}

// TestMembershipOperatorPodGroup: an operator's PodGroup gives its group's spec; its deletion
// leaves the group unknown (its pods wait for it).
func TestMembershipOperatorPodGroup(t *testing.T) {
	m := grouper.NewMembership(nil)
	place := grouper.Placement{Key: "ns/theirs", Namespace: "ns", Name: "theirs"}
	view, _ := m.Join(memberPod("a"), place, time.Now())
	require.False(t, view.Known)
	created := metav1.NewTime(time.Now().Add(-time.Hour))
	m.SetPodGroup("ns/theirs", &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns", CreationTimestamp: created}, Spec: v1alpha1.PodGroupSpec{MinMember: 4}})
	g, _ := m.Group("ns/theirs")
	require.True(t, g.Known)
	require.False(t, g.Owned)
	require.EqualValues(t, 4, g.Spec.MinMember)
	require.True(t, g.Since.Equal(created.Time), "ordered by the PodGroup's age")
	m.SetPodGroup("ns/theirs", nil)
	g, _ = m.Group("ns/theirs")
	require.False(t, g.Known)
}

// activations records what a Membership wakes in the scheduling queue.
type activations struct{ pods [][]string }

func (a *activations) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	a.pods = append(a.pods, names)
}

// TestRetryEndsABackoffEarly: room appeared for a backed-off group; Retry ends its backoff
// and wakes its pods at once, keeping its failures (the next backoff is longer still), and the
// ended backoff's own wake-up, when it comes, wakes nothing.
func TestRetryEndsABackoffEarly(t *testing.T) {
	queue := &activations{}
	m := grouper.NewMembership(queue)
	now := time.Now()
	place := desiredGroup("g", 2)
	m.Join(memberPod("a"), place, now)
	m.Join(memberPod("b"), place, now)
	var wakes []func()
	after := func(_ time.Duration, f func()) { wakes = append(wakes, f) }

	_, ok := m.BackOff("ns/g", grouper.Cause{}, now, time.Second, after)
	require.True(t, ok)
	require.True(t, m.Retry("ns/g", now.Add(time.Millisecond)), "a backoff ran")
	g, _ := m.Group("ns/g")
	require.True(t, g.BackoffUntil.IsZero(), "the backoff is over")
	require.Equal(t, 1, g.Failures, "its failure is kept")
	require.Len(t, queue.pods, 1)
	require.ElementsMatch(t, []string{"a", "b"}, queue.pods[0], "the whole gang is woken")

	second, ok := m.BackOff("ns/g", grouper.Cause{}, now.Add(2*time.Millisecond), time.Second, after)
	require.True(t, ok)
	require.GreaterOrEqual(t, second, 2*time.Second, "the retry failed: held back twice as long")
	wakes[0]() // the first backoff's own wake-up
	require.Len(t, queue.pods, 1, "the backoff it was for ended early: nothing woken")
	wakes[1]()
	require.Len(t, queue.pods, 2, "the current backoff's wake-up wakes the gang")

	require.False(t, m.Retry("ns/g", now.Add(time.Hour)), "no backoff runs")
	require.Len(t, queue.pods, 3, "still, the pods are woken: something changed for them")
	require.False(t, m.Retry("ns/unknown", now))
	require.Len(t, queue.pods, 3)
}
