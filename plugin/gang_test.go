package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// fakeHandle is the part of the scheduler framework the plugin uses: the pod informer, the
// waiting pods and Activate.
type fakeHandle struct {
	fwk.Handle
	factory   informers.SharedInformerFactory
	snapshot  fwk.SharedLister
	waiting   map[types.UID]*fakeWaitingPod
	activated []string
}

func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister                 { return h.snapshot }

func (h *fakeHandle) IterateOverWaitingPods(fn func(fwk.WaitingPod)) {
	for _, wp := range h.waiting {
		fn(wp)
	}
}

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	for _, p := range pods {
		h.activated = append(h.activated, p.Name)
	}
}

type fakeWaitingPod struct {
	pod      *corev1.Pod
	verdict  string // "", "allowed" or the rejection message
	handle   *fakeHandle
	plugins  []string
	rejected bool
}

func (w *fakeWaitingPod) GetPod() *corev1.Pod         { return w.pod }
func (w *fakeWaitingPod) GetPendingPlugins() []string { return w.plugins }
func (w *fakeWaitingPod) Allow(string)                { w.verdict = "allowed"; delete(w.handle.waiting, w.pod.UID) }
func (w *fakeWaitingPod) Preempt(string, string) bool { return false }
func (w *fakeWaitingPod) Reject(_, msg string) bool {
	w.verdict, w.rejected = msg, true
	delete(w.handle.waiting, w.pod.UID)
	return true
}

// gangFixture is a plugin on a fake handle with one PodGroup "train" of minMember 3.
type gangFixture struct {
	t      *testing.T
	gang   *Gang
	handle *fakeHandle
	clock  *testingclock.FakeClock
	pods   cache.Indexer
	groups cache.Indexer
}

func newGangFixture(t *testing.T) *gangFixture {
	h := &fakeHandle{
		factory: informers.NewSharedInformerFactory(fake.NewClientset(), 0), waiting: map[types.UID]*fakeWaitingPod{},
		snapshot: schedcache.NewSnapshot(nil, []*corev1.Node{{
			ObjectMeta: metav1.ObjectMeta{Name: "node"},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}},
		}}),
	}
	podGroups := cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1alpha1.PodGroup{}, 0, cache.Indexers{})
	clk := testingclock.NewFakeClock(time.Now())
	args, err := DecodeArgs(nil)
	require.NoError(t, err)
	g, err := New(h, args, podGroups, clk)
	require.NoError(t, err)
	f := &gangFixture{t: t, gang: g, handle: h, clock: clk, pods: h.factory.Core().V1().Pods().Informer().GetIndexer(), groups: podGroups.GetIndexer()}
	f.addPodGroup("train", 3, nil)
	return f
}

func (f *gangFixture) addPodGroup(name string, minMember int32, timeout *int32) {
	require.NoError(f.t, f.groups.Add(&v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(f.clock.Now())},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember, ScheduleTimeoutSeconds: timeout},
	}))
}

// member creates a pod of a group that workmap grouped (label, annotation, decision).
func (f *gangFixture) member(name, group string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID(name),
		Labels:      map[string]string{v1alpha1.PodGroupLabel: group},
		Annotations: map[string]string{grouper.GroupedAnnotation: "true"},
	}}
	require.NoError(f.t, f.pods.Add(pod))
	f.gang.Decided(pod, group)
	return pod
}

// reserveAndPermit runs Reserve and Permit for a pod; a Wait puts it among the waiting pods.
func (f *gangFixture) reserveAndPermit(pod *corev1.Pod) (*fwk.Status, time.Duration) {
	ctx := context.Background()
	require.Nil(f.t, f.gang.Reserve(ctx, nil, pod, "node"))
	s, d := f.gang.Permit(ctx, nil, pod, "node")
	if s.Code() == fwk.Wait {
		f.handle.waiting[pod.UID] = &fakeWaitingPod{pod: pod, handle: f.handle, plugins: []string{Name}}
	}
	return s, d
}

func TestPreEnqueue(t *testing.T) {
	tests := map[string]struct {
		setup      func(f *gangFixture) *corev1.Pod
		wantReason string // "" means admitted
	}{
		"not yet grouped: held": {
			setup: func(f *gangFixture) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
			},
			wantReason: "waiting for workmap to group the pod",
		},
		"grouped on its own: admitted": {
			setup: func(f *gangFixture) *corev1.Pod {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
				f.gang.Decided(pod, "")
				return pod
			},
		},
		"decided, labels not written yet: the pods are members all the same": {
			setup: func(f *gangFixture) *corev1.Pod {
				var pod *corev1.Pod
				for _, name := range []string{"a", "b", "c"} {
					pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
					f.gang.Decided(pod, "train")
				}
				return pod
			},
		},
		"decided alone, label not written yet: held as 1 of 3": {
			setup: func(f *gangFixture) *corev1.Pod {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
				f.gang.Decided(pod, "train")
				return pod
			},
			wantReason: "PodGroup ns/train has 1 of its minMember 3 pods",
		},
		"2 of minMember 3 pods: held": {
			setup: func(f *gangFixture) *corev1.Pod {
				f.member("a", "train")
				return f.member("b", "train")
			},
			wantReason: "PodGroup ns/train has 2 of its minMember 3 pods",
		},
		"3 of 3: admitted": {
			setup: func(f *gangFixture) *corev1.Pod {
				f.member("a", "train")
				f.member("b", "train")
				return f.member("c", "train")
			},
		},
		"the PodGroup does not exist yet: held": {
			setup:      func(f *gangFixture) *corev1.Pod { return f.member("a", "missing") },
			wantReason: "PodGroup ns/missing does not exist yet",
		},
		"an operator's label is used without waiting for workmap": {
			setup: func(f *gangFixture) *corev1.Pod {
				f.addPodGroup("operators", 1, nil)
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ns", UID: "op", Labels: map[string]string{v1alpha1.PodGroupLabel: "operators"}}}
				require.NoError(t, f.pods.Add(pod))
				return pod
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newGangFixture(t)
			s := f.gang.PreEnqueue(context.Background(), tc.setup(f))
			if tc.wantReason == "" {
				require.True(t, s.IsSuccess(), "status %v", s)
				return
			}
			require.Equal(t, fwk.UnschedulableAndUnresolvable, s.Code())
			require.Contains(t, s.Message(), tc.wantReason)
		})
	}
}

func TestPermitWaitsForMinMemberThenAllowsAll(t *testing.T) {
	f := newGangFixture(t)
	a, b, c := f.member("a", "train"), f.member("b", "train"), f.member("c", "train")

	s, timeout := f.reserveAndPermit(a)
	require.Equal(t, fwk.Wait, s.Code())
	require.Equal(t, 60*time.Second, timeout, "the default wait")
	require.Contains(t, s.Message(), "1 of minMember 3")
	s, _ = f.reserveAndPermit(b)
	require.Equal(t, fwk.Wait, s.Code())

	s, _ = f.reserveAndPermit(c)
	require.True(t, s.IsSuccess())
	require.Empty(t, f.handle.waiting, "the waiting members are allowed with the last one")
}

func TestPermitTimeoutFromPodGroup(t *testing.T) {
	f := newGangFixture(t)
	f.addPodGroup("quick", 2, ptr.To[int32](5))
	s, timeout := f.reserveAndPermit(f.member("a", "quick"))
	require.Equal(t, fwk.Wait, s.Code())
	require.Equal(t, 5*time.Second, timeout)
}

func TestBoundMembersCountTowardsMinMember(t *testing.T) {
	f := newGangFixture(t)
	f.member("a", "train")
	f.member("b", "train")
	late := f.member("c", "train")
	for _, name := range []string{"a", "b"} {
		obj, _, _ := f.pods.GetByKey("ns/" + name)
		bound := obj.(*corev1.Pod).DeepCopy()
		bound.Spec.NodeName = "node"
		require.NoError(t, f.pods.Update(bound))
	}
	s, _ := f.reserveAndPermit(late)
	require.True(t, s.IsSuccess(), "2 bound (after a restart, say) + 1 reserved make 3: %v", s)
}

func TestAFailedMemberRejectsTheWaitingGangAndBacksItOff(t *testing.T) {
	f := newGangFixture(t)
	a, b, c := f.member("a", "train"), f.member("b", "train"), f.member("c", "train")
	f.reserveAndPermit(a)
	f.reserveAndPermit(b)
	waitingA := f.handle.waiting[a.UID]

	// b times out at Permit; the framework rejects it and runs Unreserve.
	f.gang.Unreserve(context.Background(), nil, b, "node")
	require.True(t, waitingA.rejected, "the other waiting member is rejected too")
	require.Contains(t, waitingA.verdict, "PodGroup ns/train rejected: member b was rejected")
	require.Equal(t, 1, f.gang.assigned("ns/train"), "b's reservation is released; a's goes when its own Unreserve runs")
	f.gang.Unreserve(context.Background(), nil, a, "node")
	require.Zero(t, f.gang.assigned("ns/train"))

	_, s := f.gang.PreFilter(context.Background(), nil, c, nil)
	require.Equal(t, fwk.Unschedulable, s.Code())
	require.Contains(t, s.Message(), "backed off")

	// Failures during the backoff do not extend it.
	_, s = f.gang.PostFilter(context.Background(), nil, c, nil)
	require.Equal(t, fwk.Unschedulable, s.Code())
	f.handle.activated = nil
	f.clock.Step(15*time.Second + time.Millisecond) // 10 s, jittered by up to half
	require.Eventually(t, func() bool { return len(f.handle.activated) == 3 }, time.Second, time.Millisecond, "the group's pods are tried again when the backoff ends")
	_, s = f.gang.PreFilter(context.Background(), nil, c, nil)
	require.True(t, s.IsSuccess(), "%v", s)
}

func TestPostFilter(t *testing.T) {
	t.Run("a member that fits nowhere rejects the gang still waiting", func(t *testing.T) {
		f := newGangFixture(t)
		a, _, c := f.member("a", "train"), f.member("b", "train"), f.member("c", "train")
		f.reserveAndPermit(a)
		waitingA := f.handle.waiting[a.UID]
		_, s := f.gang.PostFilter(context.Background(), nil, c, nil)
		require.Equal(t, fwk.Unschedulable, s.Code())
		require.True(t, waitingA.rejected)
		_, backedOff := f.gang.backoffUntil("ns/train")
		require.True(t, backedOff)
	})
	t.Run("an extra member of an admitted gang rejects nobody", func(t *testing.T) {
		f := newGangFixture(t)
		f.addPodGroup("two", 2, nil)
		a, b, extra := f.member("a", "two"), f.member("b", "two"), f.member("x", "two")
		f.reserveAndPermit(a)
		f.reserveAndPermit(b)
		_, s := f.gang.PostFilter(context.Background(), nil, extra, nil)
		require.Equal(t, fwk.Unschedulable, s.Code())
		require.Contains(t, s.Message(), "admitted")
		_, backedOff := f.gang.backoffUntil("ns/two")
		require.False(t, backedOff)
	})
	t.Run("a pod without a gang is left to the other PostFilter plugins", func(t *testing.T) {
		f := newGangFixture(t)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
		f.gang.Decided(pod, "")
		_, s := f.gang.PostFilter(context.Background(), nil, pod, nil)
		require.Equal(t, fwk.Unschedulable, s.Code())
		require.Empty(t, s.Message())
	})
}

func TestDecidedWakesThePodOnlyWhenTheDecisionChanges(t *testing.T) {
	f := newGangFixture(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
	f.gang.Decided(pod, "")
	f.gang.Decided(pod, "")
	require.Equal(t, []string{"p"}, f.handle.activated, "a status update re-syncs the pod; it must not retry it hot")
	f.gang.Decided(pod, "train")
	require.Equal(t, []string{"p", "p"}, f.handle.activated)
}

type queued struct {
	fwk.QueuedPodInfo
	pod *corev1.Pod
	ts  time.Time
}

type podInfo struct {
	fwk.PodInfo
	pod *corev1.Pod
}

func (q queued) GetPodInfo() fwk.PodInfo { return podInfo{pod: q.pod} }
func (q queued) GetTimestamp() time.Time { return q.ts }
func (p podInfo) GetPod() *corev1.Pod    { return p.pod }

func TestLessKeepsAGangTogether(t *testing.T) {
	f := newGangFixture(t)
	base := f.clock.Now()
	f.addPodGroup("early", 2, nil) // created at base, like "train"
	f.clock.Step(time.Minute)
	f.addPodGroup("late", 2, nil)
	pod := func(name, group string, prio int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{Priority: ptr.To(prio)}}
		if group != "" {
			p.Labels = map[string]string{v1alpha1.PodGroupLabel: group}
		}
		return p
	}
	tests := map[string]struct {
		a, b queued
		want bool
	}{
		"higher priority first": {
			a:    queued{pod: pod("x", "late", 10), ts: base.Add(time.Hour)},
			b:    queued{pod: pod("y", "early", 0), ts: base},
			want: true,
		},
		"the earlier group first, even if its pod was queued later": {
			a:    queued{pod: pod("x", "early", 0), ts: base.Add(2 * time.Minute)},
			b:    queued{pod: pod("y", "late", 0), ts: base.Add(time.Minute)},
			want: true,
		},
		"groups created together: by name, so they do not interleave": {
			a:    queued{pod: pod("x", "train", 0), ts: base.Add(time.Second)},
			b:    queued{pod: pod("y", "early", 0), ts: base},
			want: false,
		},
		"within a group: by queue time": {
			a:    queued{pod: pod("x", "late", 0), ts: base},
			b:    queued{pod: pod("y", "late", 0), ts: base.Add(time.Second)},
			want: true,
		},
		"pods without a gang: by queue time": {
			a:    queued{pod: pod("x", "", 0), ts: base.Add(30 * time.Second)},
			b:    queued{pod: pod("y", "late", 0), ts: base.Add(time.Hour)},
			want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, f.gang.Less(tc.a, tc.b))
			require.Equal(t, !tc.want, f.gang.Less(tc.b, tc.a), "Less is a strict order")
		})
	}
}

func TestPreFilterRejectsAGangLargerThanTheFreeCluster(t *testing.T) {
	f := newGangFixture(t)
	var last *corev1.Pod
	for _, name := range []string{"a", "b", "c"} {
		last = f.member(name, "train")
		withGPUs := last.DeepCopy()
		gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")} // the API server defaults requests from limits
		withGPUs.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: gpus, Requests: gpus}}}
		require.NoError(t, f.pods.Update(withGPUs))
	}
	_, s := f.gang.PreFilter(context.Background(), nil, last, nil)
	require.Equal(t, fwk.Unschedulable, s.Code())
	require.Contains(t, s.Message(), "needs more than the cluster has free: nvidia.com/gpu 12 (free 8)", "the PodGroup states no minResources: its pods' requests are summed")
	_, backedOff := f.gang.backoffUntil("ns/train")
	require.True(t, backedOff, "nothing reserved, and not retried hot")
}

func TestBackoffDoublesWhileAGroupKeepsFailing(t *testing.T) {
	f := newGangFixture(t)
	var waits []time.Duration
	for range 6 {
		f.gang.backOff("ns/train")
		until, ok := f.gang.backoffUntil("ns/train")
		require.True(t, ok)
		waits = append(waits, until.Sub(f.clock.Now()))
		f.clock.Step(until.Sub(f.clock.Now()) + time.Millisecond)
		require.Eventually(t, func() bool { _, ok := f.gang.backoffUntil("ns/train"); return !ok }, time.Second, time.Millisecond)
	}
	for i, want := range []time.Duration{10, 20, 40, 80, 160, 160} {
		require.GreaterOrEqual(t, waits[i], want*time.Second, "failure %d", i+1)
		require.Less(t, waits[i], want*time.Second*3/2, "failure %d: jittered by less than half", i+1)
	}
}

func TestTheLastMemberDecidedWakesTheGroup(t *testing.T) {
	f := newGangFixture(t)
	f.member("a", "train")
	f.member("b", "train")
	f.handle.activated = nil
	f.member("c", "train")
	require.ElementsMatch(t, []string{"a", "b", "c"}, f.handle.activated, "the held members go with the pod that completes the group")
}
