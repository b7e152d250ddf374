package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/live"
)

// ReadGangs groups a live object of any kind as workmap-scheduler groups its pods: the same
// hub, with owners read once each instead of cached. Each gang's state is read from the
// cluster as Read reads it, with what holds it.
func (r *workloadReader) ReadGangs(ctx context.Context, ref workloadArg) (workloadGangs, error) {
	reg, err := r.registry(ctx)
	if err != nil {
		return workloadGangs{}, err
	}
	obj, err := r.getAny(ctx, ref.kind, ref.name)
	if err != nil {
		return workloadGangs{}, err
	}
	md, err := metadata.NewForConfig(r.config)
	if err != nil {
		return workloadGangs{}, err
	}
	g := liveGrouping{reader: r, registry: reg, hub: &grouper.Hub{
		Owners:      grouper.OwnerReader{Client: md, Mapper: r.mapper},
		Natives:     grouper.DefaultNatives(),
		Definitions: func() *definitions.Registry { return reg },
		Object:      grouper.ObjectReader(r.dynamic, r.mapper),
	}}
	g.gangOptions = r.gangs
	g.gangOptions.NativePodGroups = r.nativePodGroups()
	if obj.GroupVersionKind().GroupKind() == corev1.SchemeGroupVersion.WithKind("Pod").GroupKind() {
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err != nil {
			return workloadGangs{}, fmt.Errorf("pod %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		wg, err := g.podGangs(ctx, &pod)
		wg.live = true
		return wg, err
	}
	owner, problem := g.hub.Owners.TopOwner(ctx, obj, obj.GetAPIVersion(), obj.GetKind())
	if problem != nil {
		r.warnf("%v", r.explain(problem))
	}
	wg, err := g.ownerGangs(ctx, owner)
	if err != nil {
		return workloadGangs{}, r.explain(err)
	}
	if owner.UID != obj.GetUID() {
		wg.note = fmt.Sprintf("%s %s belongs to %s: its pods are grouped with the %s's.", strings.ToLower(obj.GetKind()), objectName(obj.GetNamespace(), obj.GetName()), ownerText(owner), owner.Kind)
	}
	if owner.Skip {
		wg = workloadGangs{workload: ownerRef(owner), none: "<none: workmap.dev/skip leaves its pods alone>", note: wg.note}
	}
	wg.live = true
	return wg, nil
}

// liveGrouping groups live objects with a hub and reads their gangs' states.
type liveGrouping struct {
	reader   *workloadReader
	registry *definitions.Registry
	hub      *grouper.Hub
	// gangOptions say how gang states are read: with the reasons of waiting gangs.
	gangOptions live.GangOptions
}

// ownerGangs are a top owner's gangs as the hub forms them, each with its live state.
func (g liveGrouping) ownerGangs(ctx context.Context, owner grouper.Owner) (workloadGangs, error) {
	og, err := g.hub.GangsOf(ctx, owner)
	if err != nil {
		return workloadGangs{}, err
	}
	wg := newWorkloadGangs(ownerRef(owner), og.Source, og.Gangs, og.PodGroups)
	if og.Source == grouper.SourceNone {
		wg.none = fmt.Sprintf("<none: no definition with gang hints for %s>", owner.GroupKind())
	}
	g.addGangStates(ctx, owner, &wg)
	return wg, nil
}

// podGangs is the one gang a pod joins, decided exactly as the scheduler decides it, or why
// it has none.
func (g liveGrouping) podGangs(ctx context.Context, pod *corev1.Pod) (workloadGangs, error) {
	d, err := g.hub.Decide(ctx, pod)
	if err != nil {
		return workloadGangs{}, err
	}
	self := fmt.Sprintf("pod %s", objectName(pod.Namespace, pod.Name))
	podRef := definitions.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	switch d.Source {
	case grouper.SourceSkip:
		return workloadGangs{workload: podRef, none: "<none: workmap.dev/skip>", note: self + " asks workmap to leave it alone (workmap.dev/skip on it or an owner): it schedules on its own."}, nil
	case grouper.SourceExisting:
		return workloadGangs{workload: podRef, none: "<" + d.PodGroup + ": not made by workmap>", held: g.heldGang(ctx, pod, d.PodGroup, live.BackendWorkmap), note: fmt.Sprintf("%s names its PodGroup %s itself (label %s): workmap leaves that gang to whoever made it.", self, d.PodGroup, schedulingv1alpha1.PodGroupLabel)}, nil
	case grouper.SourceSchedulingGroup:
		name := ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, "")
		return workloadGangs{workload: podRef, none: "<" + name + ": a native PodGroup>", held: g.heldGang(ctx, pod, name, live.BackendNative), note: fmt.Sprintf("%s belongs to the native PodGroup %s (spec.schedulingGroup): Kubernetes' own scheduler gangs it.", self, name)}, nil
	}
	wg, err := g.ownerGangs(ctx, d.Owner)
	if err != nil {
		return workloadGangs{}, err
	}
	if d.PodGroup == "" {
		why := "its role has no gang"
		switch {
		case d.Problem != nil:
			why = d.Problem.Error()
		case wg.source == grouper.SourceNone:
			why = fmt.Sprintf("no definition with gang hints for %s", d.Owner.GroupKind())
		case len(wg.groups) == 0:
			why = "its workload has no gang"
		}
		wg.note = fmt.Sprintf("%s of %s schedules alone: %s.", self, ownerText(d.Owner), strings.TrimSuffix(why, "."))
		if d.Owner.UID == pod.UID {
			wg.note = fmt.Sprintf("%s schedules alone: %s.", self, strings.TrimSuffix(why, "."))
		}
		return wg, nil
	}
	// Only the pod's own gang.
	for i, name := range wg.podGroups {
		if name == d.PodGroup {
			wg.groups, wg.podGroups, wg.roles, wg.backends = wg.groups[i:i+1], wg.podGroups[i:i+1], wg.roles[i:i+1], wg.backends[i:i+1]
			break
		}
	}
	wg.note = fmt.Sprintf("%s of %s joins PodGroup %s (from its %s).", self, ownerText(d.Owner), d.PodGroup, sourceText(d.Source))
	return wg, nil
}

func sourceText(s grouper.Source) string {
	if s == grouper.SourceNative {
		return "built-in grouper"
	}
	return "definition's gang hints"
}

func ownerRef(o grouper.Owner) definitions.ObjectRef {
	return definitions.ObjectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: string(o.UID)}
}

func ownerText(o grouper.Owner) string { return o.Kind + " " + objectName(o.Namespace, o.Name) }

// getAny reads an object of any kind the cluster serves, the kind named as kubectl names it.
func (c *cluster) getAny(ctx context.Context, kind, name string) (*unstructured.Unstructured, error) {
	m, _, err := mappingFor(c.mapper, kind)
	if meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("unknown kind %q: the cluster serves no resource of that name", kind)
	}
	if err != nil {
		return nil, c.explain(err)
	}
	ri := c.dynamic.Resource(m.Resource)
	var obj *unstructured.Unstructured
	where := ""
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		obj, err = ri.Namespace(c.namespace).Get(ctx, name, metav1.GetOptions{})
		where = fmt.Sprintf(" in namespace %q", c.namespace)
	} else {
		obj, err = ri.Get(ctx, name, metav1.GetOptions{})
	}
	if isObjectNotFound(err, name) {
		return nil, fmt.Errorf("%s %q not found%s", m.GroupVersionKind.Kind, name, where)
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s is not served by the cluster any more", m.Resource.GroupResource())
	}
	return obj, c.explain(err)
}
