package live

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/grouper"
)

// TestGangStatesNativeOnlyWhenPodsNameOne: a workload whose pods name no native PodGroup is
// not looked up among them (one request saved on every tree); one whose pods do is.
func TestGangStatesNativeOnlyWhenPodsNameOne(t *testing.T) {
	native := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha2", Resource: "podgroups"}
	tests := map[string]struct {
		podGroup  string // spec.schedulingGroup.podGroupName of every pod
		wantLists int
	}{
		"pods in no native PodGroup": {wantLists: 0},
		"pods in a native PodGroup":  {podGroup: "train-all", wantLists: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := jobSet(1, "Pending")
			for _, o := range objs {
				u := o.(*unstructured.Unstructured)
				if u.GetKind() == "Pod" && tc.podGroup != "" {
					require.NoError(t, unstructured.SetNestedField(u.Object, tc.podGroup, "spec", "schedulingGroup", "podGroupName"))
				}
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "batch", Version: "v1", Resource: "jobs"}: "JobList", {Version: "v1", Resource: "pods"}: "PodList",
				native: "PodGroupList", PodGroupsResource: "PodGroupList",
			}, objs...)
			r := &Resolver{Client: client}
			res, err := r.Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			client.ClearActions()
			// The pods ask for the default scheduler, which workmap-scheduler's name is not.
			require.NoError(t, r.GangStates(context.Background(), res.Workload, GangOptions{Schedulers: []string{"workmap-scheduler"}, NativePodGroups: &native}))
			lists := 0
			for _, a := range client.Actions() {
				if a.GetResource() == native {
					lists++
				}
			}
			require.Equal(t, tc.wantLists, lists)
		})
	}
}

// TestGangStatesDomain: a gang's domain is read from its scheduling.x-k8s.io PodGroup's
// topology-domain annotation, where the scheduler writes it once it places a constrained gang;
// a native PodGroup's annotations are not read.
func TestGangStatesDomain(t *testing.T) {
	native := schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha2", Resource: "podgroups"}
	podGroup := func(gvr schema.GroupVersionResource, annotations map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "PodGroup",
			"metadata": map[string]any{"name": "train-all", "namespace": "ml", "annotations": annotations},
			"status":   map[string]any{"phase": "Running", "scheduled": int64(2)},
		}}
	}
	placed := map[string]any{grouper.TopologyDomainAnnotation: "cloud.example.com/rack=r2"}
	tests := map[string]struct {
		podGroup    *unstructured.Unstructured
		schedulers  []string // the pods ask for the default scheduler
		wantBackend string
		wantDomain  string
	}{
		"placed in a domain": {podGroup: podGroup(PodGroupsResource, placed), schedulers: []string{"default-scheduler"}, wantBackend: BackendWorkmap, wantDomain: "cloud.example.com/rack=r2"},
		"not placed yet, or unconstrained": {
			podGroup: podGroup(PodGroupsResource, nil), schedulers: []string{"default-scheduler"}, wantBackend: BackendWorkmap},
		"a native PodGroup's annotation is not read": {
			podGroup: podGroup(native, placed), schedulers: []string{"workmap-scheduler"}, wantBackend: BackendNative},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := jobSet(1, "Running")
			for _, o := range objs {
				u := o.(*unstructured.Unstructured)
				if u.GetKind() == "Pod" && tc.wantBackend == BackendNative {
					require.NoError(t, unstructured.SetNestedField(u.Object, "train-all", "spec", "schedulingGroup", "podGroupName"))
				}
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "batch", Version: "v1", Resource: "jobs"}: "JobList", {Version: "v1", Resource: "pods"}: "PodList",
				native: "PodGroupList", PodGroupsResource: "PodGroupList",
			}, append(objs, tc.podGroup)...)
			r := &Resolver{Client: client}
			res, err := r.Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			require.NoError(t, r.GangStates(context.Background(), res.Workload, GangOptions{Schedulers: tc.schedulers, NativePodGroups: &native}))
			require.Len(t, res.Workload.Groups, 1)
			s := res.Workload.Groups[0].State
			require.NotNil(t, s)
			require.True(t, s.Found, "PodGroup %s found", s.PodGroup)
			require.Equal(t, tc.wantBackend, s.Backend)
			require.Equal(t, tc.wantDomain, s.Domain)
		})
	}
	t.Run("the PodGroup a pod names itself", func(t *testing.T) {
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			PodGroupsResource: "PodGroupList",
		}, podGroup(PodGroupsResource, placed))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml"}, Spec: corev1.PodSpec{SchedulerName: DefaultGangScheduler, NodeName: "n"}}
		s, err := (&Resolver{Client: client}).PodGroupState(context.Background(), pod, "train-all", BackendWorkmap, GangOptions{})
		require.NoError(t, err)
		require.Equal(t, "cloud.example.com/rack=r2", s.Domain)
	})
}

// TestGangStatesMadeBy: a scheduling.x-k8s.io PodGroup of a gang's name that workmap did not
// make says who did: its app.kubernetes.io/managed-by label, else its controller, else that
// another controller did; one workmap made says nothing.
func TestGangStatesMadeBy(t *testing.T) {
	tests := map[string]struct {
		labels     map[string]any
		owners     []any
		wantMadeBy string
	}{
		"made by workmap-scheduler":         {labels: map[string]any{grouper.ManagedByLabel: grouper.ManagedByValue}},
		"an operator's, by its label":       {labels: map[string]any{grouper.ManagedByLabel: "kuberay-operator"}, wantMadeBy: "kuberay-operator"},
		"a controller's, by its owner":      {owners: []any{map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "u1", "controller": true}}, wantMadeBy: "RayCluster/rc"},
		"an owner that is not a controller": {owners: []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"}}, wantMadeBy: "another controller"},
		"nothing says who":                  {wantMadeBy: "another controller"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			metadata := map[string]any{"name": "train-all", "namespace": "ml"}
			if tc.labels != nil {
				metadata["labels"] = tc.labels
			}
			if tc.owners != nil {
				metadata["ownerReferences"] = tc.owners
			}
			pg := &unstructured.Unstructured{Object: map[string]any{"apiVersion": PodGroupsResource.GroupVersion().String(), "kind": "PodGroup", "metadata": metadata}}
			objs := jobSet(1, "Running")
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "batch", Version: "v1", Resource: "jobs"}: "JobList", {Version: "v1", Resource: "pods"}: "PodList", PodGroupsResource: "PodGroupList",
			}, append(objs, pg)...)
			r := &Resolver{Client: client}
			res, err := r.Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			require.NoError(t, r.GangStates(context.Background(), res.Workload, GangOptions{Schedulers: []string{"default-scheduler"}}))
			s := res.Workload.Groups[0].State
			require.True(t, s.Found)
			require.Equal(t, BackendWorkmap, s.Backend)
			require.Equal(t, tc.wantMadeBy, s.MadeBy)
		})
	}
}

// TestNativeState: a native PodGroup of either served version says whether it is scheduled,
// and why not, in the condition of its version.
func TestNativeState(t *testing.T) {
	condition := func(typ, status, message string) map[string]any {
		return map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": typ, "status": status, "message": message}}}}
	}
	tests := map[string]struct {
		object                map[string]any
		wantPhase, wantReason string
	}{
		"v1alpha2, scheduled":    {object: condition("PodGroupScheduled", "True", ""), wantPhase: "Scheduled"},
		"v1alpha2, waiting":      {object: condition("PodGroupScheduled", "False", "2 of 3 pods fit"), wantPhase: "Pending", wantReason: "2 of 3 pods fit"},
		"v1beta1, scheduled":     {object: condition("PodGroupInitiallyScheduled", "True", ""), wantPhase: "Scheduled"},
		"v1beta1, waiting":       {object: condition("PodGroupInitiallyScheduled", "False", "0/4 nodes are available"), wantPhase: "Pending", wantReason: "0/4 nodes are available"},
		"another condition only": {object: condition("DisruptionTarget", "True", "preempted"), wantPhase: "Pending"},
		"no status yet":          {object: map[string]any{}, wantPhase: "Pending"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var s definitions.GangState
			setNativeState(&s, &unstructured.Unstructured{Object: tc.object})
			require.Equal(t, BackendNative, s.Backend)
			require.Equal(t, tc.wantPhase, s.Phase)
			require.Equal(t, tc.wantReason, s.Reason)
		})
	}
}

// TestGangStatesPriorityAndLastPreemption: a live gang's priority is its lowest pod's, and its
// last preemption the newest Preempted event on its PodGroup, relating the preemptor.
func TestGangStatesPriorityAndLastPreemption(t *testing.T) {
	event := func(name, podGroup, reason, by string, at time.Time) *unstructured.Unstructured {
		e := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ml"},
			InvolvedObject: corev1.ObjectReference{Kind: "PodGroup", Namespace: "ml", Name: podGroup},
			Reason:         reason, Message: "Preempted by " + by,
			EventTime: metav1.NewMicroTime(at),
			Related:   &corev1.ObjectReference{Kind: "PodGroup", Namespace: "ml", Name: by},
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("v1")
		u.SetKind("Event")
		return u
	}
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	podGroup := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PodGroupsResource.GroupVersion().String(), "kind": "PodGroup",
		"metadata": map[string]any{"name": "train-all", "namespace": "ml"},
		"status":   map[string]any{"phase": "Pending"},
	}}
	tests := map[string]struct {
		priorities []int64 // of the pods, in order; none: unset
		events     []*unstructured.Unstructured
		wantPrio   *int32
		wantLast   *definitions.Preemption
	}{
		"no priority, never preempted":    {},
		"the lowest priority of its pods": {priorities: []int64{100, 10}, wantPrio: ptr.To[int32](10)},
		"the newest preemption of its own PodGroup": {
			priorities: []int64{10, 10},
			events: []*unstructured.Unstructured{
				event("old", "train-all", "Preempted", "urgent", at),
				event("new", "train-all", "Preempted", "serving", at.Add(time.Minute)),
				event("other-gang", "other-all", "Preempted", "later", at.Add(2*time.Minute)),
				event("not-a-preemption", "train-all", "Created", "later", at.Add(3*time.Minute)),
			},
			wantPrio: ptr.To[int32](10),
			wantLast: &definitions.Preemption{By: "PodGroup ml/serving", At: "2026-12-04T10:01:00Z", Message: "Preempted by serving"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := jobSet(2, "Pending")
			i := 0
			for _, o := range objs {
				if u := o.(*unstructured.Unstructured); u.GetKind() == "Pod" && i < len(tc.priorities) {
					require.NoError(t, unstructured.SetNestedField(u.Object, tc.priorities[i], "spec", "priority"))
					i++
				}
			}
			all := append(objs, podGroup)
			for _, e := range tc.events {
				all = append(all, e)
			}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Group: "batch", Version: "v1", Resource: "jobs"}: "JobList", {Version: "v1", Resource: "pods"}: "PodList",
				PodGroupsResource: "PodGroupList", eventsResource: "EventList",
			}, all...)
			r := &Resolver{Client: client}
			res, err := r.Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			require.NoError(t, r.GangStates(context.Background(), res.Workload, GangOptions{Schedulers: []string{"default-scheduler"}, Reasons: true}))
			s := res.Workload.Groups[0].State
			require.Equal(t, tc.wantPrio, s.Priority)
			require.Equal(t, tc.wantLast, s.LastPreemption)
		})
	}
}
