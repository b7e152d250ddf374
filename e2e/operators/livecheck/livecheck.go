// Package livecheck is what every framework operator's live test checks the same way: a real
// upstream sample applied to the local control plane, the operator left to create its
// children and pods, and workmap's view of the workload (resolved from the cluster as
// `workmap tree` resolves it) compared with what the cluster really holds.
package livecheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/internal/needs"
	"github.com/workmap/workmap/live"
)

// Sample reads an upstream sample, ../shared/upstream/samples/<framework>/<file> beside the
// checkout (skipping the test where that folder is absent, as in users' clones), and returns
// its objects in file order.
func Sample(t *testing.T, framework, file string) []*unstructured.Unstructured {
	t.Helper()
	root, err := harness.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "..", "shared", "upstream", "samples", framework)
	if _, err := os.Stat(dir); err != nil {
		needs.Skip(t, "upstream samples not available at %s (%v)", dir, err)
	}
	docs, err := manifest.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		objs = append(objs, d.Object)
	}
	return objs
}

// Definition is the catalog's definition of a kind.
func Definition(t *testing.T, gk schema.GroupKind) *definitions.Definition {
	t.Helper()
	reg, err := catalog.Registry()
	require.NoError(t, err)
	d, ok := reg.Lookup(gk)
	require.True(t, ok, "no catalog definition for %s", gk)
	return d
}

// SetSchedulerName points every pod template of the workload at a scheduler, through the
// definition's own template paths (as `workmap set` does).
func SetSchedulerName(t *testing.T, def *definitions.Definition, obj *unstructured.Unstructured, scheduler string) {
	t.Helper()
	n, err := def.SetPodTemplateField(obj, "spec.schedulerName", scheduler)
	require.NoError(t, err)
	require.Positive(t, n, "%s %s has no pod template to point at %s", obj.GetKind(), obj.GetName(), scheduler)
}

// Resolve reads the workload's root object from the cluster and resolves it live.
func Resolve(ctx context.Context, t *testing.T, c *harness.Cluster, def *definitions.Definition, gvr schema.GroupVersionResource, namespace, name string) *live.Result {
	t.Helper()
	root, err := c.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	res, err := (&live.Resolver{Client: c.Dynamic}).Resolve(ctx, def, root)
	require.NoError(t, err)
	return res
}

// Pods lists the pods of a namespace that match a label selector, typed.
func Pods(ctx context.Context, t *testing.T, c *harness.Cluster, namespace, selector string) []corev1.Pod {
	t.Helper()
	list, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	return list.Items
}

// PodGPUs sums the GPUs the pods really request (the default GPU resources, effective requests).
func PodGPUs(pods []corev1.Pod) float64 {
	var sum float64
	for i := range pods {
		req := definitions.PodRequests(&pods[i].Spec)
		for _, name := range definitions.DefaultGPUResources {
			if q, ok := req[name]; ok {
				sum += q.AsApproximateFloat64()
			}
		}
	}
	return sum
}

// RequireTree checks a live resolution against the pods the operator made: every role and
// instance (where pods tell their replica) has found = expected pods, each listed there, no pod of the workload is left unassigned, the pods
// placed are exactly the given ones, and the GPU total equals the sum over those pods.
func RequireTree(t *testing.T, res *live.Result, pods []corev1.Pod) {
	t.Helper()
	w := res.Workload
	require.NotNil(t, w.Live, "a live resolution has live counts")
	for _, r := range w.Roles {
		require.NotNil(t, r.PodsFound, "role %s: no live count", r.Name)
		require.Equal(t, r.Pods, *r.PodsFound, "role %s: pods found = expected", r.Name)
		placed := len(r.FoundPods)
		for _, in := range r.Instances {
			if in.PodsFound != nil {
				require.Equal(t, in.Pods, *in.PodsFound, "role %s instance %s: pods found = expected", r.Name, in.Name)
			}
			placed += len(in.FoundPods)
		}
		require.EqualValues(t, *r.PodsFound, placed, "role %s: every pod found is listed under the role or one of its instances", r.Name)
	}
	require.Zero(t, w.Live.Unassigned, "pods of the workload that match no role")
	want := make([]string, 0, len(pods))
	for _, p := range pods {
		want = append(want, p.Name)
	}
	got := make([]string, 0, len(res.Pods))
	for _, p := range res.Pods {
		got = append(got, p.GetName())
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "the pods workmap places are the pods the operator made")
	require.EqualValues(t, len(pods), w.Totals.Pods, "expected pods = pods the operator made")
	require.InDelta(t, PodGPUs(pods), w.Totals.GPUs, 1e-9, "GPU total = sum over the real pods")
}

// WaitForState resolves until the workload reaches want (within timeout), appending every
// new state seen to seen, and returns the last resolution. check, when not nil, is called on
// every resolution (e.g. to compare the state with the operator's own condition).
func WaitForState(ctx context.Context, t *testing.T, timeout time.Duration, resolve func() *live.Result, want v1alpha1.State, seen *[]v1alpha1.State) *live.Result {
	t.Helper()
	var last *live.Result
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		last = resolve()
		st := last.Workload.Status.State
		if len(*seen) == 0 || (*seen)[len(*seen)-1] != st {
			*seen = append(*seen, st)
		}
		if st == want {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%s %s never became %s; states seen %v, last reason %q", last.Workload.Workload.Kind, last.Workload.Workload.Name, want, *seen, last.Workload.Status.Reason)
	return nil
}

// Condition returns the status of a metav1-style condition of an object (status.conditions),
// or "" when it has none of that type.
func Condition(obj *unstructured.Unstructured, conditionType string) metav1.ConditionStatus {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err == nil {
			conds = append(conds, c)
		}
	}
	if c := meta.FindStatusCondition(conds, conditionType); c != nil {
		return c.Status
	}
	return ""
}

// RunAll asks kwok to finish every running pod with the given outcome.
func RunAll(ctx context.Context, t *testing.T, c *harness.Cluster, pods []corev1.Pod, outcome corev1.PodPhase) {
	t.Helper()
	for _, p := range pods {
		require.NoError(t, c.SetPodOutcome(ctx, p.Namespace, p.Name, outcome))
	}
}

// Names lists object names, for messages.
func Names(objs []*unstructured.Unstructured) string {
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, fmt.Sprintf("%s/%s", o.GetKind(), o.GetName()))
	}
	return strings.Join(names, ", ")
}
