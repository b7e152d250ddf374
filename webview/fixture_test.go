package webview

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/grouper"
)

var (
	jobSets = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	jobs    = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	lwsets  = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
)

// exampleJobSet is examples/jobset-leader-workers.yaml in a namespace, with workers replicas.
func exampleJobSet(t *testing.T, ns, name string, workers int64) *unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.ReadFile("../examples/jobset-leader-workers.yaml")
	require.NoError(t, err)
	js := docs[0].Object
	js.SetNamespace(ns)
	js.SetName(name)
	js.SetUID(k8stypes.UID(ns + "/JobSet/" + name))
	js.SetCreationTimestamp(metav1.NewTime(time.Now().Add(-90 * time.Second)))
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	rjs[1].(map[string]any)["replicas"] = workers
	require.NoError(t, unstructured.SetNestedSlice(js.Object, rjs, "spec", "replicatedJobs"))
	return js
}

func jobSetLabels(set, rj string, idx int) map[string]any {
	return map[string]any{"jobset.sigs.k8s.io/jobset-name": set, "jobset.sigs.k8s.io/replicatedjob-name": rj, "jobset.sigs.k8s.io/job-index": fmt.Sprint(idx)}
}

func object(apiVersion, kind, ns, name string, lbls map[string]any, extra map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns, "uid": ns + "/" + kind + "/" + name, "labels": lbls, "resourceVersion": "1"}}
	for k, v := range extra {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// pod is a pod of a JobSet in a phase, on gpu-node-0 but while Pending; ready when Running.
func pod(ns, set, rj string, idx int, phase string) *unstructured.Unstructured {
	node := "gpu-node-0"
	if phase == "Pending" {
		node = ""
	}
	return podOn(ns, set, rj, idx, phase, node)
}

// podOn is a pod of a JobSet in a phase, on a node ("": not bound); ready when Running.
func podOn(ns, set, rj string, idx int, phase, node string) *unstructured.Unstructured {
	status := map[string]any{"phase": phase}
	if phase == "Running" {
		status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True"}}
	}
	spec := map[string]any{"containers": []any{map[string]any{"name": "trainer", "image": "x", "env": []any{map[string]any{"name": "TOKEN", "value": "s3cr3t-env-value"}}}}}
	if node != "" {
		spec["nodeName"] = node
	}
	return object("v1", "Pod", ns, fmt.Sprintf("%s-%s-%d-0", set, rj, idx), jobSetLabels(set, rj, idx), map[string]any{"spec": spec, "status": status})
}

// unschedulable marks a pending pod as the scheduler leaves it: PodScheduled false, with why.
func unschedulable(p *unstructured.Unstructured, message string) *unstructured.Unstructured {
	_ = unstructured.SetNestedSlice(p.Object, []any{map[string]any{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}}, "status", "conditions")
	return p
}

// node is a node with GPUs and labels, Ready.
func node(name string, gpus int64, labels map[string]any) *unstructured.Unstructured {
	all := map[string]any{"kubernetes.io/hostname": name}
	for k, v := range labels {
		all[k] = v
	}
	n := object("v1", "Node", "", name, all, map[string]any{
		"status": map[string]any{
			"allocatable": map[string]any{"cpu": "64", "nvidia.com/gpu": fmt.Sprint(gpus)},
			"conditions":  []any{map[string]any{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}},
			"images":      []any{map[string]any{"names": []any{"registry.example.com/trainer:1.0"}, "sizeBytes": int64(1)}},
		},
	})
	unstructured.RemoveNestedField(n.Object, "metadata", "namespace")
	return n
}

// gpuPod is a pod of no workload asking for GPUs, bound to a node.
func gpuPod(ns, name, node string, gpus int64) *unstructured.Unstructured {
	return object("v1", "Pod", ns, name, nil, map[string]any{
		"spec": map[string]any{"nodeName": node, "containers": []any{map[string]any{"name": "c", "image": "x", "resources": map[string]any{
			"limits": map[string]any{"nvidia.com/gpu": fmt.Sprint(gpus)}}}}},
		"status": map[string]any{"phase": "Running"},
	})
}

// jobSetObjects are a JobSet with its Jobs and pods, all in a phase.
func jobSetObjects(t *testing.T, ns, name string, workers int64, phase string) []runtime.Object {
	objs := []runtime.Object{exampleJobSet(t, ns, name, workers)}
	add := func(rj string, idx int) {
		objs = append(objs,
			object("batch/v1", "Job", ns, fmt.Sprintf("%s-%s-%d", name, rj, idx), jobSetLabels(name, rj, idx), map[string]any{"status": map[string]any{"active": int64(1)}}),
			pod(ns, name, rj, idx, phase))
	}
	add("leader", 0)
	for i := 0; i < int(workers); i++ {
		add("workers", i)
	}
	return objs
}

// k8sEvent is an event of an object (kind/name) in ns.
func k8sEvent(ns, name, kind, object, typ, reason, message string, last time.Time) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": name, "namespace": ns, "resourceVersion": "1"},
		"involvedObject": map[string]any{"kind": kind, "name": object, "namespace": ns},
		"type":           typ, "reason": reason, "message": message, "count": int64(2),
		"lastTimestamp": last.UTC().Format(time.RFC3339),
	}}
}

// related makes an event relate another object, as workmap-scheduler's Preempted event on a
// victim PodGroup relates the preemptor's.
func related(e *unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	e.Object["related"] = map[string]any{"kind": kind, "namespace": ns, "name": name}
	return e
}

// podGroup is a PodGroup as workmap-scheduler makes one (labelled as workmap's).
func podGroup(ns, name string, minMember int64, phase string, scheduled int64) *unstructured.Unstructured {
	pg := object("scheduling.x-k8s.io/v1alpha1", "PodGroup", ns, name, nil, map[string]any{
		"spec":   map[string]any{"minMember": minMember},
		"status": map[string]any{"phase": phase, "scheduled": scheduled},
	})
	pg.SetLabels(map[string]string{grouper.ManagedByLabel: grouper.ManagedByValue})
	return pg
}

// annotated sets annotations on an object.
func annotated(o *unstructured.Unstructured, annotations map[string]string) *unstructured.Unstructured {
	o.SetAnnotations(annotations)
	return o
}

// fakeClients serve jobsets, jobs, pods, PodGroups and LeaderWorkerSets; denied resources
// are refused by the access review.
func fakeClients(t *testing.T, denied map[string]bool, objs ...runtime.Object) (Clients, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		jobSets: "JobSetList", jobs: "JobList", podsResource: "PodList", podGroupsResource: "PodGroupList", lwsets: "LeaderWorkerSetList",
		nodesResource: "NodeList", eventsResource: "EventList",
	}, objs...)
	kube := kubefake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		review.Status.Allowed = !denied[review.Spec.ResourceAttributes.Resource]
		return true, review, nil
	})
	disc := kube.Discovery().(*fakediscovery.FakeDiscovery)
	resources := func(gv string, names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: gv}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n, Namespaced: true, Verbs: []string{"list", "watch"}})
		}
		return l
	}
	nodes := metav1.APIResource{Name: "nodes", Namespaced: false, Verbs: []string{"list", "watch"}}
	core := resources("v1", "pods", "secrets", "events")
	core.APIResources = append(core.APIResources, nodes)
	disc.Resources = []*metav1.APIResourceList{
		core, resources("batch/v1", "jobs"), resources("jobset.x-k8s.io/v1alpha2", "jobsets"),
		resources("scheduling.x-k8s.io/v1alpha1", "podgroups"), resources("leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
	}
	return Clients{Dynamic: dyn, Discovery: disc, Access: kube.AuthorizationV1().SelfSubjectAccessReviews(), Host: "https://fake"}, dyn
}

// startServer runs a server over the clients until the test ends and waits for its first
// snapshot.
func startServer(t *testing.T, clients Clients, opts Options) *Server {
	t.Helper()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	opts.Registry = reg
	opts.Debounce = 10 * time.Millisecond
	s := New(clients, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not sync")
	}
	return s
}

// waitFor waits until the snapshot satisfies ok.
func waitFor(t *testing.T, s *Server, ok func(*Snapshot) bool) {
	t.Helper()
	require.Eventually(t, func() bool { return ok(s.Snapshot()) }, 10*time.Second, 10*time.Millisecond)
}
