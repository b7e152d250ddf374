package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/workmap/workmap/grouper"
)

func hintNode(gpus string, change func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node", Labels: map[string]string{"rack": "r1"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus), corev1.ResourceCPU: resource.MustParse("8")}},
	}
	if change != nil {
		change(n)
	}
	return n
}

// TestQueueingHints: which events may make a rejected pod schedulable, and how. A pod of a
// gang that is backed off is not queued by itself (QueueSkip): its whole gang is retried.
func TestQueueingHints(t *testing.T) {
	bound := func(name string, change func(*corev1.Pod)) *corev1.Pod {
		p := gpuPod(name, 4)
		p.Spec.NodeName = "node"
		if change != nil {
			change(p)
		}
		return p
	}
	tests := map[string]struct {
		// held is the pod the hint is asked about: "a" of the gang train (3 of minMember 3),
		// "lonely" of the gang pair (1 of minMember 2), "orphan" of a PodGroup not made yet,
		// "solo" in no gang.
		held      string
		backedOff bool
		// never: the gang is backed off as one that can never fit the nodes there are.
		never    bool
		hint     func(g *Gang) fwk.QueueingHintFn
		old, new any
		want     fwk.QueueingHint
		// wantRetry: the hint asked for the gang train to be retried.
		wantRetry bool
	}{
		"a pod joins the same group":               {hint: sameGroupPod, new: gpuPod("b", 4), want: fwk.Queue},
		"a pod of another group":                   {hint: sameGroupPod, new: gpuPod("lonely", 4), want: fwk.QueueSkip},
		"the same group name in another namespace": {hint: sameGroupPod, new: gpuPod("elsewhere", 4), want: fwk.QueueSkip},
		"a pod not grouped yet":                    {hint: sameGroupPod, new: gpuPod("new", 4), want: fwk.QueueSkip},
		"the held pod itself":                      {hint: sameGroupPod, new: gpuPod("a", 4), want: fwk.Queue},
		"an added object of an unexpected type":    {hint: sameGroupPod, new: "?", want: fwk.Queue},

		"a bound pod goes while the gang is backed off: the gang is retried, not the pod": {
			backedOff: true, hint: podDeleted, old: bound("gone", nil), want: fwk.QueueSkip, wantRetry: true},
		"a bound pod finishes (the scheduler's informer drops it) while the gang is backed off": {
			backedOff: true, hint: podDeleted, old: bound("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), want: fwk.QueueSkip, wantRetry: true},
		"a pod nominated to a node goes while the gang is backed off": {
			backedOff: true, hint: podDeleted, old: &corev1.Pod{Status: corev1.PodStatus{NominatedNodeName: "node"}}, want: fwk.QueueSkip, wantRetry: true},
		"a bound pod goes while a gang too big for the nodes is backed off: nothing": {
			backedOff: true, never: true, hint: podDeleted, old: bound("gone", nil), want: fwk.QueueSkip},
		"a node is added while a gang too big for the nodes is backed off: the gang is retried": {
			backedOff: true, never: true, hint: nodeChanged, new: hintNode("8", nil), want: fwk.QueueSkip, wantRetry: true},
		"a bound pod goes, the gang not backed off: the pod is queued": {
			hint: podDeleted, old: bound("gone", nil), want: fwk.Queue},
		"an unbound pod goes: no room freed": {
			backedOff: true, hint: podDeleted, old: gpuPod("pending", 4), want: fwk.QueueSkip},
		"a bound pod goes, the held pod's gang is not complete: room does not help it": {
			held: "lonely", hint: podDeleted, old: bound("gone", nil), want: fwk.QueueSkip},
		"a bound pod goes, the held pod's PodGroup does not exist: room does not help it": {
			held: "orphan", hint: podDeleted, old: bound("gone", nil), want: fwk.QueueSkip},
		"a bound pod goes, the held pod is in no gang: queued": {
			held: "solo", hint: podDeleted, old: bound("gone", nil), want: fwk.Queue},
		"a deleted object of an unexpected type": {hint: podDeleted, old: "?", want: fwk.Queue},

		"a node is added that a pod like the held one fits, the gang backed off": {
			backedOff: true, hint: nodeChanged, new: hintNode("8", nil), want: fwk.QueueSkip, wantRetry: true},
		"a node is added that a pod like the held one fits, the gang not backed off": {
			hint: nodeChanged, new: hintNode("8", nil), want: fwk.Queue},
		"a node is added with too few GPUs for one pod": {
			backedOff: true, hint: nodeChanged, new: hintNode("2", nil), want: fwk.QueueSkip},
		"a node is added without GPUs": {
			backedOff: true, hint: nodeChanged, new: hintNode("0", func(n *corev1.Node) { delete(n.Status.Allocatable, "nvidia.com/gpu") }), want: fwk.QueueSkip},
		"a node gets more GPUs": {
			backedOff: true, hint: nodeChanged, old: hintNode("4", nil), new: hintNode("8", nil), want: fwk.QueueSkip, wantRetry: true},
		"a node gets fewer GPUs": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("4", nil), want: fwk.QueueSkip},
		"a node gets more of what the pod does not ask for": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("8", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("16") }), want: fwk.QueueSkip},
		"a node's labels change (another topology domain)": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("8", func(n *corev1.Node) { n.Labels["rack"] = "r2" }), want: fwk.QueueSkip, wantRetry: true},
		"a node loses a taint": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("8", func(n *corev1.Node) { n.Spec.Taints = nil }), want: fwk.QueueSkip, wantRetry: true},
		"a node's taint changes its value": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("8", func(n *corev1.Node) { n.Spec.Taints[0].Value = "false" }), want: fwk.QueueSkip, wantRetry: true},
		"a node gets one more taint": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("8", func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})
			}), want: fwk.QueueSkip},
		"a cordoned node is uncordoned": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", func(n *corev1.Node) { n.Spec.Unschedulable = true }), new: hintNode("8", nil), want: fwk.QueueSkip, wantRetry: true},
		"a node is cordoned": {
			backedOff: true, hint: nodeChanged, old: hintNode("8", nil), new: hintNode("8", func(n *corev1.Node) { n.Spec.Unschedulable = true }), want: fwk.QueueSkip},
		"a node object of an unexpected type": {hint: nodeChanged, new: "?", want: fwk.Queue},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newGangFixture(t)
			f.addPodGroup("pair", 2, nil)
			for _, p := range []string{"a", "b", "c"} {
				f.decide(gpuPod(p, 4), "train")
			}
			f.decide(gpuPod("lonely", 4), "pair")
			f.decide(gpuPod("solo", 4), "")
			f.members.Join(gpuPod("orphan", 4), grouper.Placement{Key: "ns/theirs", Namespace: "ns", Name: "theirs"}, f.clock.Now())
			elsewhere := gpuPod("elsewhere", 4)
			elsewhere.Namespace = "other"
			f.members.Join(elsewhere, grouper.Placement{Key: "other/train", Namespace: "other", Name: "train", Desired: f.groups["train"]}, f.clock.Now())
			if tc.backedOff {
				f.gang.backOff("ns/train", grouper.Cause{Never: tc.never, Message: "PodGroup ns/train needs more than the cluster has free: nvidia.com/gpu 8 (0 free)"})
			}
			held := tc.held
			if held == "" {
				held = "a"
			}
			got, err := tc.hint(f.gang)(klog.Background(), gpuPod(held, 4), tc.old, tc.new)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantRetry, f.gang.retrier.pending() == 1, "the gang asked to be retried")
		})
	}
}

func sameGroupPod(g *Gang) fwk.QueueingHintFn { return g.sameGroupPod }
func podDeleted(g *Gang) fwk.QueueingHintFn   { return g.assignedPodDeleted }
func nodeChanged(g *Gang) fwk.QueueingHintFn  { return g.nodeChanged }

// TestRoomRetriesABackedOffGang: when room appears, a backed-off gang is retried as a whole,
// at once and past its backoff, however many of its pods the event concerned; events that keep
// coming retry it at most once per retryGap.
func TestRoomRetriesABackedOffGang(t *testing.T) {
	f := newGangFixture(t)
	pods := []*corev1.Pod{f.member("a", "train"), f.member("b", "train"), f.member("c", "train")}
	f.handle.clearActivated() // woken as they were grouped
	ctx := context.Background()
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "node"}}
	roomAppears := func() {
		// The scheduling queue asks the hint for each of the gang's pods it holds.
		for _, p := range pods {
			hint, err := f.gang.assignedPodDeleted(klog.Background(), p, gone, nil)
			require.NoError(t, err)
			require.Equal(t, fwk.QueueSkip, hint, "not queued one by one: the gang is retried")
		}
	}
	fails := func() {
		const cause = "PodGroup ns/train needs more than the cluster has free: nvidia.com/gpu 8 (0 free)"
		f.gang.backOff("ns/train", grouper.Cause{Message: cause})
		_, s := f.gang.PreFilter(ctx, framework.NewCycleState(), pods[0], nil)
		require.Equal(t, fwk.Unschedulable, s.Code())
		require.Equal(t, cause, s.Message(), "backed off: the reason it failed")
	}
	retried := func(msg string) {
		t.Helper()
		require.Eventually(t, func() bool { return len(f.handle.activatedNow()) == 3 }, time.Second, time.Millisecond, msg)
		require.ElementsMatch(t, []string{"a", "b", "c"}, f.handle.activatedNow(), "all the gang's pods go to the active queue")
		_, backedOff := f.backedOff("train")
		require.False(t, backedOff, "the backoff ended early")
		_, s := f.gang.PreFilter(ctx, framework.NewCycleState(), pods[0], nil)
		require.True(t, s.IsSuccess() || s.IsSkip(), "admitted to the filters: %v", s)
		f.handle.clearActivated()
	}

	fails()
	roomAppears()
	f.clock.Step(retryDelay)
	retried("retried right after the room appeared, not after the 10 s backoff")

	// The retry fails (room came piece by piece); more room appears at once, and again.
	fails()
	roomAppears()
	f.clock.Step(retryDelay)
	time.Sleep(10 * time.Millisecond)
	require.Empty(t, f.handle.activatedNow(), "retried %s ago: not again before retryGap", retryDelay)
	roomAppears()
	f.clock.Step(retryGap - retryDelay)
	retried("retried once more after retryGap, for both events")
	f.clock.Step(time.Minute)
	time.Sleep(10 * time.Millisecond)
	require.Empty(t, f.handle.activatedNow(), "nothing left to retry; the ended backoff's own wake-up wakes nothing")
	require.Zero(t, f.gang.retrier.pending())
}
