package kuberay

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	"github.com/workmap/workmap/live"
)

// ns is where the samples go: each test function has its own control plane.
const ns = metav1.NamespaceDefault

// stateTimeout bounds every wait for a state the operator drives.
const stateTimeout = 90 * time.Second

var (
	configMapResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretResource    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// resourceOf is the API resource of a kind found in the samples.
func resourceOf(t *testing.T, obj *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	switch obj.GetKind() {
	case "RayCluster":
		return RayClusterResource
	case "RayJob":
		return RayJobResource
	case "RayService":
		return RayServiceResource
	case "ConfigMap":
		return configMapResource
	case "Secret":
		return secretResource
	}
	t.Fatalf("sample object of unexpected kind %s", obj.GetKind())
	return schema.GroupVersionResource{}
}

// create creates sample objects in ns and returns them as created (a generateName gets its
// name here).
func create(ctx context.Context, t *testing.T, c *harness.Cluster, objs ...*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		got, err := c.Dynamic.Resource(resourceOf(t, o)).Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		require.NoError(t, err, "creating %s %s", o.GetKind(), o.GetName())
		out = append(out, got)
	}
	return out
}

// root is the one object of kind in objs.
func root(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			require.Nil(t, found, "more than one %s in %s", kind, livecheck.Names(objs))
			found = o
		}
	}
	require.NotNil(t, found, "no %s in %s", kind, livecheck.Names(objs))
	return found
}

// observer resolves a workload live and, at every observation, checks workmap's state against
// the state the operator's own status fields (read from the same object) stand for.
type observer struct {
	t        *testing.T
	c        *harness.Cluster
	def      *definitions.Definition
	gvr      schema.GroupVersionResource
	name     string
	operator func(*unstructured.Unstructured) v1alpha1.State
	seen     []v1alpha1.State
}

// newObserver observes a workload; def is its kind's definition (livecheck.Definition, read
// once per test: compiling the catalog takes a while).
func newObserver(t *testing.T, c *harness.Cluster, def *definitions.Definition, gvr schema.GroupVersionResource, name string, operator func(*unstructured.Unstructured) v1alpha1.State) *observer {
	return &observer{t: t, c: c, def: def, gvr: gvr, name: name, operator: operator}
}

// resolve reads the root object once and resolves it, comparing the two states.
func (o *observer) resolve(ctx context.Context) *live.Result {
	o.t.Helper()
	obj, err := o.c.Dynamic.Resource(o.gvr).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
	require.NoError(o.t, err)
	res, err := (&live.Resolver{Client: o.c.Dynamic}).Resolve(ctx, o.def, obj)
	require.NoError(o.t, err)
	status, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "status")
	st := res.Workload.Status.State
	require.Equal(o.t, o.operator(obj), st,
		"%s %s: workmap's state (reason %q) is the operator's; status %v", obj.GetKind(), o.name, res.Workload.Status.Reason, status)
	if len(o.seen) == 0 || o.seen[len(o.seen)-1] != st {
		o.seen = append(o.seen, st)
		o.t.Logf("%s %s: %s (%s)", obj.GetKind(), o.name, st, res.Workload.Status.Reason)
	}
	return res
}

// waitFor resolves until the workload is in state want.
func (o *observer) waitFor(ctx context.Context, want v1alpha1.State) *live.Result {
	o.t.Helper()
	return livecheck.WaitForState(ctx, o.t, stateTimeout, func() *live.Result { return o.resolve(ctx) }, want, &o.seen)
}

// requireSeen checks the states observed so far, in order.
func (o *observer) requireSeen(want ...v1alpha1.State) {
	o.t.Helper()
	require.Equal(o.t, want, o.seen, "%s: states observed", o.name)
}

// conditionTrue reports whether an object has a metav1 condition of that type with status True.
func conditionTrue(obj *unstructured.Unstructured, conditionType string) bool {
	return livecheck.Condition(obj, conditionType) == metav1.ConditionTrue
}

// rayClusterState is the state a RayCluster's own status stands for: its conditions
// (RayClusterProvisioned, HeadPodReady, ReplicaFailure, RayClusterSuspending/Suspended) and
// its ready and desired worker counts; a spec.suspend the operator has not acted on yet counts
// as Suspended.
func rayClusterState(obj *unstructured.Unstructured) v1alpha1.State {
	suspend, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend")
	if suspend || conditionTrue(obj, "RayClusterSuspending") || conditionTrue(obj, "RayClusterSuspended") {
		return v1alpha1.StateSuspended
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	state, _, _ := unstructured.NestedString(obj.Object, "status", "state")
	if len(conds) == 0 && state == "" {
		return v1alpha1.StatePending
	}
	headReady := conditionTrue(obj, "HeadPodReady")
	replicaFailure := conditionTrue(obj, "ReplicaFailure")
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyWorkerReplicas")
	desired, _, _ := unstructured.NestedInt64(obj.Object, "status", "desiredWorkerReplicas")
	switch {
	case replicaFailure && !headReady:
		return v1alpha1.StateFailed
	case headReady && !replicaFailure && ready >= desired:
		return v1alpha1.StateRunning
	case conditionTrue(obj, "RayClusterProvisioned"):
		return v1alpha1.StateDegraded
	}
	return v1alpha1.StateInitializing
}

// clusterPods are the pods of a RayCluster (KubeRay labels every pod with its cluster).
func clusterPods(ctx context.Context, t *testing.T, c *harness.Cluster, cluster string) []corev1.Pod {
	t.Helper()
	return livecheck.Pods(ctx, t, c, ns, "ray.io/cluster="+cluster)
}

// waitPodsGone waits until no pod matches the selector.
func waitPodsGone(ctx context.Context, t *testing.T, c *harness.Cluster, selector string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(livecheck.Pods(ctx, t, c, ns, selector)) == 0 },
		stateTimeout, pollInterval, "pods of %s deleted", selector)
}

// pollInterval is how often the tests look again.
const pollInterval = 200 * time.Millisecond

// get reads an object of ns.
func get(ctx context.Context, t *testing.T, c *harness.Cluster, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	return obj
}
