package live

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// richPod has fields of every shape the conversion must keep as JSON gives them: quantities,
// times, integers, booleans, nested lists.
func richPod(i int) *corev1.Pod {
	created := metav1.Date(2026, 12, 1, 10, 0, i, 0, metav1.Now().Location())
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("train-workers-0-%d", i), Namespace: "ml", UID: types.UID(fmt.Sprintf("pod-%d", i)),
			CreationTimestamp: created, Labels: map[string]string{"jobset.sigs.k8s.io/jobset-name": "train"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train-workers-0", UID: "job", Controller: new(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "gpu-1",
			Containers: []corev1.Container{{Name: "trainer", Image: "trainer:1", Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "trainer", RestartCount: 3, Ready: true,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}},
		},
	}
}

// TestListPodsAsJSONGivesThem: pods listed through the typed client are the same maps the
// dynamic client decodes from the API server's JSON, so definitions read them alike.
func TestListPodsAsJSONGivesThem(t *testing.T) {
	tests := map[string]int{"one pod": 1, "enough pods to convert in parallel": 3 * minPerWorker}
	for name, n := range tests {
		t.Run(name, func(t *testing.T) {
			var objs []runtime.Object
			var want []*unstructured.Unstructured
			for i := range n {
				pod := richPod(i)
				data, err := json.Marshal(pod)
				require.NoError(t, err)
				u := &unstructured.Unstructured{}
				require.NoError(t, u.UnmarshalJSON(data))
				want = append(want, u)
				// The API server's pods carry managedFields; the conversion leaves them out.
				pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{}}}`)}}}
				objs = append(objs, pod)
			}
			got, err := listPods(context.Background(), kubefake.NewClientset(objs...).CoreV1(), "ml", metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, got, n)
			byName := map[string]*unstructured.Unstructured{}
			for _, u := range got {
				byName[u.GetName()] = u
			}
			for _, w := range want {
				if diff := cmp.Diff(w.Object, byName[w.GetName()].Object); diff != "" {
					t.Fatalf("pod %s (-JSON +typed):\n%s", w.GetName(), diff)
				}
			}
		})
	}
}

// TestResolveWithTypedPods: a resolution whose pods come from the typed client places them
// as one whose pods come from the dynamic client.
func TestResolveWithTypedPods(t *testing.T) {
	objs := jobSet(3, "Running")
	var pods []runtime.Object
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if u.GetKind() != "Pod" {
			continue
		}
		var pod corev1.Pod
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod))
		pods = append(pods, &pod)
	}
	root := objs[0].(*unstructured.Unstructured)
	dynamicOnly, err := (&Resolver{Client: fakeClient(objs...)}).Resolve(context.Background(), jobSetDefinition(t), root)
	require.NoError(t, err)
	typed, err := (&Resolver{Client: fakeClient(objs...), Pods: kubefake.NewClientset(pods...).CoreV1()}).Resolve(context.Background(), jobSetDefinition(t), root)
	require.NoError(t, err)
	require.Len(t, typed.Pods, 4)
	want, err := json.Marshal(dynamicOnly.Workload)
	require.NoError(t, err)
	got, err := json.Marshal(typed.Workload)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
