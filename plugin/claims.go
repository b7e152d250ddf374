package plugin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/workmap/workmap/grouper"
)

// ReasonMissingClaimSource is the reason of the event on a pod that waits for a device claim
// that can never be made: its ResourceClaimTemplate, or the ResourceClaim it names, does not
// exist.
const ReasonMissingClaimSource = "MissingResourceClaim"

// missingClaimReportAfter is how long a pod's claim may be missing before it is reported:
// kube-controller-manager makes a template's claim moments after the pod is created.
const missingClaimReportAfter = 5 * time.Second

// missingClaims tells of the pods of workmap's gangs that wait for a device claim that can
// never be made. Kubernetes' DynamicResources plugin holds such a pod before scheduling, with
// no event and no condition, until its ResourceClaim exists, which for a template that does not
// exist (or a named claim nobody makes) is never: its gang would wait with no reason anywhere.
// Once a pod has waited missingClaimReportAfter, its gang gets the reason that it can never fit
// as it is, and (by the leader, once per change) the pod a Warning event and its PodScheduled
// condition saying which template or claim is missing. Pods are tracked from the handle's pod
// informer: only unbound pods of this profile with a claim not made yet.
type missingClaims struct {
	handle  fwk.Handle
	members *grouper.Membership
	clock   clock.Clock

	mu sync.Mutex
	// waiting are the pods with a claim not made yet.
	waiting map[types.UID]waitingPod
}

// waitingPod is a pod that waits for a claim to be made, since when; gang and cause are its
// gang and the cause given it once its claim was found to be one that cannot be made, and
// reported the message last written of it.
type waitingPod struct {
	namespace, name string
	since           time.Time
	gang            string
	cause           grouper.Cause
	reported        string
}

func newMissingClaims(h fwk.Handle, members *grouper.Membership, clk clock.Clock) *missingClaims {
	return &missingClaims{handle: h, members: members, clock: clk, waiting: map[types.UID]waitingPod{}}
}

// watch tracks the profile's pods through the handle's pod informer, and registers the
// informers of ResourceClaims and ResourceClaimTemplates (the handle's factory starts them).
func (m *missingClaims) watch() error {
	factory := m.handle.SharedInformerFactory()
	factory.Resource().V1().ResourceClaimTemplates().Informer()
	factory.Resource().V1().ResourceClaims().Informer()
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.track,
		UpdateFunc: func(_, obj any) { m.track(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok && len(pod.Spec.ResourceClaims) > 0 {
				m.forget(pod.UID)
			}
		},
	})
	return err
}

// track notes a pod that waits for a claim to be made, and forgets one that does not.
func (m *missingClaims) track(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || len(pod.Spec.ResourceClaims) == 0 {
		return // a pod's claims are immutable: one without any is never tracked
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Spec.SchedulerName != m.handle.ProfileName() || !waitsForClaim(pod) {
		if key, _ := m.members.Decided(pod.UID); m.forget(pod.UID) && key != "" {
			// Its claim was made after all: the gang, held back for it, goes again now.
			m.members.Retry(key, m.clock.Now())
		}
		return
	}
	m.mu.Lock()
	if _, ok := m.waiting[pod.UID]; !ok {
		m.waiting[pod.UID] = waitingPod{namespace: pod.Namespace, name: pod.Name, since: m.clock.Now()}
	}
	m.mu.Unlock()
}

// forget stops tracking a pod; it reports whether the pod had been reported.
func (m *missingClaims) forget(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	reported := m.waiting[uid].reported != ""
	delete(m.waiting, uid)
	return reported
}

// waitsForClaim says whether a pod has a claim from a template that is not made yet (its
// status names none for it), or names a claim: the DynamicResources plugin holds it until the
// claim exists.
func waitsForClaim(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil || (c.ResourceClaimTemplateName != nil && madeClaim(pod, c.Name) == "") {
			return true
		}
	}
	return false
}

// madeClaim is the name of the claim made for a pod's template claim ("": none yet).
func madeClaim(pod *corev1.Pod, claim string) string {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == claim && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// run checks the waiting pods every second until ctx ends; only the leader writes.
func (m *missingClaims) run(ctx context.Context, leader *grouper.Leader) {
	wait.UntilWithContext(ctx, func(ctx context.Context) { m.check(ctx, leader.Leading()) }, time.Second)
}

// check reports each pod that has waited long enough for a claim that cannot be made.
func (m *missingClaims) check(ctx context.Context, leading bool) {
	m.mu.Lock()
	due := map[types.UID]waitingPod{}
	for uid, w := range m.waiting {
		if m.clock.Since(w.since) >= missingClaimReportAfter {
			due[uid] = w
		}
	}
	m.mu.Unlock()
	pods := m.handle.SharedInformerFactory().Core().V1().Pods().Lister()
	for uid, w := range due {
		current, err := pods.Pods(w.namespace).Get(w.name)
		if err != nil || current.UID != uid {
			continue
		}
		key, _ := m.members.Decided(uid)
		missing := m.missing(current)
		if missing == "" {
			continue
		}
		message := fmt.Sprintf("pod %s can never be scheduled as it is: %s", current.Name, missing)
		cause := grouper.Cause{Never: true, Message: message}
		if key != "" {
			cause.Message = fmt.Sprintf("PodGroup %s can never fit this cluster as it is: %s", key, message)
			m.members.Explain(key, cause, m.clock.Now())
		}
		m.mu.Lock()
		e, tracked := m.waiting[uid]
		write := tracked && leading && e.reported != cause.Message
		if tracked {
			e.gang, e.cause = key, cause
			if write {
				e.reported = cause.Message
			}
			m.waiting[uid] = e
		}
		m.mu.Unlock()
		if write {
			m.report(ctx, current, cause.Message, m.clock.Now())
		}
	}
}

// gangCause is the cause given to a gang one of whose pods waits for a claim that cannot be
// made (zero: none does).
func (m *missingClaims) gangCause(key string) grouper.Cause {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.waiting {
		if w.gang == key && w.cause.Message != "" {
			return w.cause
		}
	}
	return grouper.Cause{}
}

// missing says which of a pod's claims cannot be made: its template, or the claim it names,
// does not exist ("": none, or not known yet).
func (m *missingClaims) missing(pod *corev1.Pod) string {
	resources := m.handle.SharedInformerFactory().Resource().V1()
	var out []string
	for _, c := range pod.Spec.ResourceClaims {
		switch {
		case c.ResourceClaimTemplateName != nil && madeClaim(pod, c.Name) == "":
			_, err := resources.ResourceClaimTemplates().Lister().ResourceClaimTemplates(pod.Namespace).Get(*c.ResourceClaimTemplateName)
			if apierrors.IsNotFound(err) {
				out = append(out, fmt.Sprintf("its claim %s is to be made from ResourceClaimTemplate %s/%s, which does not exist", c.Name, pod.Namespace, *c.ResourceClaimTemplateName))
			}
		case c.ResourceClaimName != nil:
			_, err := resources.ResourceClaims().Lister().ResourceClaims(pod.Namespace).Get(*c.ResourceClaimName)
			if apierrors.IsNotFound(err) {
				out = append(out, fmt.Sprintf("its claim %s names ResourceClaim %s/%s, which does not exist", c.Name, pod.Namespace, *c.ResourceClaimName))
			}
		}
	}
	return strings.Join(out, "; ")
}

// report writes the pod's event and its PodScheduled condition, as kube-scheduler does for a
// pod it could not place.
func (m *missingClaims) report(ctx context.Context, pod *corev1.Pod, message string, now time.Time) {
	m.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeWarning, ReasonMissingClaimSource, "Scheduling", "%s", message)
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"reason":%q,"message":%q,"lastTransitionTime":%q}]}}`,
		corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, message, now.UTC().Format(time.RFC3339))
	if _, err := m.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		klog.FromContext(ctx).V(2).Info("setting the PodScheduled condition of a pod whose claim cannot be made failed", "pod", klog.KObj(pod), "err", err)
	}
}
