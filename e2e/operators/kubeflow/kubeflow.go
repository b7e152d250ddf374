// Package kubeflow is what the live tests of the Kubeflow job operators (the MPI operator's
// MPIJob, the training-operator's PyTorchJob) share. Both operators label every pod of a job
// with the job's name, report the job's state in the same kubeflow.org JobConditions
// (Created, Running, Restarting, Succeeded, Failed, Suspended) and, asked to, make one
// scheduler-plugins PodGroup per job; so their tests read samples, create jobs, compare
// workmap's states with the operator's conditions and check the operator's PodGroups the
// same way.
package kubeflow

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/e2e/operators/livecheck"
	schedulingv1alpha1 "github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
	"github.com/workmap/workmap/live"
)

// JobNameLabel is the label the operators put on every pod of a job, the job's name its value.
const JobNameLabel = "training.kubeflow.org/job-name"

// PodsOf is the label selector of a job's pods.
func PodsOf(job string) string { return JobNameLabel + "=" + job }

// SchedulerOptions let a gang that cannot fit give up and retry quickly.
var SchedulerOptions = harness.SchedulerOptions{PermitWaitingTimeSeconds: 10, PodGroupBackoffSeconds: 2}

// Sample reads an upstream sample of the framework that holds one job of the definition's
// kind, puts it in the default namespace where it names none, and points its pods at
// workmap-scheduler.
func Sample(t *testing.T, framework string, def *definitions.Definition, file string) *unstructured.Unstructured {
	t.Helper()
	objs := livecheck.Sample(t, framework, file)
	require.Len(t, objs, 1, "%s holds one %s", file, def.GroupKind.Kind)
	obj := objs[0]
	if obj.GetNamespace() == "" {
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	livecheck.SetSchedulerName(t, def, obj, harness.SchedulerName)
	return obj
}

// CreateJob creates a job and deletes it (and so its children) when the test ends.
func CreateJob(ctx context.Context, t *testing.T, c *harness.Cluster, resource schema.GroupVersionResource, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := c.Dynamic.Resource(resource).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		background := metav1.DeletePropagationBackground
		_ = c.Dynamic.Resource(resource).Namespace(obj.GetNamespace()).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
	})
}

// operatorStates are the workmap states that agree with the operator's own conditions: the
// operators keep Created=True throughout and add the others beside it, so the first True one
// of Failed, Succeeded, Suspended, Restarting, Running decides; with only Created (or nothing
// yet) workmap tells Pending from Initializing by the pods.
func operatorStates(root *unstructured.Unstructured) []v1alpha1.State {
	for _, m := range []struct {
		condition string
		state     v1alpha1.State
	}{
		{"Failed", v1alpha1.StateFailed},
		{"Succeeded", v1alpha1.StateCompleted},
		{"Suspended", v1alpha1.StateSuspended},
		{"Restarting", v1alpha1.StateDegraded},
		{"Running", v1alpha1.StateRunning},
	} {
		if livecheck.Condition(root, m.condition) == metav1.ConditionTrue {
			return []v1alpha1.State{m.state}
		}
	}
	return []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateInitializing}
}

// Observer resolves one job live and checks, at every resolution, that workmap's state
// agrees with the conditions of the very object it resolved; it keeps the states it has
// seen, in order, across its waits.
type Observer struct {
	ctx       context.Context
	t         *testing.T
	c         *harness.Cluster
	def       *definitions.Definition
	resource  schema.GroupVersionResource
	namespace string
	name      string
	seen      []v1alpha1.State
}

// Observe is an Observer of the job namespace/name.
func Observe(ctx context.Context, t *testing.T, c *harness.Cluster, def *definitions.Definition, resource schema.GroupVersionResource, namespace, name string) *Observer {
	return &Observer{ctx: ctx, t: t, c: c, def: def, resource: resource, namespace: namespace, name: name}
}

// Resolve reads the job from the cluster, resolves it live, and requires workmap's state to
// agree with the job's conditions.
func (o *Observer) Resolve() *live.Result {
	o.t.Helper()
	root, err := o.c.Dynamic.Resource(o.resource).Namespace(o.namespace).Get(o.ctx, o.name, metav1.GetOptions{})
	require.NoError(o.t, err)
	res, err := (&live.Resolver{Client: o.c.Dynamic}).Resolve(o.ctx, o.def, root)
	require.NoError(o.t, err)
	conds, _, _ := unstructured.NestedSlice(root.Object, "status", "conditions")
	require.Contains(o.t, operatorStates(root), res.Workload.Status.State, "workmap's state against the operator's conditions %v", conds)
	return res
}

// WaitUntilRunning waits up to a minute for workmap to see a new job Running, and requires
// that it saw the job Pending or Initializing first.
func (o *Observer) WaitUntilRunning() {
	o.t.Helper()
	livecheck.WaitForState(o.ctx, o.t, time.Minute, o.Resolve, v1alpha1.StateRunning, &o.seen)
	require.Contains(o.t, []v1alpha1.State{v1alpha1.StatePending, v1alpha1.StateInitializing}, o.seen[0], "a new %s starts Pending or Initializing", o.def.GroupKind.Kind)
}

// WaitUntilFinal waits up to a minute for workmap to see the job in its final state, and
// requires that it went there straight from Running.
func (o *Observer) WaitUntilFinal(final v1alpha1.State) {
	o.t.Helper()
	livecheck.WaitForState(o.ctx, o.t, time.Minute, o.Resolve, final, &o.seen)
	i := slices.Index(o.seen, v1alpha1.StateRunning)
	require.Equal(o.t, []v1alpha1.State{v1alpha1.StateRunning, final}, o.seen[i:], "states after the pods ran")
	o.t.Logf("states seen: %v", o.seen)
}

// PodGroupsOf lists the names of the PodGroups named after a job.
func PodGroupsOf(g *harness.Gangs, job string) []string {
	names := []string{}
	for _, pg := range g.PodGroups() {
		if strings.HasPrefix(pg.Name, job) {
			names = append(names, pg.Name)
		}
	}
	return names
}

// RequireOperatorPodGroup requires what an operator run with a gang scheduler makes of a job
// whose pods it has created: a PodGroup named after the job and owned by it, whose
// minMember is every pod of the job, and each of those pods labeled with it.
func RequireOperatorPodGroup(t *testing.T, g *harness.Gangs, def *definitions.Definition, job string, pods int) {
	t.Helper()
	for _, p := range g.Pods(PodsOf(job)) {
		require.Equal(t, job, p.Labels[schedulingv1alpha1.PodGroupLabel], "pod %s is in the operator's PodGroup", p.Name)
	}
	pg, err := g.PodGroup(job)
	require.NoError(t, err, "the operator's PodGroup, named after the job")
	require.EqualValues(t, pods, pg.Spec.MinMember, "the operator's gang: every pod of the job")
	require.Len(t, pg.OwnerReferences, 1)
	require.Equal(t, def.GroupKind.Kind, pg.OwnerReferences[0].Kind)
}
