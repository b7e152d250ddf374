package webhook_test

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/webhook"
)

var nativePodGroups = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha2", Resource: "podgroups"}

// owners resolves every pod to the Job named in its controller reference, as the informers
// would.
type owners map[string]grouper.Owner

func (o owners) TopOwner(_ context.Context, obj metav1.Object, apiVersion, kind string) (grouper.Owner, error) {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		if owner, ok := o[ref.Name]; ok {
			return owner, nil
		}
	}
	return grouper.Owner{APIVersion: apiVersion, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(), Annotations: obj.GetAnnotations()}, nil
}

func job(name string, parallelism int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": "ml", "uid": "uid-" + name, "generation": int64(1)},
		"spec":     map[string]any{"parallelism": parallelism},
	}}
}

func jobPod(jobName, scheduler string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: jobName + "-", Namespace: "ml", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobName, UID: types.UID("uid-" + jobName), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// barePod is a new pod no workload owns, with these annotations.
func barePod(annotations map[string]string) *corev1.Pod {
	pod := jobPod("none", "", nil)
	pod.OwnerReferences, pod.Annotations = nil, annotations
	return pod
}

func newMutator(t *testing.T) (*webhook.Mutator, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	jobs := map[string]*unstructured.Unstructured{"train": job("train", 3), "single": job("single", 1)}
	o := owners{}
	for name, j := range jobs {
		o[name] = grouper.Owner{APIVersion: "batch/v1", Kind: "Job", Namespace: "ml", Name: name, UID: j.GetUID(), Generation: 1}
	}
	reg, err := catalog.Registry()
	require.NoError(t, err)
	hub := &grouper.Hub{
		Owners:      o,
		Natives:     grouper.DefaultNatives(),
		Definitions: func() *definitions.Registry { return reg },
		Object: func(_ context.Context, owner grouper.Owner) (*unstructured.Unstructured, error) {
			return jobs[owner.Name], nil
		},
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{nativePodGroups: "PodGroupList"})
	return &webhook.Mutator{
		Hub:               hub,
		Native:            webhook.NewNativePodGroups(client, nativePodGroups, nil),
		WorkmapSchedulers: []string{"workmap-scheduler"},
		NativeSchedulers:  []string{corev1.DefaultSchedulerName},
	}, client
}

// patched applies a mutation's patch to the pod.
func patched(t *testing.T, pod *corev1.Pod, m webhook.Mutation) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(pod)
	require.NoError(t, err)
	if len(m.Patch) > 0 {
		ops, err := json.Marshal(m.Patch)
		require.NoError(t, err)
		p, err := jsonpatch.DecodePatch(ops)
		require.NoError(t, err)
		raw, err = p.Apply(raw)
		require.NoError(t, err)
	}
	var out corev1.Pod
	require.NoError(t, json.Unmarshal(raw, &out))
	return &out
}

func TestMutate(t *testing.T) {
	tests := map[string]struct {
		pod          *corev1.Pod
		want         webhook.Outcome
		wantGroup    string // spec.schedulingGroup.podGroupName
		wantLabel    string // the scheduling.x-k8s.io pod-group label
		wantPodGroup bool   // a native PodGroup was made
	}{
		"a Job's pod for kube-scheduler joins a native PodGroup": {
			pod: jobPod("train", "", nil), want: webhook.OutcomeNative, wantGroup: "train-job", wantPodGroup: true},
		"a Job's pod for workmap-scheduler is labelled": {
			pod: jobPod("train", "workmap-scheduler", map[string]string{"app": "x"}), want: webhook.OutcomeLabelled, wantLabel: "train-job"},
		"a Job of one pod has no gang": {
			pod: jobPod("single", "", nil), want: webhook.OutcomeNoGang},
		"a pod that names its pod group is left alone": {
			pod: jobPod("train", "", map[string]string{v1alpha1.PodGroupLabel: "operators"}), want: webhook.OutcomeSkipped, wantLabel: "operators"},
		"a pod for another scheduler is left alone": {
			pod: jobPod("train", "volcano", nil), want: webhook.OutcomeSkipped},
		"a bare pod that asks for a gang is not grouped at admission (no UID to own its PodGroup)": {
			pod: barePod(map[string]string{definitions.AnnotationMinMember: "2"}), want: webhook.OutcomeNoGang},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, client := newMutator(t)
			got, err := m.Mutate(context.Background(), tc.pod, false)
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Outcome, got.Detail)
			pod := patched(t, tc.pod, got)
			require.Equal(t, tc.wantLabel, pod.Labels[v1alpha1.PodGroupLabel])
			if tc.wantGroup == "" {
				require.Nil(t, pod.Spec.SchedulingGroup)
			} else {
				require.Equal(t, tc.wantGroup, ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""))
			}
			list, err := client.Resource(nativePodGroups).Namespace("ml").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			if !tc.wantPodGroup {
				require.Empty(t, list.Items)
				return
			}
			require.Len(t, list.Items, 1)
			pg := list.Items[0]
			require.Equal(t, tc.wantGroup, pg.GetName())
			min, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
			require.Equal(t, int64(3), min)
			require.Equal(t, []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "uid-train"}}, pg.GetOwnerReferences())
		})
	}
}

// TestMutateMakesOnePodGroupPerGang: the pods of one gang share one PodGroup, made once.
func TestMutateMakesOnePodGroupPerGang(t *testing.T) {
	m, client := newMutator(t)
	for range 3 {
		got, err := m.Mutate(context.Background(), jobPod("train", "", nil), false)
		require.NoError(t, err)
		require.Equal(t, webhook.OutcomeNative, got.Outcome)
	}
	creates := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" {
			creates++
		}
	}
	require.Equal(t, 1, creates)
}
