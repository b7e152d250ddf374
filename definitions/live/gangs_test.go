package live

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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
