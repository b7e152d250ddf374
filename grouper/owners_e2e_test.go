package grouper_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"

	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/grouper"
)

// TestTopOwnerRequestCount: resolving the top owner of 200 pods of one JobSet (pod → Job →
// JobSet) lists and watches each owner kind once and never GETs an owner per pod.
func TestTopOwnerRequestCount(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, NoScheduler: true})
	ctx := context.Background()
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "wide", "namespace": "default"},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{"parallelism": int64(100), "completions": int64(100),
				"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "i"}}}}}},
		}}},
	}}
	_, err := c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	var pods []metav1.Object
	require.Eventually(t, func() bool {
		list, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=wide"})
		if err != nil || len(list.Items) != 200 {
			return false
		}
		pods = pods[:0]
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
		return true
	}, 120*time.Second, 250*time.Millisecond, "the job controller makes 200 pods")

	var recorded harness.Requests
	cfg := recorded.Wrap(c.Config)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	r := grouper.NewOwnerResolver(metadata.NewForConfigOrDie(cfg), nil, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), stop)
	for _, p := range pods {
		top, err := r.TopOwner(ctx, p, "v1", "Pod")
		require.NoError(t, err)
		require.Equal(t, "JobSet", top.Kind)
		require.Equal(t, "wide", top.Name)
	}

	reqs := recorded.List()
	var objectRequests []string
	for _, req := range reqs {
		path := strings.TrimSuffix(strings.SplitN(req, " ", 2)[1], "/")
		if isDiscovery(path) {
			continue
		}
		objectRequests = append(objectRequests, req)
		require.False(t, strings.Contains(path, "/jobs/") || strings.Contains(path, "/jobsets/"), "GET of one owner: %s", req)
	}
	t.Logf("200 pods resolved with %d requests (%d discovery): %v", len(reqs), len(reqs)-len(objectRequests), objectRequests)
	require.LessOrEqual(t, len(objectRequests), 6, "a list and a watch per owner kind (Job, JobSet), give or take a re-watch")
}

// isDiscovery tells discovery paths (/api, /apis, /apis/<group>[/<version>]) from object paths.
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// TestOwnerReadInFullIsWatchedOnce: the top owner of a kind whose grouper reads it in full is
// cached in full from the start: its kind is watched once, not first for its metadata and then
// again in full when the grouper reads it (which held the first gang of a kind back by one more
// list, e.g. right after the scheduler started).
func TestOwnerReadInFullIsWatchedOnce(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, NoScheduler: true})
	ctx := context.Background()
	js, err := harness.ExampleJobSet("once", "workmap-scheduler", 0)
	require.NoError(t, err)
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	var pod metav1.Object
	require.Eventually(t, func() bool {
		list, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=once"})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		pod = &list.Items[0]
		return true
	}, 120*time.Second, 250*time.Millisecond, "the JobSet's pods")

	tests := map[string]struct {
		readsObject func(schema.GroupKind) bool
		want        int
	}{
		"a kind read in full: one watch":           {readsObject: func(gk schema.GroupKind) bool { return gk.Kind == "JobSet" }, want: 1},
		"told nothing: metadata first, then again": {want: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var recorded harness.Requests
			cfg := recorded.Wrap(c.Config)
			disc, err := discovery.NewDiscoveryClientForConfig(cfg)
			require.NoError(t, err)
			stop := make(chan struct{})
			defer close(stop)
			r := grouper.NewOwnerResolver(metadata.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg),
				restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), stop)
			r.ReadsObject = tc.readsObject
			top, err := r.TopOwner(ctx, pod, "v1", "Pod")
			require.NoError(t, err)
			require.Equal(t, "JobSet", top.Kind)
			obj, err := r.Object(ctx, top)
			require.NoError(t, err)
			require.Equal(t, "once", obj.GetName())
			jobsets := 0
			for _, req := range recorded.List() {
				if strings.HasSuffix(req, "/jobsets") {
					jobsets++
				}
			}
			require.Equal(t, tc.want, jobsets, "requests for JobSets: %v", recorded.List())
		})
	}
}
