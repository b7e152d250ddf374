package plugin

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// fakeHandle is the part of the scheduler framework the plugin uses: the pod informer, the
// waiting pods, Activate, the clientset (Bind) and the event recorder.
type fakeHandle struct {
	fwk.Handle
	client    *fake.Clientset
	factory   informers.SharedInformerFactory
	snapshot  fwk.SharedLister
	recorder  *events.FakeRecorder
	waiting   map[types.UID]*fakeWaitingPod
	mu        sync.Mutex // guards activated: the clock's timers activate pods from goroutines
	activated []string
}

func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
func (h *fakeHandle) SnapshotSharedLister() fwk.SharedLister                 { return h.snapshot }
func (h *fakeHandle) EventRecorder() events.EventRecorderLogger              { return h.recorder }
func (h *fakeHandle) APICacher() fwk.APICacher                               { return nil }
func (h *fakeHandle) ClientSet() kubernetes.Interface                        { return h.client }

func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	if wp, ok := h.waiting[uid]; ok {
		return wp
	}
	return nil
}

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range pods {
		h.activated = append(h.activated, p.Name)
	}
}

// activatedNow returns the pods activated so far.
func (h *fakeHandle) activatedNow() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.activated)
}

func (h *fakeHandle) clearActivated() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.activated = nil
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

// gangFixture is a plugin on a fake handle and a membership view with one gang "train" of
// minMember 3 that workmap decided.
type gangFixture struct {
	t       *testing.T
	gang    *Gang
	handle  *fakeHandle
	clock   *testingclock.FakeClock
	members *grouper.Membership
	// groups are the PodGroups workmap decided, by name.
	groups map[string]*v1alpha1.PodGroup
}

func newGangFixture(t *testing.T) *gangFixture {
	client := fake.NewClientset()
	h := &fakeHandle{
		client: client, factory: informers.NewSharedInformerFactory(client, 0), waiting: map[types.UID]*fakeWaitingPod{},
		recorder: events.NewFakeRecorder(100),
		snapshot: schedcache.NewSnapshot(nil, []*corev1.Node{{
			ObjectMeta: metav1.ObjectMeta{Name: "node"},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}},
		}}),
	}
	clk := testingclock.NewFakeClock(time.Now())
	args, err := DecodeArgs(nil)
	require.NoError(t, err)
	members := grouper.NewMembership(h)
	f := &gangFixture{t: t, gang: New(h, args, members, clk), handle: h, clock: clk, members: members, groups: map[string]*v1alpha1.PodGroup{}}
	f.addPodGroup("train", 3, nil)
	return f
}

// addPodGroup makes a gang workmap decides (its PodGroup as the grouper would desire it).
func (f *gangFixture) addPodGroup(name string, minMember int32, timeout *int32) {
	f.groups[name] = &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{grouper.ManagedByLabel: grouper.ManagedByValue}},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember, ScheduleTimeoutSeconds: timeout},
	}
}

// decide records a pod's grouping as the grouper does, waking it ("" for none).
func (f *gangFixture) decide(pod *corev1.Pod, group string) {
	p := grouper.Placement{}
	if group != "" {
		p = grouper.Placement{Key: "ns/" + group, Namespace: "ns", Name: group, Desired: f.groups[group]}
	}
	view, changed := f.members.Join(pod, p, f.clock.Now())
	f.members.Wake(pod, view, changed)
}

// member creates a pod and puts it in a group.
func (f *gangFixture) member(name, group string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
	f.decide(pod, group)
	return pod
}

// assigned is how many of a group's pods hold a node.
func (f *gangFixture) assigned(group string) int {
	g, _ := f.members.Group("ns/" + group)
	return g.Assigned
}

// backedOff says whether a group is backed off now.
func (f *gangFixture) backedOff(group string) (time.Time, bool) {
	g, _ := f.members.Group("ns/" + group)
	return g.BackoffUntil, f.clock.Now().Before(g.BackoffUntil)
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
			setup: func(f *gangFixture) *corev1.Pod { return f.member("p", "") },
		},
		"decided alone: held as 1 of 3": {
			setup:      func(f *gangFixture) *corev1.Pod { return f.member("p", "train") },
			wantReason: "waiting for 2 more pods of PodGroup ns/train (1 of minMember 3 created)",
		},
		"2 of minMember 3 pods: held": {
			setup: func(f *gangFixture) *corev1.Pod {
				f.member("a", "train")
				return f.member("b", "train")
			},
			wantReason: "waiting for 1 more pod of PodGroup ns/train (2 of minMember 3 created)",
		},
		"3 of 3: admitted, no PodGroup object needed": {
			setup: func(f *gangFixture) *corev1.Pod {
				f.member("a", "train")
				f.member("b", "train")
				return f.member("c", "train")
			},
		},
		"an operator's PodGroup that does not exist yet: held": {
			setup: func(f *gangFixture) *corev1.Pod {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "a"}}
				f.members.Join(pod, grouper.Placement{Key: "ns/missing", Namespace: "ns", Name: "missing"}, f.clock.Now())
				return pod
			},
			wantReason: "waiting for PodGroup ns/missing to exist",
		},
		"an operator's PodGroup gives the gang its minMember": {
			setup: func(f *gangFixture) *corev1.Pod {
				f.members.SetPodGroup("ns/operators", &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "operators", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: 1}})
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ns", UID: "op", Labels: map[string]string{v1alpha1.PodGroupLabel: "operators"}}}
				f.members.Join(pod, grouper.Placement{Key: "ns/operators", Namespace: "ns", Name: "operators"}, f.clock.Now())
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
		bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}, Spec: corev1.PodSpec{NodeName: "node"}}
		require.True(t, f.members.Update(bound))
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
	const cause = "PodGroup ns/train: member b was turned away before the gang was complete"
	require.Equal(t, cause, waitingA.verdict)
	require.Equal(t, 1, f.assigned("train"), "b's reservation is released; a's goes when its own Unreserve runs")
	f.gang.Unreserve(context.Background(), nil, a, "node")
	require.Zero(t, f.assigned("train"))

	_, s := f.gang.PreFilter(context.Background(), framework.NewCycleState(), c, nil)
	require.Equal(t, fwk.Unschedulable, s.Code())
	require.Equal(t, cause, s.Message(), "backed off, the gang's pods say why it failed")

	// Failures during the backoff do not extend it, and say the same cause.
	_, s = f.gang.PostFilter(context.Background(), nil, c, nil)
	require.Equal(t, fwk.Unschedulable, s.Code())
	require.Equal(t, cause, s.Message(), "a member failing during the backoff says the gang's cause")
	f.handle.activated = nil
	f.clock.Step(15*time.Second + time.Millisecond) // 10 s, jittered by up to half
	require.Eventually(t, func() bool { return len(f.handle.activated) == 3 }, time.Second, time.Millisecond, "the group's pods are tried again when the backoff ends")
	_, s = f.gang.PreFilter(context.Background(), framework.NewCycleState(), c, nil)
	require.True(t, s.IsSuccess() || s.IsSkip(), "admitted to the filters: %v", s)
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
		_, backedOff := f.backedOff("train")
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
		_, backedOff := f.backedOff("two")
		require.False(t, backedOff)
	})
	t.Run("a pod without a gang backs no gang off", func(t *testing.T) {
		f := newGangFixture(t)
		pod := f.member("p", "")
		_, s := f.gang.PostFilter(context.Background(), nil, pod, nil)
		require.Equal(t, fwk.Unschedulable, s.Code())
		require.Empty(t, s.Message())
	})
}

func TestDecidedWakesThePodOnlyWhenTheDecisionChanges(t *testing.T) {
	f := newGangFixture(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
	f.decide(pod, "")
	f.decide(pod, "")
	require.Equal(t, []string{"p"}, f.handle.activated, "a status update re-syncs the pod; it must not retry it hot")
	f.decide(pod, "train")
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
	f.addPodGroup("early", 2, nil)
	f.addPodGroup("late", 2, nil)
	f.member("seed-train", "train") // "train" and "early" are first seen at base
	f.member("seed-early", "early")
	f.clock.Step(time.Minute)
	f.member("seed-late", "late")
	pod := func(name, group string, prio int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-" + group)}, Spec: corev1.PodSpec{Priority: ptr.To(prio)}}
		f.decide(p, group)
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
		"groups seen together: by name, so they do not interleave": {
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

// TestPreFilterTurnsAwayAGangLargerThanTheCluster: a gang that needs more than all nodes
// together have is told it can never fit (preemption cannot help), and keeps that reason while
// it is backed off.
func TestPreFilterTurnsAwayAGangLargerThanTheCluster(t *testing.T) {
	f := newGangFixture(t)
	var last *corev1.Pod
	for _, name := range []string{"a", "b", "c"} {
		gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")} // the API server defaults requests from limits
		last = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: gpus, Requests: gpus}}}},
		}
		f.decide(last, "train")
	}
	const cause = "PodGroup ns/train can never fit this cluster as it is: it needs nvidia.com/gpu 12 (its one node has 8)"
	_, s := f.gang.PreFilter(context.Background(), framework.NewCycleState(), last, nil)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, s.Code())
	require.Equal(t, cause, s.Message(), "the PodGroup states no minResources: its pods' requests are summed")
	_, backedOff := f.backedOff("train")
	require.True(t, backedOff, "nothing reserved, and not retried hot")
	_, s = f.gang.PreFilter(context.Background(), framework.NewCycleState(), last, nil)
	require.Equal(t, fwk.UnschedulableAndUnresolvable, s.Code())
	require.Equal(t, cause, s.Message(), "backed off, the same reason")
}

func TestBackoffDoublesWhileAGroupKeepsFailing(t *testing.T) {
	f := newGangFixture(t)
	f.member("a", "train") // backoff state lives with the group
	var waits []time.Duration
	for range 6 {
		f.gang.backOff("ns/train", grouper.Cause{Message: "PodGroup ns/train needs more than the cluster has free: nvidia.com/gpu 8 (0 free)"})
		until, ok := f.backedOff("train")
		require.True(t, ok)
		waits = append(waits, until.Sub(f.clock.Now()))
		f.clock.Step(until.Sub(f.clock.Now()) + time.Millisecond)
		_, ok = f.backedOff("train")
		require.False(t, ok)
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

func TestBindCarriesThePodGroupLabel(t *testing.T) {
	tests := map[string]struct {
		group      string // "" for none; "operators" is an operator's PodGroup
		wantSkip   bool
		wantLabels map[string]string
	}{
		"a member of workmap's gang: bound with its label":                                   {group: "train", wantLabels: map[string]string{v1alpha1.PodGroupLabel: "train"}},
		"a pod in no gang: left to DefaultBinder":                                            {wantSkip: true},
		"a member of an operator's gang: left to DefaultBinder, its label is the operator's": {group: "operators", wantSkip: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newGangFixture(t)
			var bindings []*corev1.Binding
			f.handle.client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "binding" {
					return false, nil, nil
				}
				bindings = append(bindings, action.(clienttesting.CreateAction).GetObject().(*corev1.Binding))
				return true, nil, nil
			})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
			switch tc.group {
			case "operators":
				pod.Labels = map[string]string{v1alpha1.PodGroupLabel: "operators"}
				f.members.Join(pod, grouper.Placement{Key: "ns/operators", Namespace: "ns", Name: "operators"}, f.clock.Now())
			default:
				f.decide(pod, tc.group)
			}
			s := f.gang.Bind(context.Background(), nil, pod, "node")
			if tc.wantSkip {
				require.Equal(t, fwk.Skip, s.Code())
				require.Empty(t, bindings)
				return
			}
			require.True(t, s.IsSuccess(), "%v", s)
			require.Len(t, bindings, 1)
			require.Equal(t, "node", bindings[0].Target.Name)
			require.Equal(t, types.UID("p"), bindings[0].UID)
			require.Equal(t, tc.wantLabels, bindings[0].Labels)
			require.Equal(t, "true", bindings[0].Annotations[grouper.GroupedAnnotation])
		})
	}
}

// TestHeldPodsSayWhy: a pod held before scheduling gets one event per reason once the reason
// has held a while — not one per attempt, none for a moment's wait, none from a standby.
func TestHeldPodsSayWhy(t *testing.T) {
	f := newGangFixture(t)
	pods := f.handle.factory.Core().V1().Pods().Informer().GetIndexer()
	a := f.member("a", "train")
	require.NoError(t, pods.Add(a))
	events := func() []string {
		var out []string
		for {
			select {
			case e := <-f.handle.recorder.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	for range 5 {
		f.gang.PreEnqueue(context.Background(), a) // retried: the reason stays
	}
	f.gang.held.report(true)
	require.Empty(t, events(), "held for a moment only")

	f.clock.Step(heldReportAfter)
	f.gang.held.report(false)
	require.Empty(t, events(), "a standby writes nothing")
	f.gang.held.report(true)
	require.Equal(t, []string{"Normal WaitingForGang waiting for 2 more pods of PodGroup ns/train (1 of minMember 3 created)"}, events())
	f.gang.PreEnqueue(context.Background(), a)
	f.clock.Step(time.Minute)
	f.gang.held.report(true)
	require.Empty(t, events(), "one event per reason")

	b, c := f.member("b", "train"), f.member("c", "train")
	for _, p := range []*corev1.Pod{b, c} {
		require.NoError(t, pods.Add(p))
	}
	require.True(t, f.gang.PreEnqueue(context.Background(), a).IsSuccess())
	require.Zero(t, f.gang.held.len(), "released pods are forgotten")

	f.gang.PreEnqueue(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", UID: "gone"}})
	require.Equal(t, 1, f.gang.held.len())
	f.gang.held.report(true)
	require.Zero(t, f.gang.held.len(), "deleted pods are forgotten")
}

// TestHeldReasonFollowsTheGroup: a held pod's event says how many pods its gang waits for now,
// though only the pod that joined was tried again: the first pod of a gang of three, held while
// it was alone, reports the second one's arrival too.
func TestHeldReasonFollowsTheGroup(t *testing.T) {
	f := newGangFixture(t)
	pods := f.handle.factory.Core().V1().Pods().Informer().GetIndexer()
	a := f.member("a", "train")
	require.NoError(t, pods.Add(a))
	f.gang.PreEnqueue(context.Background(), a)
	b := f.member("b", "train") // joins; a is not tried again
	require.NoError(t, pods.Add(b))
	f.gang.PreEnqueue(context.Background(), b)

	events := func() []string {
		var got []string
		for len(f.handle.recorder.Events) > 0 {
			got = append(got, <-f.handle.recorder.Events)
		}
		return got
	}
	want := "Normal WaitingForGang waiting for 1 more pod of PodGroup ns/train (2 of minMember 3 created)"
	f.clock.Step(heldReportAfter)
	f.gang.held.report(true)
	require.Equal(t, []string{want}, events(), "b's reason; a's old one (2 more pods) is not reported")
	f.clock.Step(heldReportAfter)
	f.gang.held.report(true)
	require.Equal(t, []string{want}, events(), "a says what the gang waits for now")
}
