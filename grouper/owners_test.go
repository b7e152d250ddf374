package grouper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workmap/workmap/grouper"
)

var (
	jobGVK    = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	jobSetGVK = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
)

func partial(gvk schema.GroupVersionKind, name string, uid types.UID, owner *metav1.OwnerReference) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", UID: uid, Labels: map[string]string{"from": name}},
	}
	if owner != nil {
		o.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return o
}

func controllerRef(gvk schema.GroupVersionKind, name string, uid types.UID) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: uid, Controller: &yes}
}

func fakeResolver(t testing.TB, objs ...runtime.Object) *grouper.OwnerResolver {
	t.Helper()
	return fakeResolverWith(t, []schema.GroupVersionKind{jobGVK, jobSetGVK}, objs...)
}

// fakeResolverWith resolves owners of the given kinds from a fake metadata client.
func fakeResolverWith(t testing.TB, kinds []schema.GroupVersionKind, objs ...runtime.Object) *grouper.OwnerResolver {
	t.Helper()
	r, _ := fakeResolverAndClient(t, kinds, objs...)
	return r
}

// fakeResolverAndClient is fakeResolverWith, with its fake client (to add reactors to).
func fakeResolverAndClient(t testing.TB, kinds []schema.GroupVersionKind, objs ...runtime.Object) (*grouper.OwnerResolver, *metadatafake.FakeMetadataClient) {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	client := metadatafake.NewSimpleMetadataClient(scheme, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range kinds {
		mapper.Add(k, meta.RESTScopeNamespace)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	r := grouper.NewOwnerResolver(client, nil, mapper, stop)
	r.Retry = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
	return r, client
}

// watchesOpened reports each watch the fake client opens, once it is open.
func watchesOpened(client *metadatafake.FakeMetadataClient) <-chan schema.GroupVersionResource {
	opened := make(chan schema.GroupVersionResource, 16)
	client.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		select {
		case opened <- action.GetResource():
		default:
		}
		return true, w, nil
	})
	return opened
}

// waitForWatches waits until a watch is open on each of the resources.
func waitForWatches(t *testing.T, opened <-chan schema.GroupVersionResource, resources ...schema.GroupVersionResource) {
	t.Helper()
	waiting := sets.New(resources...)
	for waiting.Len() > 0 {
		select {
		case gvr := <-opened:
			waiting.Delete(gvr)
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch opened on %v", waiting.UnsortedList())
		}
	}
}

func TestTopOwner(t *testing.T) {
	jobSet := partial(jobSetGVK, "train", "js", nil)
	job := partial(jobGVK, "train-workers-0", "job", controllerRef(jobSetGVK, "train", "js"))
	orphanJob := partial(jobGVK, "orphan", "job2", controllerRef(jobSetGVK, "gone", "gone-uid"))
	cycleA := partial(jobGVK, "a", "a", controllerRef(jobGVK, "b", "b"))
	cycleB := partial(jobGVK, "b", "b", controllerRef(jobGVK, "a", "a"))
	recreated := partial(jobSetGVK, "recreated", "new-uid", nil)

	tests := map[string]struct {
		owner     *metav1.OwnerReference
		wantName  string
		wantKind  string
		wantDepth int
		wantErr   error
	}{
		"pod → Job → JobSet":                           {owner: controllerRef(jobGVK, "train-workers-0", "job"), wantName: "train", wantKind: "JobSet", wantDepth: 2},
		"a pod without owner is its own":               {owner: nil, wantName: "pod", wantKind: "Pod"},
		"missing owner: stop at the last one":          {owner: controllerRef(jobGVK, "orphan", "job2"), wantName: "orphan", wantKind: "Job", wantDepth: 1, wantErr: grouper.ErrOwnerNotFound},
		"owner recreated with another UID":             {owner: controllerRef(jobSetGVK, "recreated", "old-uid"), wantName: "pod", wantKind: "Pod", wantErr: grouper.ErrOwnerNotFound},
		"ownership cycle: the pod is its own workload": {owner: controllerRef(jobGVK, "a", "a"), wantName: "pod", wantKind: "Pod", wantErr: grouper.ErrOwnerCycle},
		"a chain longer than MaxDepth: the pod is its own workload": {owner: controllerRef(jobGVK, "link-0", "link-0"), wantName: "pod", wantKind: "Pod",
			wantErr: grouper.ErrOwnerChainTooLong},
		"a chain of exactly MaxDepth owners resolves": {owner: controllerRef(jobGVK, "link-2", "link-2"), wantName: "link-11", wantKind: "Job", wantDepth: 10},
		"an owner reference without a UID":            {owner: controllerRef(jobGVK, "a", ""), wantName: "pod", wantKind: "Pod", wantErr: grouper.ErrOwnerInvalid},
		"an apiVersion that does not parse":           {owner: controllerRef(schema.GroupVersionKind{Group: "a/b", Version: "v1", Kind: "Job"}, "a", "a"), wantName: "pod", wantKind: "Pod", wantErr: grouper.ErrOwnerInvalid},
	}
	objs := []runtime.Object{jobSet, job, orphanJob, cycleA, cycleB, recreated}
	// link-0 → link-1 → ... → link-11: twelve owners, two more than MaxDepth.
	for i := range 12 {
		var owner *metav1.OwnerReference
		if i < 11 {
			owner = controllerRef(jobGVK, fmt.Sprintf("link-%d", i+1), types.UID(fmt.Sprintf("link-%d", i+1)))
		}
		objs = append(objs, partial(jobGVK, fmt.Sprintf("link-%d", i), types.UID(fmt.Sprintf("link-%d", i)), owner))
	}
	r := fakeResolver(t, objs...)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &metav1.ObjectMeta{Name: "pod", Namespace: "ml", UID: "pod-uid"}
			if tc.owner != nil {
				pod.OwnerReferences = []metav1.OwnerReference{*tc.owner}
			}
			top, err := r.TopOwner(context.Background(), pod, "v1", "Pod")
			if tc.wantErr != nil {
				require.True(t, errors.Is(err, tc.wantErr), "got %v", err)
			} else {
				require.NoError(t, err)
			}
			if tc.wantName != "" {
				require.Equal(t, tc.wantName, top.Name)
				require.Equal(t, tc.wantKind, top.Kind)
				require.Equal(t, tc.wantDepth, top.Depth)
			}
		})
	}
	require.Len(t, r.Watching(), 2, "one informer per owner kind seen")
}

// TestTopOwnerUnreadableKind: an owner whose kind the resolver may not list (or that is no
// longer served) is reported as soon as the list fails, with its reason; the lookup does not
// wait for a cache that cannot fill.
func TestTopOwnerUnreadableKind(t *testing.T) {
	for name, tc := range map[string]struct {
		listErr    error
		wantReason string
	}{
		"list forbidden":        {listErr: apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", errors.New("RBAC")), wantReason: grouper.ProblemOwnerForbidden},
		"kind no longer served": {listErr: apierrors.NewNotFound(schema.GroupResource{Group: "batch", Resource: "jobs"}, ""), wantReason: grouper.ProblemOwnerUnreadable},
	} {
		t.Run(name, func(t *testing.T) {
			r, client := fakeResolverAndClient(t, []schema.GroupVersionKind{jobGVK})
			client.PrependReactor("list", "jobs", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.listErr })
			reg := prometheus.NewRegistry()
			r.WatchErrors = grouper.NewWatchErrors(reg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pod := &metav1.ObjectMeta{Name: "pod", Namespace: "ml", UID: "pod-uid", OwnerReferences: []metav1.OwnerReference{*controllerRef(jobGVK, "train", "job")}}
			start := time.Now()
			top, err := r.TopOwner(ctx, pod, "v1", "Pod")
			require.Error(t, err)
			require.Less(t, time.Since(start), 10*time.Second, "the lookup ends with the failed list, not the context")
			require.True(t, errors.Is(err, grouper.ErrOwnerUnreadable), "got %v", err)
			require.Equal(t, tc.wantReason, grouper.ProblemReason(err), "reason of %v", err)
			require.Equal(t, "pod", top.Name, "the chain stops at the pod")
			require.Positive(t, testutil.ToFloat64(r.WatchErrors.Counter().WithLabelValues("jobs.batch", grouper.WatchErrorReason(tc.listErr))))
		})
	}
}

// TestOnDeleteTellsOfDeletedOwners: the hub forgets a workload's gangs when its owner cache
// sees it deleted, whether it was told to before or after the caches started; every owner of
// the chain is told of, the workload and what it owns.
func TestOnDeleteTellsOfDeletedOwners(t *testing.T) {
	jobSets := schema.GroupVersionResource{Group: jobSetGVK.Group, Version: jobSetGVK.Version, Resource: "jobsets"}
	jobs := schema.GroupVersionResource{Group: jobGVK.Group, Version: jobGVK.Version, Resource: "jobs"}
	for name, registerFirst := range map[string]bool{
		"registered before the first lookup starts the caches": true,
		"registered once the caches run":                       false,
	} {
		t.Run(name, func(t *testing.T) {
			r, client := fakeResolverAndClient(t, []schema.GroupVersionKind{jobGVK, jobSetGVK},
				partial(jobSetGVK, "train", "js", nil), partial(jobGVK, "train-workers-0", "job", controllerRef(jobSetGVK, "train", "js")))
			watching := watchesOpened(client)
			deleted := make(chan types.UID, 4)
			if registerFirst {
				r.OnDelete(func(uid types.UID) { deleted <- uid })
			}
			pod := &metav1.ObjectMeta{Name: "pod", Namespace: "ml", UID: "pod-uid",
				OwnerReferences: []metav1.OwnerReference{*controllerRef(jobGVK, "train-workers-0", "job")}}
			top, err := r.TopOwner(context.Background(), pod, "v1", "Pod")
			require.NoError(t, err)
			require.Equal(t, types.UID("js"), top.UID)
			if !registerFirst {
				r.OnDelete(func(uid types.UID) { deleted <- uid })
			}

			// A cache is synced once its list is in, a moment before its watch opens; the fake
			// client, unlike an API server, does not replay a deletion made in that moment.
			waitForWatches(t, watching, jobs, jobSets)
			ctx := context.Background()
			require.NoError(t, client.Resource(jobSets).Namespace("ml").Delete(ctx, "train", metav1.DeleteOptions{}))
			require.NoError(t, client.Resource(jobs).Namespace("ml").Delete(ctx, "train-workers-0", metav1.DeleteOptions{}))
			var got []types.UID
			for range 2 {
				select {
				case uid := <-deleted:
					got = append(got, uid)
				case <-time.After(10 * time.Second):
					t.Fatalf("told of %v, want js and job", got)
				}
			}
			require.ElementsMatch(t, []types.UID{"js", "job"}, got)
		})
	}
}
