package main

import (
	"context"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/live"
)

// addGangStates sets the live state of a top owner's gangs (each group's State) and what holds
// each, read by live.Resolver.GangStates as `tree` reads them: from the workload its definition
// resolves, or for a built-in grouper's kind (a Job, a bare pod) from its pod template and pods.
// A failure to read them is a warning: the gangs stand without their states.
func (g liveGrouping) addGangStates(ctx context.Context, owner grouper.Owner, wg *workloadGangs) {
	wg.backends = make([]*gangBackend, len(wg.groups))
	if len(wg.groups) == 0 {
		return
	}
	r := g.reader.resolver(nil)
	w, err := g.gangWorkload(ctx, r, owner, wg)
	if err != nil {
		g.reader.warnf("%s: reading its gangs' state: %v", ownerText(owner), g.reader.explain(err))
		return
	}
	g.reader.gangStates(ctx, r, w, g.gangOptions)
	states := map[string]*definitions.GangState{}
	for _, group := range w.Groups {
		if group.State != nil {
			states[group.State.PodGroup] = group.State
		}
	}
	wg.groups = slices.Clone(wg.groups) // the hub's own gangs stay as they are
	for i, name := range wg.podGroups {
		wg.groups[i].State = states[name]
		wg.backends[i] = backendOf(states[name], g.nativeVersion())
	}
}

// gangWorkload is the workload GangStates reads the gangs of: the definition's, resolved
// with its children and pods, or a built-in grouper's.
func (g liveGrouping) gangWorkload(ctx context.Context, r *live.Resolver, owner grouper.Owner, wg *workloadGangs) (*definitions.Workload, error) {
	obj, err := g.hub.Object(ctx, owner)
	if err != nil {
		return nil, err
	}
	if wg.source == grouper.SourceDefinition {
		def, ok := g.registry.Lookup(owner.GroupKind())
		if !ok {
			return nil, fmt.Errorf("no definition for %s", owner.GroupKind())
		}
		res, err := r.Resolve(ctx, def, obj)
		if err != nil {
			return nil, err
		}
		return res.Workload, nil
	}
	template, pods, err := g.templateAndPods(ctx, owner, obj.Object)
	if err != nil {
		return nil, err
	}
	return nativeGangWorkload(ownerRef(owner), wg.groups, template, pods), nil
}

// templateAndPods are the pod template and the pods of a workload of a built-in grouper: a
// Job's spec.template and the pods of its selector, or a bare pod's own spec and itself.
func (g liveGrouping) templateAndPods(ctx context.Context, owner grouper.Owner, object map[string]any) (*corev1.PodTemplateSpec, []corev1.Pod, error) {
	switch owner.GroupKind() {
	case schema.GroupKind{Group: batchv1.GroupName, Kind: "Job"}:
		var job batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object, &job); err != nil {
			return nil, nil, fmt.Errorf("reading it as a Job: %w", err)
		}
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.selector: %w", err)
		}
		list, err := g.reader.pods.Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, nil, err
		}
		return &job.Spec.Template, list.Items, nil
	case corev1.SchemeGroupVersion.WithKind("Pod").GroupKind():
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object, &pod); err != nil {
			return nil, nil, fmt.Errorf("reading it as a Pod: %w", err)
		}
		return &corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}, []corev1.Pod{pod}, nil
	}
	return nil, nil, fmt.Errorf("no pod template known for %s", owner.GroupKind())
}

// nativeGangWorkload is the workload of a built-in grouper's gangs as GangStates reads it: one
// role per member of its gangs, each with the pod template (whose scheduler says whether the
// gang is in effect) and the pods (the first pending one says why the gang waits).
func nativeGangWorkload(ref definitions.ObjectRef, groups []definitions.Group, template *corev1.PodTemplateSpec, pods []corev1.Pod) *definitions.Workload {
	found := make([]definitions.FoundPod, len(pods))
	for i, p := range pods {
		found[i] = definitions.FoundPod{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName}
		if found[i].Phase == "" {
			found[i].Phase = string(corev1.PodPending)
		}
	}
	w := &definitions.Workload{Workload: ref, Groups: slices.Clone(groups)}
	for _, g := range groups {
		for _, member := range g.Members {
			if slices.ContainsFunc(w.Roles, func(r definitions.Role) bool { return r.Name == member }) {
				continue
			}
			w.Roles = append(w.Roles, definitions.Role{Name: member, DefinitionRole: member, Pods: max(int64(len(pods)), 1), Template: template, FoundPods: found})
		}
	}
	return w
}

// heldGang is the state of the PodGroup a pod names itself, and what holds it: an operator's
// scheduling.x-k8s.io PodGroup, or a native one (backend live.BackendWorkmap or
// live.BackendNative). A failure to read it is a warning.
func (g liveGrouping) heldGang(ctx context.Context, pod *corev1.Pod, podGroup, backend string) *heldGang {
	r := &live.Resolver{Client: g.reader.dynamic, Pods: g.reader.pods, Options: g.reader.expand}
	s, err := r.PodGroupState(ctx, pod, podGroup, backend, g.gangOptions)
	if err != nil {
		g.reader.warnf("pod %s: reading its PodGroup %s: %v", objectName(pod.Namespace, pod.Name), podGroup, g.reader.explain(err))
	}
	h := &heldGang{state: s}
	switch {
	case s != nil && s.NotInEffect != "":
	case backend == live.BackendNative:
		h.backend = backendOf(&definitions.GangState{Backend: live.BackendNative}, g.nativeVersion())
	default:
		h.backend = operatorBackend(s)
	}
	return h
}

// nativeVersion is the version of the native PodGroups the cluster serves ("" for none).
func (g liveGrouping) nativeVersion() string {
	if g.gangOptions.NativePodGroups == nil {
		return ""
	}
	return g.gangOptions.NativePodGroups.Version
}
