package live

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
)

// catalogDefinition is the embedded catalog's definition of a kind.
func catalogDefinition(t *testing.T, group, kind string) *definitions.Definition {
	t.Helper()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	d, ok := reg.Lookup(schema.GroupKind{Group: group, Kind: kind})
	require.True(t, ok, "%s.%s in the catalog", kind, group)
	return d
}

func jobSetDefinition(t *testing.T) *definitions.Definition {
	t.Helper()
	return catalogDefinition(t, "jobset.x-k8s.io", "JobSet")
}

func obj(apiVersion, kind, ns, name string, uid types.UID, labels map[string]any, owner types.UID, extra map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": ns, "uid": string(uid), "labels": labels}
	if owner != "" {
		md["ownerReferences"] = []any{map[string]any{"apiVersion": "x/v1", "kind": "Owner", "name": "o", "uid": string(owner), "controller": true}}
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range extra {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// jobSet returns a JobSet with one leader and `workers` worker Jobs, one pod each, with its
// Jobs and pods in the given phase, plus objects of another JobSet that must not be picked up.
func jobSet(workers int, podPhase string) []runtime.Object {
	labels := func(set, rj string, idx int) map[string]any {
		return map[string]any{"jobset.sigs.k8s.io/jobset-name": set, "jobset.sigs.k8s.io/replicatedjob-name": rj, "jobset.sigs.k8s.io/job-index": fmt.Sprint(idx)}
	}
	tmpl := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "c", "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "4"}}},
	}}}}}
	root := obj("jobset.x-k8s.io/v1alpha2", "JobSet", "ml", "train", "js-uid", nil, "", map[string]any{"spec": map[string]any{"replicatedJobs": []any{
		map[string]any{"name": "leader", "replicas": int64(1), "template": tmpl},
		map[string]any{"name": "workers", "replicas": int64(workers), "template": tmpl},
	}}})
	objs := []runtime.Object{root}
	add := func(rj string, idx int) {
		jobUID := types.UID(fmt.Sprintf("job-%s-%d", rj, idx))
		objs = append(objs,
			obj("batch/v1", "Job", "ml", fmt.Sprintf("train-%s-%d", rj, idx), jobUID, labels("train", rj, idx), "js-uid", map[string]any{"status": map[string]any{"active": int64(1)}}),
			obj("v1", "Pod", "ml", fmt.Sprintf("train-%s-%d-0", rj, idx), types.UID("pod-"+jobUID), labels("train", rj, idx), jobUID, map[string]any{"status": map[string]any{"phase": podPhase}}),
		)
	}
	add("leader", 0)
	for i := 0; i < workers; i++ {
		add("workers", i)
	}
	// Another JobSet's Job and pod in the same namespace.
	objs = append(objs,
		obj("batch/v1", "Job", "ml", "other-workers-0", "other-job", labels("other", "workers", 0), "other-js", nil),
		obj("v1", "Pod", "ml", "other-workers-0-0", "other-pod", labels("other", "workers", 0), "other-job", nil),
	)
	return objs
}

func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: "batch", Version: "v1", Resource: "jobs"}:                    "JobList",
		{Version: "v1", Resource: "pods"}:                                    "PodList",
		{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}: "JobSetList",
	}, objs...)
}

func TestResolveJobSet(t *testing.T) {
	tests := map[string]struct {
		workers   int
		podPhase  string
		wantState v1alpha1.State
	}{
		"running pods make the JobSet Running": {workers: 2, podPhase: "Running", wantState: v1alpha1.StateRunning},
		"pending pods keep it Pending":         {workers: 2, podPhase: "Pending", wantState: v1alpha1.StatePending},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := jobSet(tc.workers, tc.podPhase)
			client := fakeClient(objs...)
			res, err := (&Resolver{Client: client}).Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			w := res.Workload
			require.Len(t, res.Children["jobs"], tc.workers+1)
			require.Len(t, res.Pods, tc.workers+1)
			require.Equal(t, tc.wantState, w.Status.State, w.Status.Reason)
			require.EqualValues(t, 4*(tc.workers+1), w.Totals.GPUs)
			require.Zero(t, w.Live.Unassigned)
			require.EqualValues(t, tc.workers, *w.Roles[1].PodsFound)
			require.Equal(t, tc.workers, w.Roles[1].Phases[tc.podPhase])
		})
	}
}

// TestResolveRequestCount: one resolution of a workload with 100 pods makes one list per
// child kind plus one for pods — within the budget of (child kinds + 3).
func TestResolveRequestCount(t *testing.T) {
	objs := jobSet(99, "Running")
	client := fakeClient(objs...)
	def := jobSetDefinition(t)
	res, err := (&Resolver{Client: client}).Resolve(context.Background(), def, objs[0].(*unstructured.Unstructured))
	require.NoError(t, err)
	require.Len(t, res.Pods, 100)
	require.LessOrEqual(t, len(client.Actions()), len(def.Children())+3)
	for _, a := range client.Actions() {
		require.Equal(t, "list", a.GetVerb(), "only list calls: %v", a)
	}
}

// TestResolveByOwnerReferences: without label selectors, children and pods are found through
// the ownership chain root → Job → Pod.
func TestResolveByOwnerReferences(t *testing.T) {
	src := jobSetDefinition(t).Source.DeepCopy()
	src.Spec.Pods = nil
	for i := range src.Spec.Children {
		src.Spec.Children[i].Selector = ""
	}
	def, err := definitions.Compile(src, definitions.CompileOptions{})
	require.NoError(t, err)
	objs := jobSet(2, "Running")
	res, err := (&Resolver{Client: fakeClient(objs...)}).Resolve(context.Background(), def, objs[0].(*unstructured.Unstructured))
	require.NoError(t, err)
	require.Len(t, res.Children["jobs"], 3)
	require.Len(t, res.Pods, 3)
	for _, p := range res.Pods {
		require.NotContains(t, p.GetName(), "other")
	}
}

func TestResolveChildKindNotServed(t *testing.T) {
	objs := jobSet(1, "Running")
	client := fakeClient(objs...)
	client.PrependReactor("list", "jobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, "")
	})
	res, err := (&Resolver{Client: client}).Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
	require.NoError(t, err)
	require.Empty(t, res.Children["jobs"])
	require.Len(t, res.Pods, 2)
	require.Contains(t, strings.Join(res.Workload.Warnings, "\n"), "jobs.batch is not served")
}

func TestResolveForbiddenNamesResource(t *testing.T) {
	objs := jobSet(1, "Running")
	client := fakeClient(objs...)
	client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("RBAC says no"))
	})
	_, err := (&Resolver{Client: client}).Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err))
	require.Contains(t, err.Error(), `listing pods in namespace "ml"`)
}

// TestResolveWithCache: many workloads of one namespace cost one list per resource.
func TestResolveWithCache(t *testing.T) {
	objs := jobSet(2, "Running")
	client := fakeClient(objs...)
	r := &Resolver{Client: client, Cache: NewListCache()}
	def := jobSetDefinition(t)
	for i := 0; i < 3; i++ {
		res, err := r.Resolve(context.Background(), def, objs[0].(*unstructured.Unstructured))
		require.NoError(t, err)
		require.Len(t, res.Pods, 3, "the other JobSet's pod is filtered out locally")
		require.Len(t, res.Children["jobs"], 3)
	}
	require.Len(t, client.Actions(), 2, "one list of jobs and one of pods for three resolutions")
}

// mapLister serves lists from memory, as an informer cache would.
type mapLister []runtime.Object

func (m mapLister) List(_ context.Context, gvr schema.GroupVersionResource, ns string, sel map[string]string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range m {
		u := o.(*unstructured.Unstructured)
		gvk := u.GroupVersionKind()
		if gvk.Group != gvr.Group || u.GetNamespace() != ns || strings.ToLower(gvk.Kind)+"s" != gvr.Resource {
			continue
		}
		match := true
		for k, v := range sel {
			match = match && u.GetLabels()[k] == v
		}
		if match {
			out = append(out, u)
		}
	}
	return out, nil
}

// TestResolveWithLister: a Lister serves every list; the client is not called.
func TestResolveWithLister(t *testing.T) {
	objs := jobSet(2, "Running")
	client := fakeClient()
	res, err := (&Resolver{Client: client, Lister: mapLister(objs)}).Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
	require.NoError(t, err)
	require.Len(t, res.Children["jobs"], 3)
	require.Len(t, res.Pods, 3)
	require.Equal(t, v1alpha1.StateRunning, res.Workload.Status.State)
	require.Empty(t, client.Actions())
}

// TestResolveSpecWhenForbidden: a user who may not list the children or the pods still gets
// the workload from its spec, with each refused list named and the role to ask for.
func TestResolveSpecWhenForbidden(t *testing.T) {
	const (
		jobsRefused = "cannot list jobs.batch in namespace ml: forbidden; ask for the built-in view role in namespace ml"
		podsRefused = "cannot list pods in namespace ml: forbidden; ask for the built-in view role in namespace ml"
	)
	tests := map[string]struct {
		forbidden     []string // resources whose lists are refused
		wantForbidden []string
	}{
		"jobs refused": {forbidden: []string{"jobs"}, wantForbidden: []string{jobsRefused}},
		"pods refused": {forbidden: []string{"pods"}, wantForbidden: []string{podsRefused}},
		"both refused": {forbidden: []string{"jobs", "pods"}, wantForbidden: []string{jobsRefused, podsRefused}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs := jobSet(2, "Running")
			client := fakeClient(objs...)
			for _, resource := range tc.forbidden {
				client.PrependReactor("list", resource, func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", fmt.Errorf("RBAC says no"))
				})
			}
			res, err := (&Resolver{Client: client, SpecWhenForbidden: true}).Resolve(context.Background(), jobSetDefinition(t), objs[0].(*unstructured.Unstructured))
			require.NoError(t, err)
			require.Equal(t, tc.wantForbidden, res.Forbidden)
			w := res.Workload
			require.Nil(t, w.Live, "no live data: the tree comes from the spec")
			require.Empty(t, res.Pods)
			require.Len(t, w.Roles, 2)
			require.EqualValues(t, 3, w.Totals.Pods)
			require.EqualValues(t, 12, w.Totals.GPUs)
			for _, f := range tc.wantForbidden {
				short, role, _ := strings.Cut(f, "; ")
				require.Contains(t, w.Warnings, short+": showing what the spec gives, without live children and pods; "+role)
			}
		})
	}
}
