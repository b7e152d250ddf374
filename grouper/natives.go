package grouper

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	definitionsv1alpha1 "github.com/workmap/workmap/definitions/api/v1alpha1"
)

// DefaultNatives are the Go groupers shipped with workmap, for kinds whose gangs need no
// definition: the explicit list the hub consults before the definitions.
func DefaultNatives() map[schema.GroupKind]KindGrouper {
	return map[schema.GroupKind]KindGrouper{
		{Group: "batch", Kind: "Job"}: JobGrouper{},
		{Group: "", Kind: "Pod"}:      PodGrouper{},
	}
}

// JobGrouper gangs the pods of a batch/v1 Job: minMember from the Job's workmap.dev/min-member
// annotation, else the pods the Job runs at once, min(parallelism, completions) (parallelism
// defaults to 1; a Job without completions runs parallelism pods); a Job of one pod needs no
// gang.
type JobGrouper struct{}

// Gangs implements KindGrouper.
func (JobGrouper) Gangs(owner Owner, job *unstructured.Unstructured) (Gangs, error) {
	min, err := minMember(job.GetAnnotations(), func() int64 { return jobPods(job) })
	if err != nil {
		return nil, fmt.Errorf("job %s/%s: %w", owner.Namespace, owner.Name, err)
	}
	return oneGang("job", min, job.GetAnnotations()), nil
}

// jobPods are the pods a Job runs at once: the Job controller never runs more than its
// completions, however high its parallelism.
func jobPods(job *unstructured.Unstructured) int64 {
	p, found, _ := unstructured.NestedInt64(job.Object, "spec", "parallelism")
	if !found {
		p = 1
	}
	if c, found, _ := unstructured.NestedInt64(job.Object, "spec", "completions"); found && c < p {
		return c
	}
	return p
}

// PodGrouper gangs a bare pod only when it asks to with workmap.dev/min-member (a pod alone
// is never a gang otherwise).
type PodGrouper struct{}

// GroupsFromMetadata implements MetadataOnly: the pod's annotations decide.
func (PodGrouper) GroupsFromMetadata() {}

// Gangs implements KindGrouper.
func (PodGrouper) Gangs(owner Owner, _ *unstructured.Unstructured) (Gangs, error) {
	min, err := minMember(owner.Annotations, func() int64 { return 1 })
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", owner.Namespace, owner.Name, err)
	}
	return oneGang("pod", min, owner.Annotations), nil
}

func minMember(annotations map[string]string, def func() int64) (int64, error) {
	v, ok := annotations[definitions.AnnotationMinMember]
	if !ok {
		return def(), nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("annotation %s=%q: want a positive integer", definitions.AnnotationMinMember, v)
	}
	return n, nil
}

// singleGang is a workload whose pods all form one gang (none when minMember ≤ 1).
type singleGang struct{ groups []definitions.Group }

// oneGang is the gang of every pod of a native workload: named after its kind, scoped to the
// whole workload, placed as the workload's topology annotations ask (a value that is not a
// topology level is ignored, as for a definition's gangs).
func oneGang(name string, min int64, annotations map[string]string) singleGang {
	if min <= 1 {
		return singleGang{}
	}
	topology, _ := definitions.AnnotationTopology(annotations)
	return singleGang{groups: []definitions.Group{{Name: name, MinMember: int32(min), Scope: definitionsv1alpha1.ScopeWorkload, Members: []string{name}, Topology: topology}}}
}

func (s singleGang) Groups() []definitions.Group { return s.groups }

func (s singleGang) GroupOf(*corev1.Pod) (*definitions.Group, error) {
	if len(s.groups) == 0 {
		return nil, nil
	}
	return &s.groups[0], nil
}
