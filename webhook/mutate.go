package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// Outcome says what the webhook did to a pod (the metric's label).
type Outcome string

// The outcomes.
const (
	OutcomeNative   Outcome = "native"   // pointed at a native PodGroup
	OutcomeLabelled Outcome = "labelled" // labelled for workmap-scheduler
	OutcomeNoGang   Outcome = "no-gang"  // its workload has no gang for it
	OutcomeSkipped  Outcome = "skipped"  // left alone: grouped already, skipped, another scheduler
	// OutcomeUnserved: a native scheduler's pod whose workload has a gang, on a cluster that
	// serves no native PodGroups to put it in (reported as an event once the pod exists).
	OutcomeUnserved Outcome = "unserved"
	OutcomeError    Outcome = "error" // could not decide: admitted as it came
)

// Outcomes are every outcome.
var Outcomes = []Outcome{OutcomeNative, OutcomeLabelled, OutcomeNoGang, OutcomeSkipped, OutcomeUnserved, OutcomeError}

// Mutator decides what a new pod gets.
type Mutator struct {
	Hub *grouper.Hub
	// Native makes native PodGroups; nil when the cluster serves none (then a native
	// scheduler's pods are left as they come, and reported).
	Native *NativePodGroups
	// WorkmapSchedulers are the scheduler names whose pods get the pod-group label;
	// NativeSchedulers those whose pods get spec.schedulingGroup (when Native is set).
	WorkmapSchedulers []string
	NativeSchedulers  []string
	// WatchErrors counts the failed lists and watches of the caches the webhook keeps besides
	// the hub's (nil: not counted).
	WatchErrors *grouper.WatchErrors
}

// Mutation is what to change in a pod, and why.
type Mutation struct {
	Outcome Outcome
	// Patch is a JSON patch of the pod (empty: unchanged).
	Patch []PatchOperation
	// Detail says what was decided, for logs and warnings.
	Detail string
	// Problem is why the pod is not grouped as its workload would be (nil: nothing wrong).
	Problem error
}

// PatchOperation is one JSON patch (RFC 6902) operation.
type PatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Mutate decides the new pod's gang and what to change for it. The pod's namespace must be
// set (admission gives it apart from the object). A dry run changes nothing in the cluster:
// the native PodGroup is not made.
func (m *Mutator) Mutate(ctx context.Context, pod *corev1.Pod, dryRun bool) (Mutation, error) {
	if workmap, native := m.schedulers(pod); !workmap && native && m.Native == nil {
		// Nothing could be written: the gang is decided after admission, by the report of
		// pods created without their gang, which records why on the pod.
		return Mutation{Outcome: OutcomeSkipped, Detail: "the cluster serves no native PodGroups"}, nil
	}
	g, err := m.gangAtCreation(ctx, pod)
	if err != nil || (g.outcome != OutcomeNative && g.outcome != OutcomeLabelled) {
		return Mutation{Outcome: g.outcome, Detail: g.detail, Problem: g.decision.Problem}, err
	}
	d := g.decision
	if g.outcome == OutcomeLabelled {
		return Mutation{Outcome: OutcomeLabelled, Detail: g.detail, Patch: labelPatch(pod, d.PodGroup), Problem: d.Problem}, nil
	}
	desired := desiredPodGroup(d)
	if desired == nil {
		return Mutation{Outcome: OutcomeError}, fmt.Errorf("PodGroup %s is not among the workload's", d.PodGroup)
	}
	if !dryRun {
		if err := m.Native.Ensure(ctx, desired); err != nil {
			return Mutation{Outcome: OutcomeError}, err
		}
	}
	return Mutation{Outcome: OutcomeNative, Detail: g.detail, Problem: d.Problem, Patch: []PatchOperation{
		{Op: "add", Path: "/spec/schedulingGroup", Value: map[string]string{"podGroupName": d.PodGroup}},
	}}, nil
}

// creationGang is the gang the webhook gives a pod when it is created, before anything is
// written: OutcomeNative (a native PodGroup) or OutcomeLabelled (workmap-scheduler's label)
// with the hub's decision, or why the pod is left as it came.
type creationGang struct {
	outcome  Outcome
	detail   string
	decision grouper.Decision
}

// gangAtCreation decides the gang the webhook gives a pod at its creation. Both the
// admission (Mutate) and the report of pods created without the webhook (UngroupedReporter)
// ask it, so that they cannot disagree on which pods have a gang. The pod may be the one
// being admitted (no UID yet) or one that exists.
func (m *Mutator) gangAtCreation(ctx context.Context, pod *corev1.Pod) (creationGang, error) {
	workmap, native := m.schedulers(pod)
	if !workmap && !native {
		return creationGang{outcome: OutcomeSkipped, detail: fmt.Sprintf("scheduler %s gangs no pods workmap knows of", schedulerOf(pod))}, nil
	}
	d, err := m.Hub.Decide(ctx, pod)
	if err != nil {
		return creationGang{outcome: OutcomeError}, err
	}
	switch d.Source {
	case grouper.SourceSkip, grouper.SourceExisting, grouper.SourceSchedulingGroup:
		return creationGang{outcome: OutcomeSkipped, detail: "left alone: " + string(d.Source), decision: d}, nil
	}
	if d.PodGroup == "" {
		detail := "no gang"
		if d.Problem != nil {
			detail += ": " + d.Problem.Error()
		}
		return creationGang{outcome: OutcomeNoGang, detail: detail, decision: d}, nil
	}
	if d.Owner.UID == "" || d.Owner.UID == pod.UID {
		// A bare pod is its own owner, and has no UID before it is created: a PodGroup could
		// not be owned by it.
		return creationGang{outcome: OutcomeNoGang, detail: "a pod without an owner is not grouped at admission", decision: d}, nil
	}
	switch {
	case workmap:
		return creationGang{outcome: OutcomeLabelled, detail: "pod group " + d.PodGroup, decision: d}, nil
	case m.Native == nil:
		return creationGang{outcome: OutcomeUnserved, detail: "the cluster serves no native PodGroups for gang " + d.PodGroup, decision: d}, nil
	}
	return creationGang{outcome: OutcomeNative, detail: "native PodGroup " + d.PodGroup, decision: d}, nil
}

// schedulers says whether a pod asks for one of workmap's schedulers (it gets the pod-group
// label) or one of the native schedulers (it joins a native PodGroup, when the cluster
// serves them).
func (m *Mutator) schedulers(pod *corev1.Pod) (workmap, native bool) {
	scheduler := schedulerOf(pod)
	return slices.Contains(m.WorkmapSchedulers, scheduler), slices.Contains(m.NativeSchedulers, scheduler)
}

// schedulerOf is the scheduler a pod asks for.
func schedulerOf(pod *corev1.Pod) string {
	if pod.Spec.SchedulerName == "" {
		return corev1.DefaultSchedulerName
	}
	return pod.Spec.SchedulerName
}

func desiredPodGroup(d grouper.Decision) *v1alpha1.PodGroup {
	for _, pg := range d.Desired {
		if pg.Name == d.PodGroup {
			return pg
		}
	}
	return nil
}

// labelPatch labels the pod with its pod group and marks the label as workmap's (so the
// grouper groups the pod itself rather than taking the label for an operator's).
func labelPatch(pod *corev1.Pod, group string) []PatchOperation {
	var ops []PatchOperation
	ops = append(ops, mapEntry("/metadata/labels", pod.Labels == nil, v1alpha1.PodGroupLabel, group))
	ops = append(ops, mapEntry("/metadata/annotations", pod.Annotations == nil, grouper.GroupedAnnotation, "true"))
	return ops
}

// mapEntry adds key=value to the object map at path, making the map when it is missing.
func mapEntry(path string, missing bool, key, value string) PatchOperation {
	if missing {
		return PatchOperation{Op: "add", Path: path, Value: map[string]string{key: value}}
	}
	return PatchOperation{Op: "add", Path: path + "/" + escapePointer(key), Value: value}
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
