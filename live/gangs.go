package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/internal/access"
	"github.com/workmap/workmap/internal/nativeapi"
)

var (
	// PodGroupsResource are the scheduling.x-k8s.io PodGroups workmap-scheduler makes.
	PodGroupsResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	eventsResource    = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// ErrNativePodGroupsNotServed: the native PodGroup resource GangOptions named is not served;
// the discovery that named it is stale (a cluster upgraded, or another cluster at the same
// address). Read discovery again and retry.
var ErrNativePodGroupsNotServed = errors.New("the native PodGroups named are not served")

// DefaultGangScheduler is the scheduler that gangs pods unless told otherwise.
const DefaultGangScheduler = "workmap-scheduler"

// GangOptions say how gang states are read.
type GangOptions struct {
	// Schedulers are the scheduler names that gang pods; a gang whose pods ask for none of
	// them is not in effect. Empty: DefaultGangScheduler.
	Schedulers []string
	// Reasons reads, for each gang that waits, the newest scheduling event of one of its
	// pending pods: one list call per waiting gang, through Client.
	Reasons bool
	// NativePodGroups is the native scheduling.k8s.io PodGroup resource the cluster serves
	// (nil: none). A gang whose pods ask for a scheduler that does not gang them is then looked
	// up among the native PodGroups (workmap-webhook makes them with the same names): found,
	// Kubernetes' own scheduler gangs it.
	NativePodGroups *schema.GroupVersionResource
}

// The backends that hold a gang (GangState.Backend).
const (
	BackendWorkmap = "scheduling.x-k8s.io" // a PodGroup of workmap-scheduler's (or an operator's)
	BackendNative  = "scheduling.k8s.io"   // a native PodGroup, for kube-scheduler's GangScheduling
)

// schedulingReasons are the event reasons that say why a pod waits to be scheduled:
// kube-scheduler's, and workmap-scheduler's for a pod held until its gang is complete or for a
// device claim that cannot be made.
var schedulingReasons = []string{"FailedScheduling", "WaitingForGang", "WaitingForPodGroup", "WaitingForGrouping", "MissingResourceClaim"}

// GangStates sets the State of each of the workload's gangs from the cluster: one list of the
// PodGroups in its namespace (through Lister or Cache when set), and with o.Reasons one
// list of events per waiting gang.
func (r *Resolver) GangStates(ctx context.Context, w *definitions.Workload, o GangOptions) error {
	if len(w.Groups) == 0 {
		return nil
	}
	schedulers := gangSchedulers(o)
	// Which gangs apply, from the pod templates: PodGroups are read only for those.
	states := make([]*definitions.GangState, len(w.Groups))
	roles := make([][]string, len(w.Groups))
	inEffect := false
	for i := range w.Groups {
		g := &w.Groups[i]
		states[i] = &definitions.GangState{PodGroup: g.PodGroupName(w.Workload.Name)}
		g.State = states[i]
		roles[i] = w.GroupRoles(*g)
		states[i].Priority = gangPriority(w, *g, roles[i])
		if asked, ok := askedSchedulers(w, roles[i], schedulers); !ok {
			states[i].NotInEffect = notGanged(asked)
		} else {
			inEffect = true
		}
	}
	if err := r.nativeStates(ctx, w, o, states); err != nil {
		return err
	}
	if !inEffect {
		return nil
	}
	pgs, err := r.list(ctx, PodGroupsResource, w.Workload.Namespace, nil)
	note, err := podGroupsNote(err, PodGroupsResource, w.Workload.Namespace)
	if err != nil {
		return err
	}
	byName := podGroupsByName(pgs)
	var preempted map[string]*definitions.Preemption
	if o.Reasons && r.Client != nil && len(byName) > 0 {
		preempted = r.lastPreemptions(ctx, w.Workload.Namespace)
	}
	for i := range w.Groups {
		g, s := &w.Groups[i], states[i]
		if s.NotInEffect != "" {
			continue
		}
		s.Note = note
		s.Backend = BackendWorkmap
		if pg, ok := byName[s.PodGroup]; ok {
			setWorkmapState(s, pg)
			s.LastPreemption = preempted[s.PodGroup]
		}
		if o.Reasons && r.Client != nil && waiting(s) {
			if pod, ok := pendingPod(w, *g, roles[i]); ok {
				s.Reason = r.lastSchedulingEvent(ctx, w.Workload.Namespace, pod)
			}
		}
	}
	return nil
}

// nativeStates finds the native PodGroups of the gangs not in effect through workmap-scheduler:
// one list of the namespace's native PodGroups, only when the cluster serves them and, for a
// workload with live pods, some pod names one (a pod joins its native PodGroup at creation).
func (r *Resolver) nativeStates(ctx context.Context, w *definitions.Workload, o GangOptions, states []*definitions.GangState) error {
	if o.NativePodGroups == nil || !slices.ContainsFunc(states, func(s *definitions.GangState) bool { return s.NotInEffect != "" }) {
		return nil
	}
	if w.Live != nil && w.Live.Pods > 0 && w.Live.InNativeGroups == 0 {
		return nil
	}
	pgs, err := r.list(ctx, *o.NativePodGroups, w.Workload.Namespace, nil)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %s: %v", ErrNativePodGroupsNotServed, o.NativePodGroups.GroupResource(), err)
	}
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return err
	}
	byName := podGroupsByName(pgs)
	for _, s := range states {
		pg, ok := byName[s.PodGroup]
		if s.NotInEffect == "" || !ok {
			continue
		}
		s.NotInEffect = ""
		setNativeState(s, pg)
	}
	return nil
}

// PodGroupState is the state of the PodGroup a pod names itself, read as GangStates reads a
// gang's: with backend BackendWorkmap, the scheduling.x-k8s.io PodGroup of its label
// scheduling.x-k8s.io/pod-group (its operator's), not in effect when the pod asks for a
// scheduler that does not gang it; with BackendNative, the native PodGroup of its
// spec.schedulingGroup, among o.NativePodGroups. One list of the PodGroups in the pod's
// namespace; with o.Reasons, the pod's newest scheduling event says why it waits.
func (r *Resolver) PodGroupState(ctx context.Context, pod *corev1.Pod, podGroup, backend string, o GangOptions) (*definitions.GangState, error) {
	s := &definitions.GangState{PodGroup: podGroup, Backend: backend}
	gvr := PodGroupsResource
	switch {
	case backend == BackendNative && o.NativePodGroups == nil:
		s.Note = "native PodGroups are not served"
		return s, nil
	case backend == BackendNative:
		gvr = *o.NativePodGroups
	default:
		scheduler := pod.Spec.SchedulerName
		if scheduler == "" {
			scheduler = corev1.DefaultSchedulerName
		}
		if !slices.Contains(gangSchedulers(o), scheduler) {
			s.Backend, s.NotInEffect = "", notGanged([]string{scheduler})
			return s, nil
		}
	}
	pgs, err := r.list(ctx, gvr, pod.Namespace, nil)
	if s.Note, err = podGroupsNote(err, gvr, pod.Namespace); err != nil {
		return nil, err
	}
	if pg, ok := podGroupsByName(pgs)[podGroup]; ok && backend == BackendNative {
		setNativeState(s, pg)
	} else if ok {
		setWorkmapState(s, pg)
	}
	if backend != BackendNative && o.Reasons && r.Client != nil && waiting(s) && pod.Spec.NodeName == "" {
		s.Reason = r.lastSchedulingEvent(ctx, pod.Namespace, pod.Name)
	}
	return s, nil
}

// gangSchedulers are the schedulers that gang pods: o.Schedulers, or DefaultGangScheduler.
func gangSchedulers(o GangOptions) []string {
	if len(o.Schedulers) == 0 {
		return []string{DefaultGangScheduler}
	}
	return o.Schedulers
}

// notGanged says why a gang is not in effect: the schedulers its pods ask for.
func notGanged(asked []string) string {
	return fmt.Sprintf("its pods ask for %s, which does not gang them", strings.Join(asked, ", "))
}

// podGroupsNote says why the PodGroups of a namespace could not be listed, for an error that
// leaves the gangs unknown (not installed; not permitted, with the role to ask for); any other
// error is returned.
func podGroupsNote(err error, gvr schema.GroupVersionResource, ns string) (string, error) {
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsNotFound(err):
		return "PodGroups are not installed", nil
	case apierrors.IsForbidden(err):
		return access.New("list", gvr.GroupResource(), ns, err).Message(), nil
	}
	return "", err
}

// podGroupsByName indexes PodGroups by name.
func podGroupsByName(pgs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := make(map[string]*unstructured.Unstructured, len(pgs))
	for _, pg := range pgs {
		out[pg.GetName()] = pg
	}
	return out
}

// setWorkmapState reads a scheduling.x-k8s.io PodGroup's status: its phase (Pending when it
// has none yet) and how many of its pods are scheduled; and the domain the scheduler placed
// its gang in (its topology-domain annotation), for a topology-constrained gang.
func setWorkmapState(s *definitions.GangState, pg *unstructured.Unstructured) {
	s.Found, s.Backend, s.MadeBy = true, BackendWorkmap, madeBy(pg)
	s.Domain = pg.GetAnnotations()[grouper.TopologyDomainAnnotation]
	s.Phase, _, _ = unstructured.NestedString(pg.Object, "status", "phase")
	if s.Phase == "" {
		s.Phase = "Pending"
	}
	if n, ok, _ := unstructured.NestedInt64(pg.Object, "status", "scheduled"); ok {
		s.Scheduled = int32(n)
	}
}

// madeBy says who made a scheduling.x-k8s.io PodGroup that workmap did not ("" for one it
// did): its app.kubernetes.io/managed-by label, else its controller (Kind/name), else "another
// controller".
func madeBy(pg *unstructured.Unstructured) string {
	manager := pg.GetLabels()[grouper.ManagedByLabel]
	switch {
	case manager == grouper.ManagedByValue:
		return ""
	case manager != "":
		return manager
	}
	if ref := metav1.GetControllerOfNoCopy(pg); ref != nil {
		return ref.Kind + "/" + ref.Name
	}
	return "another controller"
}

// nativeScheduledConditions are the types of the condition a native PodGroup is scheduled by,
// in every native version (PodGroupScheduled in scheduling.k8s.io/v1alpha2,
// PodGroupInitiallyScheduled in v1beta1).
var nativeScheduledConditions = nativeapi.ScheduledConditions()

// setNativeState reads a native PodGroup's status: Scheduled once its scheduled condition is
// true, else Pending with the condition's message as the reason.
func setNativeState(s *definitions.GangState, pg *unstructured.Unstructured) {
	s.Found, s.Backend, s.Phase = true, BackendNative, "Pending"
	conds, _, _ := unstructured.NestedSlice(pg.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if t, _ := m["type"].(string); !slices.Contains(nativeScheduledConditions, t) {
			continue
		}
		if m["status"] == "True" {
			s.Phase = "Scheduled"
		} else if msg, _ := m["message"].(string); msg != "" {
			s.Reason = msg
		}
	}
}

// askedSchedulers are the schedulers the pod templates of the roles ask for, and whether any
// is one that gangs.
func askedSchedulers(w *definitions.Workload, roles []string, ganging []string) ([]string, bool) {
	var asked []string
	for _, r := range w.Roles {
		if !slices.Contains(roles, r.Name) || r.Template == nil {
			continue
		}
		name := r.Template.Spec.SchedulerName
		if name == "" {
			name = corev1.DefaultSchedulerName
		}
		if slices.Contains(ganging, name) {
			return nil, true
		}
		if !slices.Contains(asked, name) {
			asked = append(asked, name)
		}
	}
	return asked, len(asked) == 0 // no template read: assume the gang applies
}

// waiting says the gang's pods are not all placed yet.
func waiting(s *definitions.GangState) bool {
	return s.Phase == "" || s.Phase == "Pending" || s.Phase == "Scheduling"
}

// pendingPod is an unscheduled pod of the gang (of its replica, for a gang of one replica).
func pendingPod(w *definitions.Workload, g definitions.Group, roles []string) (string, bool) {
	for _, p := range w.GroupPods(g, roles) {
		if p.Phase == string(corev1.PodPending) && p.Node == "" {
			return p.Name, true
		}
	}
	return "", false
}

// gangPriority is the lowest priority of the gang's live pods (nil: none says).
func gangPriority(w *definitions.Workload, g definitions.Group, roles []string) *int32 {
	var lowest *int32
	for _, p := range w.GroupPods(g, roles) {
		if p.Priority != nil && (lowest == nil || *p.Priority < *lowest) {
			lowest = p.Priority
		}
	}
	return lowest
}

// lastPreemptions are the newest preemption of each PodGroup of a namespace preempted as a
// victim, by PodGroup name: one list of workmap-scheduler's Preempted events on PodGroups (none
// when the events cannot be read).
func (r *Resolver) lastPreemptions(ctx context.Context, namespace string) map[string]*definitions.Preemption {
	sel := fields.Set{"involvedObject.kind": "PodGroup", "reason": grouper.PreemptedReason}.AsSelector().String()
	list, err := r.Client.Resource(eventsResource).Namespace(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil
	}
	byPodGroup := map[string][]*corev1.Event{}
	for i := range list.Items {
		var e corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &e) == nil {
			byPodGroup[e.InvolvedObject.Name] = append(byPodGroup[e.InvolvedObject.Name], &e)
		}
	}
	out := map[string]*definitions.Preemption{}
	for name, events := range byPodGroup {
		if p := LastPreemption(events); p != nil {
			out[name] = p
		}
	}
	return out
}

// LastPreemption is the newest preemption among the events of one PodGroup: the newest
// Preempted event workmap-scheduler wrote on it, which relates the preemptor (nil: none).
func LastPreemption(events []*corev1.Event) *definitions.Preemption {
	var newest *corev1.Event
	var newestAt metav1.MicroTime
	for _, e := range events {
		if e.Reason != grouper.PreemptedReason || e.InvolvedObject.Kind != "PodGroup" {
			continue
		}
		if at := EventTime(e); newest == nil || newestAt.Before(&at) {
			newest, newestAt = e, at
		}
	}
	if newest == nil {
		return nil
	}
	p := &definitions.Preemption{At: newestAt.UTC().Format(time.RFC3339), Message: strings.TrimSpace(newest.Message)}
	if r := newest.Related; r != nil {
		p.By = r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return p
}

// lastSchedulingEvent is the message of the newest event that says why the pod waits ("" when
// there is none, or the events cannot be read).
func (r *Resolver) lastSchedulingEvent(ctx context.Context, namespace, pod string) string {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod}.AsSelector().String()
	list, err := r.Client.Resource(eventsResource).Namespace(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return ""
	}
	var newest *corev1.Event
	var newestAt metav1.MicroTime
	for i := range list.Items {
		var e corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &e) != nil || !slices.Contains(schedulingReasons, e.Reason) {
			continue
		}
		at := EventTime(&e)
		if newest == nil || newestAt.Before(&at) {
			newest, newestAt = &e, at
		}
	}
	if newest == nil {
		return ""
	}
	return strings.TrimSpace(newest.Message)
}

// EventTime is when an event last happened, whichever API wrote it.
func EventTime(e *corev1.Event) metav1.MicroTime {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime
	case !e.EventTime.IsZero():
		return e.EventTime
	case !e.LastTimestamp.IsZero():
		return metav1.NewMicroTime(e.LastTimestamp.Time)
	}
	return metav1.NewMicroTime(e.CreationTimestamp.Time)
}
