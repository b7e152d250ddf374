package live

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
)

// TestPartOfAnother: a root object is a workload of its own unless a workload kind controls
// it; a Job or a pod, which the scheduler gangs by the top of their owner chain, is not one
// when anything controls it.
func TestPartOfAnother(t *testing.T) {
	jobSet := schema.GroupKind{Group: "jobset.x-k8s.io", Kind: "JobSet"}
	isWorkload := func(gk schema.GroupKind) bool { return gk == jobSet }
	controlledBy := func(apiVersion, kind string) metav1.Object {
		o := &metav1.ObjectMeta{Name: "x"}
		if kind != "" {
			o.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "owner", Controller: ptr.To(true)}}
		}
		return o
	}
	job := schema.GroupKind{Group: "batch", Kind: "Job"}
	pod := schema.GroupKind{Kind: "Pod"}
	rayCluster := schema.GroupKind{Group: "ray.io", Kind: "RayCluster"}
	tests := map[string]struct {
		obj  metav1.Object
		kind schema.GroupKind
		want bool
	}{
		"a Job nothing controls":           {obj: controlledBy("", ""), kind: job},
		"a JobSet's Job":                   {obj: controlledBy("jobset.x-k8s.io/v1alpha2", "JobSet"), kind: job, want: true},
		"a CronJob's Job":                  {obj: controlledBy("batch/v1", "CronJob"), kind: job, want: true},
		"a pod on its own":                 {obj: controlledBy("", ""), kind: pod},
		"a ReplicaSet's pod":               {obj: controlledBy("apps/v1", "ReplicaSet"), kind: pod, want: true},
		"a framework's object, controlled": {obj: controlledBy("jobset.x-k8s.io/v1alpha2", "JobSet"), kind: rayCluster, want: true},
		"a framework's object an unknown controller controls": {obj: controlledBy("example.com/v1", "Widget"), kind: rayCluster},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, PartOfAnother(tc.obj, tc.kind, isWorkload))
		})
	}
}

// TestResolveBarePod: a pod on its own is its own pod, and no other pod of its namespace is.
func TestResolveBarePod(t *testing.T) {
	kinds, err := catalog.KubernetesKinds()
	require.NoError(t, err)
	defs, err := definitions.CompileAll(kinds, nil)
	require.NoError(t, err)
	reg := definitions.NewRegistry()
	reg.Add(defs...)
	def, ok := reg.Lookup(schema.GroupKind{Kind: "Pod"})
	require.True(t, ok)
	running := map[string]any{"status": map[string]any{"phase": "Running"}}
	solo := obj("v1", "Pod", "ml", "solo", "solo-uid", nil, "", running)
	other := obj("v1", "Pod", "ml", "other", "other-uid", nil, "", running)
	res, err := (&Resolver{Client: fakeClient(solo, other)}).Resolve(context.Background(), def, solo)
	require.NoError(t, err)
	var names []string
	for _, p := range res.Pods {
		names = append(names, p.GetName())
	}
	require.Equal(t, []string{"solo"}, names)
	require.EqualValues(t, 1, *res.Workload.Roles[0].PodsFound)
}
