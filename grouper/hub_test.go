package grouper_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

func TestHubDecide(t *testing.T) {
	jobSetObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "train", "namespace": "ml", "uid": "js", "resourceVersion": "1"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}}},
		}}},
	}}
	job := func(name string, uid types.UID, parallelism int64, ann map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": name, "namespace": "ml", "uid": string(uid), "annotations": ann},
			"spec":     map[string]any{"parallelism": parallelism},
		}}
	}
	objects := map[types.UID]*unstructured.Unstructured{
		"js":      jobSetObj,
		"job4":    job("wide", "job4", 4, nil),
		"job1":    job("single", "job1", 1, nil),
		"job-ann": job("annotated", "job-ann", 8, map[string]any{"workmap.dev/min-member": "2"}),
		"job-bad": job("bad", "job-bad", 8, map[string]any{"workmap.dev/min-member": "lots"}),
		"cyc-a":   job("cyc-a", "cyc-a", 4, nil),
		"cyc-b":   job("cyc-b", "cyc-b", 4, nil),
		"job-few": job("few", "job-few", 4, nil),
	}
	// The Job controller runs at most completions pods at once.
	objects["job-few"].Object["spec"].(map[string]any)["completions"] = int64(3)
	skipped := partial(jobSetGVK, "skipped", "js-skip", nil)
	skipped.Annotations = map[string]string{grouper.SkipAnnotation: "true"}
	skippedJob := partial(jobGVK, "skipped-job", "job-skip", controllerRef(jobSetGVK, "train", "js"))
	skippedJob.Annotations = map[string]string{grouper.SkipAnnotation: "true"}
	resolver := fakeResolver(t,
		partial(jobSetGVK, "train", "js", nil),
		partial(jobGVK, "train-workers-1", "job-js", controllerRef(jobSetGVK, "train", "js")),
		partial(jobGVK, "wide", "job4", nil), partial(jobGVK, "single", "job1", nil),
		partial(jobGVK, "annotated", "job-ann", nil), partial(jobGVK, "bad", "job-bad", nil), partial(jobGVK, "few", "job-few", nil),
		skipped, skippedJob,
		partial(jobGVK, "cyc-a", "cyc-a", controllerRef(jobGVK, "cyc-b", "cyc-b")),
		partial(jobGVK, "cyc-b", "cyc-b", controllerRef(jobGVK, "cyc-a", "cyc-a")),
	)
	reg, err := catalog.Registry()
	require.NoError(t, err)
	hub := &grouper.Hub{
		Owners:      resolver,
		Natives:     grouper.DefaultNatives(),
		Definitions: func() *definitions.Registry { return reg },
		Object: func(_ context.Context, o grouper.Owner) (*unstructured.Unstructured, error) {
			if obj, ok := objects[o.UID]; ok {
				return obj, nil
			}
			return nil, fmt.Errorf("no object %s", o.UID)
		},
	}
	pod := func(owner *metav1.OwnerReference, labels, annotations map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml", UID: "pod", Labels: labels, Annotations: annotations}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	jobSetLabels := map[string]string{"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1"}
	tests := map[string]struct {
		pod          *corev1.Pod
		wantSource   grouper.Source
		wantPodGroup string
		wantMin      int32
		wantErr      string
		wantProblem  bool
	}{
		"skip annotation on the pod":                                 {pod: pod(nil, nil, map[string]string{grouper.SkipAnnotation: "true"}), wantSource: grouper.SourceSkip},
		"an operator's PodGroup label":                               {pod: pod(controllerRef(jobGVK, "wide", "job4"), map[string]string{v1alpha1.PodGroupLabel: "theirs"}, nil), wantSource: grouper.SourceExisting, wantPodGroup: "theirs"},
		"skip annotation on the owner":                               {pod: pod(controllerRef(jobSetGVK, "skipped", "js-skip"), nil, nil), wantSource: grouper.SourceSkip},
		"Job: parallelism":                                           {pod: pod(controllerRef(jobGVK, "wide", "job4"), nil, nil), wantSource: grouper.SourceNative, wantPodGroup: "wide-job", wantMin: 4},
		"Job: fewer completions than parallelism":                    {pod: pod(controllerRef(jobGVK, "few", "job-few"), nil, nil), wantSource: grouper.SourceNative, wantPodGroup: "few-job", wantMin: 3},
		"Job: min-member annotation":                                 {pod: pod(controllerRef(jobGVK, "annotated", "job-ann"), nil, nil), wantSource: grouper.SourceNative, wantPodGroup: "annotated-job", wantMin: 2},
		"Job of one pod: no gang":                                    {pod: pod(controllerRef(jobGVK, "single", "job1"), nil, nil), wantSource: grouper.SourceNative},
		"Job with a bad annotation":                                  {pod: pod(controllerRef(jobGVK, "bad", "job-bad"), nil, nil), wantErr: "want a positive integer"},
		"bare pod: no gang":                                          {pod: pod(nil, nil, nil), wantSource: grouper.SourceNative},
		"bare pod asking for a gang":                                 {pod: pod(nil, nil, map[string]string{"workmap.dev/min-member": "3"}), wantSource: grouper.SourceNative, wantPodGroup: "p-pod", wantMin: 3},
		"JobSet through its definition":                              {pod: pod(controllerRef(jobGVK, "train-workers-1", "job-js"), jobSetLabels, nil), wantSource: grouper.SourceDefinition, wantPodGroup: "train-all", wantMin: 2},
		"a pod workmap labelled before is grouped again":             {pod: pod(controllerRef(jobGVK, "wide", "job4"), map[string]string{v1alpha1.PodGroupLabel: "wide-job"}, map[string]string{grouper.GroupedAnnotation: "true"}), wantSource: grouper.SourceNative, wantPodGroup: "wide-job", wantMin: 4},
		"owner missing: the pod is alone":                            {pod: pod(controllerRef(widgetGVK, "gone", "gone"), nil, nil), wantSource: grouper.SourceNative, wantProblem: true},
		"Jobs owning each other: the pod is alone, in no Job's gang": {pod: pod(controllerRef(jobGVK, "cyc-a", "cyc-a"), nil, nil), wantSource: grouper.SourceNative, wantProblem: true},
		"a native scheduling group: left to it":                      {pod: inSchedulingGroup(pod(controllerRef(jobSetGVK, "train", "js"), jobSetLabels, nil)), wantSource: grouper.SourceSchedulingGroup},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := hub.Decide(context.Background(), tc.pod)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantSource, d.Source)
			require.Equal(t, tc.wantPodGroup, d.PodGroup)
			require.Equal(t, tc.wantProblem, d.Problem != nil, "problem: %v", d.Problem)
			if tc.wantMin > 0 {
				require.Len(t, d.Desired, 1)
				require.Equal(t, tc.wantPodGroup, d.Desired[0].Name)
				require.Equal(t, tc.wantMin, d.Desired[0].Spec.MinMember)
			} else {
				require.Empty(t, d.Desired)
			}
		})
	}
}

// inSchedulingGroup makes the pod point at a native scheduling.k8s.io PodGroup.
func inSchedulingGroup(p *corev1.Pod) *corev1.Pod {
	name := "native-group"
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	return p
}

// TestHubCustomKind: a CRD with no definition gets no gang; the same CRD after a definition
// with gang hints is added gets one — no code.
func TestHubCustomKind(t *testing.T) {
	widget := partial(widgetGVK, "w", "widget", nil)
	resolver := fakeResolverWith(t, []schema.GroupVersionKind{widgetGVK}, widget)
	reg := definitions.NewRegistry()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ml", "uid": "widget", "resourceVersion": "1"},
		"spec":     map[string]any{"workers": int64(3), "template": map[string]any{"spec": map[string]any{}}},
	}}
	hub := &grouper.Hub{
		Owners: resolver, Natives: grouper.DefaultNatives(),
		Definitions: func() *definitions.Registry { return reg },
		Object:      func(context.Context, grouper.Owner) (*unstructured.Unstructured, error) { return obj, nil },
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ml", UID: "p", OwnerReferences: []metav1.OwnerReference{*controllerRef(widgetGVK, "w", "widget")}}}

	d, err := hub.Decide(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, grouper.SourceNone, d.Source)

	def := widgetDefinition(t)
	reg.Add(def)
	d, err = hub.Decide(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, grouper.SourceDefinition, d.Source)
	require.Equal(t, "w-all", d.PodGroup)
	require.EqualValues(t, 3, d.Desired[0].Spec.MinMember)
}

// TestHubMalformedWorkload: an object its definition cannot expand (a wrong type where the
// gang's size is read) is not retried forever with its pods held: they are scheduled without
// a gang and the problem is reported.
func TestHubMalformedWorkload(t *testing.T) {
	widget := partial(widgetGVK, "w", "widget", nil)
	resolver := fakeResolverWith(t, []schema.GroupVersionKind{widgetGVK}, widget)
	def := widgetDefinition(t)
	reg := definitions.NewRegistry()
	reg.Add(def)
	tests := map[string]map[string]any{
		"workers is a string":  {"workers": "three", "template": map[string]any{}},
		"workers is missing":   {"template": map[string]any{}},
		"spec is a list":       nil,
		"template is a number": {"workers": int64(3), "template": int64(7)},
	}
	for name, spec := range tests {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": "ml", "uid": "widget", "resourceVersion": name},
				"spec":     spec,
			}}
			if spec == nil {
				obj.Object["spec"] = []any{"x"}
			}
			hub := &grouper.Hub{
				Owners: resolver, Natives: grouper.DefaultNatives(),
				Definitions: func() *definitions.Registry { return reg },
				Object:      func(context.Context, grouper.Owner) (*unstructured.Unstructured, error) { return obj, nil },
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0", Namespace: "ml", UID: "p", OwnerReferences: []metav1.OwnerReference{*controllerRef(widgetGVK, "w", "widget")}}}
			d, err := hub.Decide(context.Background(), p)
			require.NoError(t, err, "not retried: the object must change first")
			t.Logf("decision %s, problem: %v", d.Source, d.Problem)
			if d.Source == grouper.SourceDefinition {
				// Expanded with an Unknown part: the gang must still be sane.
				require.NotEmpty(t, d.Desired)
				return
			}
			require.Equal(t, grouper.SourceNone, d.Source)
			require.Empty(t, d.PodGroup)
			require.ErrorContains(t, d.Problem, "Widget ml/w does not fit definition widgets.example.com")
		})
	}
}

// widgetDefinition is a definition for the Widget kind, which the catalog does not know: one
// role, replicas from spec.workers, all of it one gang.
func widgetDefinition(t *testing.T) *definitions.Definition {
	t.Helper()
	return compileDefinition(t, widgetDefinitionYAML)
}

// compileDefinition decodes and compiles one definition.
func compileDefinition(t *testing.T, src string) *definitions.Definition {
	t.Helper()
	defs, err := definitions.Decode([]byte(src), "definition.yaml")
	require.NoError(t, err)
	def, err := definitions.Compile(defs[0], definitions.CompileOptions{})
	require.NoError(t, err)
	return def
}

// widgetDefinitionYAML is the Widget kind's definition (the catalog does not know Widget).
const widgetDefinitionYAML = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: widgets.example.com}
spec:
  workload: {group: example.com, kind: Widget, versions: [v1]}
  roles:
  - {name: worker, podTemplate: spec.template, replicas: "self.spec.workers"}
  gang:
    groups: [{name: all, members: [worker]}]
`

// TestHubRemembersPlacementsByLabels: pods placed by their labels alone are placed once per
// set of labels, and still each in its own group; a definition that reads more of a pod (its
// name) is asked every time.
func TestHubRemembersPlacementsByLabels(t *testing.T) {
	const byLabel = `
apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: widgets.example.com}
spec:
  workload: {group: example.com, kind: Widget, versions: [v1]}
  roles:
  - name: worker
    podTemplate: spec.template
    replicas: "self.spec.groups"
    podsPerReplica: "2"
    podReplica: "pod.metadata.labels['group']"
  gang:
    groups: [{name: g, members: [worker], scope: replica}]
`
	byName := strings.Replace(byLabel, `pod.metadata.labels['group']`, `pod.metadata.name.split('-')[1]`, 1)
	widget := partial(widgetGVK, "w", "widget", nil)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ml", "uid": "widget", "resourceVersion": "1"},
		"spec":     map[string]any{"groups": int64(2), "template": map[string]any{"spec": map[string]any{}}},
	}}
	tests := map[string]struct {
		yaml           string
		placesByLabels bool
	}{
		"placed by a label":     {yaml: byLabel, placesByLabels: true},
		"placed by a pod field": {yaml: byName, placesByLabels: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			def := compileDefinition(t, tc.yaml)
			require.Equal(t, tc.placesByLabels, def.PlacesByLabels())
			reg := definitions.NewRegistry()
			reg.Add(def)
			hub := &grouper.Hub{
				Owners: fakeResolverWith(t, []schema.GroupVersionKind{widgetGVK}, widget), Natives: grouper.DefaultNatives(),
				Definitions: func() *definitions.Registry { return reg },
				Object:      func(context.Context, grouper.Owner) (*unstructured.Unstructured, error) { return obj, nil },
			}
			for round := range 2 { // the second round is answered from what was remembered
				for _, group := range []string{"0", "1", "1", "0"} {
					p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
						Name: "w-" + group + "-" + fmt.Sprint(round), Namespace: "ml", UID: types.UID("p" + group + fmt.Sprint(round)),
						Labels:          map[string]string{"group": group},
						OwnerReferences: []metav1.OwnerReference{*controllerRef(widgetGVK, "w", "widget")},
					}}
					d, err := hub.Decide(context.Background(), p)
					require.NoError(t, err)
					require.Equal(t, "w-g-"+group, d.PodGroup, "round %d", round)
				}
			}
		})
	}
}
