package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/workmap/workmap/grouper"
)

// heldReason is why PreEnqueue holds a pod; it is the reason of the event that says so.
type heldReason string

const (
	heldNotGrouped heldReason = "WaitingForGrouping"
	heldNoPodGroup heldReason = "WaitingForPodGroup"
	heldIncomplete heldReason = "WaitingForGang"
)

// heldReportAfter is how long a pod is held for one reason before an event says so: gangs
// whose pods arrive together are held for moments, and cost no event. Waiting for the grouping
// itself is reported only when it lasts (a backlog of thousands of pods is grouped in seconds;
// an owner that never appears is not).
const (
	heldReportAfter           = 3 * time.Second
	heldNotGroupedReportAfter = 30 * time.Second
)

// heldPods remembers why each pod is held before scheduling, so that `kubectl describe pod`
// can tell ("waiting for 3 more pods of PodGroup ns/x"): one event per pod and change of what
// it waits for, written by the leader once that has held for heldReportAfter — never one per
// scheduling attempt. Pods leave it when released, bound or deleted.
type heldPods struct {
	handle  fwk.Handle
	members *grouper.Membership
	clock   clock.Clock

	mu   sync.Mutex
	pods map[types.UID]*heldPod
}

type heldPod struct {
	pod     *corev1.Pod
	reason  heldReason
	message string
	since   time.Time
	// reported is the reason and message last written as an event.
	reported [2]string
}

func newHeldPods(h fwk.Handle, members *grouper.Membership, clk clock.Clock) *heldPods {
	return &heldPods{handle: h, members: members, clock: clk, pods: map[types.UID]*heldPod{}}
}

// why says whether the pod is to be held before scheduling, and why: not grouped yet, its
// PodGroup not made yet, or fewer than minMember pods of its group created. Both PreEnqueue
// and the reports ask it, so a held pod's reason follows its group as other members arrive.
func (h *heldPods) why(pod *corev1.Pod) (heldReason, string, bool) {
	key, decided := h.members.Decided(pod.UID)
	if !decided {
		return heldNotGrouped, "waiting for workmap to group the pod", true
	}
	if key == "" {
		return "", "", false
	}
	group, _ := h.members.Group(key)
	if !group.Known {
		return heldNoPodGroup, fmt.Sprintf("waiting for PodGroup %s to exist", key), true
	}
	if missing := int(group.Spec.MinMember) - group.Members; missing > 0 && !leaderFirstBatch(group) {
		return heldIncomplete, fmt.Sprintf("waiting for %d more %s of PodGroup %s (%d of minMember %d created)", missing, pods(missing), key, group.Members, group.Spec.MinMember), true
	}
	return "", "", false
}

func pods(n int) string {
	if n == 1 {
		return "pod"
	}
	return "pods"
}

// hold records why the pod is held and returns the status that holds it.
func (h *heldPods) hold(pod *corev1.Pod, reason heldReason, message string) *fwk.Status {
	h.mu.Lock()
	e := h.pods[pod.UID]
	if e == nil {
		e = &heldPod{}
		h.pods[pod.UID] = e
	}
	e.pod = pod
	e.set(reason, message, h.clock.Now())
	h.mu.Unlock()
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, message)
}

// set records a held pod's reason; a new one starts its clock.
func (e *heldPod) set(reason heldReason, message string, now time.Time) {
	if e.reason != reason || e.message != message {
		e.since = now
	}
	e.reason, e.message = reason, message
}

// release forgets a pod that is no longer held; it returns the status that lets it go (nil).
func (h *heldPods) release(pod *corev1.Pod) *fwk.Status {
	h.mu.Lock()
	delete(h.pods, pod.UID)
	h.mu.Unlock()
	return nil
}

// run reports held pods every second until ctx ends; only the leader writes events.
func (h *heldPods) run(ctx context.Context, leader *grouper.Leader) {
	wait.UntilWithContext(ctx, func(context.Context) { h.report(leader.Leading()) }, time.Second)
}

// report forgets pods that are gone or bound, brings each held pod's reason up to date (its
// group may have grown since PreEnqueue last saw it) and, when leading, writes an event for
// each pod held long enough for a reason (or message) not reported yet.
func (h *heldPods) report(leading bool) {
	lister := h.handle.SharedInformerFactory().Core().V1().Pods().Lister()
	type due struct {
		pod     *corev1.Pod
		reason  heldReason
		message string
	}
	var events []due
	h.mu.Lock()
	for uid, e := range h.pods {
		current, err := lister.Pods(e.pod.Namespace).Get(e.pod.Name)
		if err != nil || current.UID != uid || current.Spec.NodeName != "" {
			delete(h.pods, uid)
			continue
		}
		reason, message, held := h.why(current)
		if !held {
			continue // released at its next PreEnqueue
		}
		e.set(reason, message, h.clock.Now())
		after := heldReportAfter
		if e.reason == heldNotGrouped {
			after = heldNotGroupedReportAfter
		}
		if what := [2]string{string(e.reason), e.message}; leading && e.reported != what && h.clock.Since(e.since) >= after {
			e.reported = what
			events = append(events, due{current, e.reason, e.message})
		}
	}
	h.mu.Unlock()
	for _, ev := range events {
		h.handle.EventRecorder().Eventf(ev.pod, nil, corev1.EventTypeNormal, string(ev.reason), "Scheduling", "%s", ev.message)
	}
}

// len reports how many pods are remembered (for tests).
func (h *heldPods) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pods)
}
