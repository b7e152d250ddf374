package milvus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	"github.com/workmap/workmap/live"
)

// milvuses observes the Milvus named release in the namespaces of a test cluster, and keeps
// the states workmap reported for each, in order and without repeats.
type milvuses struct {
	c    *harness.Cluster
	def  *definitions.Definition
	seen map[string][]v1alpha1.State
}

func newMilvuses(t *testing.T, c *harness.Cluster) *milvuses {
	return &milvuses{c: c, def: livecheck.Definition(t, GroupKind), seen: map[string][]v1alpha1.State{}}
}

// observation is one look at a Milvus: the object as read, workmap's live resolution of
// that same object, and the pods of its components listed after it.
type observation struct {
	root *unstructured.Unstructured
	res  *live.Result
	pods []corev1.Pod
}

// observe reads the Milvus of a namespace, resolves it, requires workmap's state to be the
// one the operator's status says, and records the state.
func (m *milvuses) observe(ctx context.Context, t *testing.T, ns string) observation {
	t.Helper()
	root, err := m.c.Dynamic.Resource(Resource).Namespace(ns).Get(ctx, release, metav1.GetOptions{})
	require.NoError(t, err)
	res, err := (&live.Resolver{Client: m.c.Dynamic}).Resolve(ctx, m.def, root)
	require.NoError(t, err)
	st := res.Workload.Status
	status, _, _ := unstructured.NestedString(root.Object, "status", "status")
	require.Equal(t, operatorState(root), st.State, "%s: workmap's state against the operator's status %q (workmap's reason %q)", ns, status, st.Reason)
	if seen := m.seen[ns]; len(seen) == 0 || seen[len(seen)-1] != st.State {
		m.seen[ns] = append(seen, st.State)
	}
	return observation{root: root, res: res, pods: livecheck.Pods(ctx, t, m.c, ns, PodSelector(release))}
}

// followAll observes the Milvus of every namespace in want until each has reached its
// state, and returns the observation that found it there.
func (m *milvuses) followAll(ctx context.Context, t *testing.T, want map[string]v1alpha1.State, timeout time.Duration) map[string]observation {
	t.Helper()
	reached := map[string]observation{}
	for deadline := time.Now().Add(timeout); len(reached) < len(want); time.Sleep(100 * time.Millisecond) {
		require.NoError(t, m.c.CheckProcesses())
		for ns, state := range want {
			if _, ok := reached[ns]; ok {
				continue
			}
			o := m.observe(ctx, t, ns)
			if o.res.Workload.Status.State == state {
				reached[ns] = o
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: never became %s; states seen %v, last reason %q", ns, state, m.seen[ns], o.res.Workload.Status.Reason)
			}
		}
	}
	return reached
}

// settle waits until the Milvus of a namespace has exactly the pods expected, all running
// (replaced and removed pods gone), and returns that observation.
func (m *milvuses) settle(ctx context.Context, t *testing.T, ns string, pods int64) observation {
	t.Helper()
	var o observation
	require.Eventually(t, func() bool {
		o = m.observe(ctx, t, ns)
		if int64(len(o.pods)) != pods || o.res.Workload.Totals.Pods != pods {
			return false
		}
		for _, p := range o.pods {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "%s: %d running pods", ns, pods)
	return o
}

// operatorState is the operator's own status of a Milvus (status.status) in workmap's
// states: Healthy is Running, Unhealthy Degraded, Stopped Suspended; Pending is
// Initializing once the operator has found all three dependencies ready (it then creates
// the components), Pending before, as is a Milvus it has not seen yet or is deleting.
func operatorState(root *unstructured.Unstructured) v1alpha1.State {
	status, _, _ := unstructured.NestedString(root.Object, "status", "status")
	switch status {
	case "Healthy":
		return v1alpha1.StateRunning
	case "Unhealthy":
		return v1alpha1.StateDegraded
	case "Stopped":
		return v1alpha1.StateSuspended
	case "Pending":
		for _, dep := range []string{"EtcdReady", "StorageReady", "MsgStreamReady"} {
			if livecheck.Condition(root, dep) != metav1.ConditionTrue {
				return v1alpha1.StatePending
			}
		}
		return v1alpha1.StateInitializing
	}
	return v1alpha1.StatePending
}

// requireDeployments checks the operator's component Deployments that workmap found
// against the pods expected per role (each role here is one component): every component
// with pods has Deployments named <release>-milvus-<component> (the query node two, one
// of them at 0 replicas, for rolling updates) whose replicas add up to its pods, and every
// other Deployment, such as a cluster's standalone one, has 0 replicas.
func requireDeployments(t *testing.T, res *live.Result, roles map[string]int64) {
	t.Helper()
	replicas := map[string]int64{}
	for _, d := range res.Children["deployments"] {
		component := d.GetLabels()[ComponentLabel]
		require.Truef(t, strings.HasPrefix(d.GetName(), release+"-milvus-"+component), "Deployment %s of component %s", d.GetName(), component)
		n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		if n > 0 || roles[component] > 0 {
			replicas[component] += n
		}
	}
	require.Equal(t, roles, replicas, "replicas of the component Deployments")
}

// requireRoles checks the pods workmap expects per role against the sample's spec.
func requireRoles(t *testing.T, w *definitions.Workload, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	for _, r := range w.Roles {
		if r.Pods > 0 {
			got[r.Name] = r.Pods
		}
	}
	require.Equal(t, want, got, "pods expected per role")
	require.Equal(t, total(want), w.Totals.Pods)
}

func total(roles map[string]int64) int64 {
	var n int64
	for _, p := range roles {
		n += p
	}
	return n
}

// requireInOrder checks that the states seen follow the given order, any of them possibly
// missed.
func requireInOrder(t *testing.T, seen []v1alpha1.State, order ...v1alpha1.State) {
	t.Helper()
	j := 0
	for _, s := range seen {
		for j < len(order) && order[j] != s {
			j++
		}
		require.Less(t, j, len(order), "states %v do not follow %v", seen, order)
	}
}

// setUnschedulable cordons or uncordons every node.
func setUnschedulable(ctx context.Context, t *testing.T, c *harness.Cluster, unschedulable bool) {
	t.Helper()
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
	for _, n := range nodes.Items {
		_, err := c.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
	}
}
