package plugin

import (
	"context"
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

// hold records why the pod is held and returns the status that holds it.
func (h *heldPods) hold(pod *corev1.Pod, reason heldReason, message string) *fwk.Status {
	h.mu.Lock()
	e := h.pods[pod.UID]
	if e == nil {
		e = &heldPod{}
		h.pods[pod.UID] = e
	}
	if e.reason != reason || e.message != message {
		e.since = h.clock.Now()
	}
	e.pod, e.reason, e.message = pod, reason, message
	h.mu.Unlock()
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, message)
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

// report forgets pods that are gone or bound and, when leading, writes an event for each pod
// held long enough for a reason (or message) not reported yet.
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
