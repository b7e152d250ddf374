package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
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
	m, client, _ := newMutatorServing(t, nativePodGroups)
	return m, client
}

// newMutatorServing is a mutator on a cluster that serves native PodGroups as resource, with
// the Jobs its hub reads (change one to change the workload).
func newMutatorServing(t *testing.T, resource schema.GroupVersionResource) (*webhook.Mutator, *dynamicfake.FakeDynamicClient, map[string]*unstructured.Unstructured) {
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
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{resource: "PodGroupList"})
	return &webhook.Mutator{
		Hub:               hub,
		Native:            webhook.NewNativePodGroups(client, resource, nil),
		WorkmapSchedulers: []string{"workmap-scheduler"},
		NativeSchedulers:  []string{corev1.DefaultSchedulerName},
	}, client, jobs
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

// TestNativePodGroupMadeAgain: a workload deleted and made again under the same name (its
// PodGroup garbage-collected with it) gets its PodGroup again for its next pod, whether or not
// the cache had seen the first one.
func TestNativePodGroupMadeAgain(t *testing.T) {
	tests := map[string]struct {
		seenFirst bool // the cache had the first PodGroup before it was deleted
	}{
		"the cache saw the PodGroup and its deletion":     {seenFirst: true},
		"the PodGroup went before the cache could see it": {seenFirst: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m, client := newMutator(t)
			go m.Native.Run(ctx)
			require.Eventually(t, m.Native.HasSynced, 10*time.Second, 10*time.Millisecond)
			podGroups := client.Resource(nativePodGroups).Namespace("ml")

			_, err := m.Mutate(ctx, jobPod("train", "", nil), false)
			require.NoError(t, err)
			if tc.seenFirst {
				require.Eventually(t, func() bool { return len(m.Native.OwnedBy("uid-train")) == 1 }, 10*time.Second, 10*time.Millisecond,
					"the PodGroup made is in the cache")
			}
			require.NoError(t, podGroups.Delete(ctx, "train-job", metav1.DeleteOptions{}))
			require.Eventually(t, func() bool { return len(m.Native.OwnedBy("uid-train")) == 0 }, 10*time.Second, 10*time.Millisecond,
				"the cache saw the deletion")
			if !tc.seenFirst {
				// The deletion may have reached the cache before the creation did: what
				// is remembered of the PodGroup goes with the deletion event.
				require.Eventually(t, func() bool {
					_, err := m.Mutate(ctx, jobPod("train", "", nil), false)
					require.NoError(t, err)
					_, err = podGroups.Get(ctx, "train-job", metav1.GetOptions{})
					return err == nil
				}, 10*time.Second, 10*time.Millisecond, "the PodGroup is made again")
				return
			}

			_, err = m.Mutate(ctx, jobPod("train", "", nil), false)
			require.NoError(t, err)
			_, err = podGroups.Get(ctx, "train-job", metav1.GetOptions{})
			require.NoError(t, err, "the PodGroup is made again")
		})
	}
}

// TestNativeMinCountFollowsTheWorkload: a Job scaled from 3 to 5 pods has its native
// PodGroup's minCount follow, with no new pod (the owner caches tell of the change) and
// again when a new pod is admitted, where the served version lets minCount change; on
// v1alpha2, whose PodGroup spec is immutable, it is left as it was made.
func TestNativeMinCountFollowsTheWorkload(t *testing.T) {
	tests := map[string]struct {
		version string
		want    int64
	}{
		"scheduling.k8s.io/v1beta1 (Kubernetes 1.37): minCount follows":         {version: "v1beta1", want: 5},
		"scheduling.k8s.io/v1alpha2 (Kubernetes 1.36): immutable, left as made": {version: "v1alpha2", want: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resource := schema.GroupVersionResource{Group: webhook.NativeGroup, Version: tc.version, Resource: "podgroups"}
			m, client, jobs := newMutatorServing(t, resource)
			go m.Native.Run(ctx)
			require.Eventually(t, m.Native.HasSynced, 10*time.Second, 10*time.Millisecond)
			_, err := m.Mutate(ctx, jobPod("train", "", nil), false)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return len(m.Native.OwnedBy("uid-train")) == 1 }, 10*time.Second, 10*time.Millisecond,
				"the PodGroup made is in the cache")
			minCount := func() int64 {
				pg, err := client.Resource(resource).Namespace("ml").Get(ctx, "train-job", metav1.GetOptions{})
				require.NoError(t, err)
				n, _, _ := unstructured.NestedInt64(pg.Object, "spec", "schedulingPolicy", "gang", "minCount")
				return n
			}
			require.EqualValues(t, 3, minCount())

			scaled := job("train", 5)
			scaled.SetGeneration(2)
			jobs["train"] = scaled
			m.WorkloadChanged(ctx, scaled)
			require.Equal(t, tc.want, minCount(), "after the Job's change")

			require.Eventually(t, func() bool {
				got, _, _ := unstructured.NestedInt64(m.Native.OwnedBy("uid-train")[0].Object, "spec", "schedulingPolicy", "gang", "minCount")
				return got == tc.want
			}, 10*time.Second, 10*time.Millisecond, "the cache has the change")
			scaled = job("train", 3)
			scaled.SetGeneration(3)
			jobs["train"] = scaled
			_, err = m.Mutate(ctx, jobPod("train", "", nil), false)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return minCount() == 3 }, 10*time.Second, 10*time.Millisecond,
				"a pod admitted after the Job went back to 3 brings minCount back")
		})
	}
}

// TestNativeMinCountRefusedStillJoins: a pod admitted while its PodGroup's minCount cannot be
// changed (the patch refused, say by RBAC) still joins the PodGroup that exists.
func TestNativeMinCountRefusedStillJoins(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resource := schema.GroupVersionResource{Group: webhook.NativeGroup, Version: "v1beta1", Resource: "podgroups"}
	m, client, jobs := newMutatorServing(t, resource)
	client.PrependReactor("patch", "podgroups", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(resource.GroupResource(), "train-job", errors.New("cannot patch"))
	})
	go m.Native.Run(ctx)
	require.Eventually(t, m.Native.HasSynced, 10*time.Second, 10*time.Millisecond)
	_, err := m.Mutate(ctx, jobPod("train", "", nil), false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(m.Native.OwnedBy("uid-train")) == 1 }, 10*time.Second, 10*time.Millisecond)

	scaled := job("train", 5)
	scaled.SetGeneration(2)
	jobs["train"] = scaled
	got, err := m.Mutate(ctx, jobPod("train", "", nil), false)
	require.NoError(t, err)
	require.Equal(t, webhook.OutcomeNative, got.Outcome)
	require.Equal(t, "train-job", ptr.Deref(patched(t, jobPod("train", "", nil), got).Spec.SchedulingGroup.PodGroupName, ""))
}
