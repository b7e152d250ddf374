package access

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	jobs         = schema.GroupResource{Group: "batch", Resource: "jobs"}
	jobSets      = schema.GroupResource{Group: "jobset.x-k8s.io", Resource: "jobsets"}
	lws          = schema.GroupResource{Group: "leaderworkerset.x-k8s.io", Resource: "leaderworkersets"}
	podGroups    = schema.GroupResource{Group: "scheduling.x-k8s.io", Resource: "podgroups"}
	wds          = schema.GroupResource{Group: "workmap.dev", Resource: "workloaddefinitions"}
	nodes        = schema.GroupResource{Resource: "nodes"}
	pods         = schema.GroupResource{Resource: "pods"}
	refusedByAPI = func(gr schema.GroupResource, name, reason string) error {
		return apierrors.NewForbidden(gr, name, errors.New(reason))
	}
)

// TestMessage: each refusal names the verb, the resource and where, and the role to ask for.
func TestMessage(t *testing.T) {
	tests := map[string]struct {
		refused *Refused
		want    string
	}{
		"a built-in kind in a namespace": {New("list", jobs, "ml", nil),
			"cannot list jobs.batch in namespace ml: forbidden; ask for the built-in view role in namespace ml"},
		"pods in every namespace": {New("list", pods, "", nil),
			"cannot list pods in any namespace: forbidden; ask for the built-in view role bound cluster-wide (a ClusterRoleBinding), or use -n NAMESPACE"},
		"an operator's CRD": {New("get", jobSets, "ml", nil),
			"cannot get jobsets.jobset.x-k8s.io in namespace ml: forbidden; ask for a role that grants get on jobsets.jobset.x-k8s.io in namespace ml: the built-in view role does once its operator installs aggregated rules for it, or else the operator's own role"},
		"PodGroups": {New("list", podGroups, "ml", nil),
			"cannot list podgroups.scheduling.x-k8s.io in namespace ml: forbidden; ask for the built-in view role in namespace ml, which includes podgroups.scheduling.x-k8s.io once workmap's aggregated ClusterRole workmap-view is installed (deploy/ or the Helm chart)"},
		"WorkloadDefinitions are cluster-scoped": {New("list", wds, "", nil),
			"cannot list workloaddefinitions.workmap.dev cluster-wide: forbidden; ask for the built-in view role bound cluster-wide (a ClusterRoleBinding: a RoleBinding grants nothing cluster-scoped), which includes workloaddefinitions.workmap.dev once workmap's aggregated ClusterRole workmap-view is installed (deploy/ or the Helm chart)"},
		"writing asks for edit": {New("patch", jobs, "ml", nil),
			"cannot patch jobs.batch in namespace ml: forbidden; ask for the built-in edit role in namespace ml"},
		"nodes are in no built-in user role": {New("list", nodes, "", nil),
			"cannot list nodes cluster-wide: forbidden; ask for a ClusterRole that grants list on nodes, bound cluster-wide (the built-in view role does not)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.refused.Message())
			require.Equal(t, tc.want, tc.refused.Error())
		})
	}
}

// TestExplain reads the verb, resource and namespace from the API server's message, keeps the
// error a Forbidden one, and leaves other errors alone.
func TestExplain(t *testing.T) {
	err := fmt.Errorf("listing: %w", refusedByAPI(jobs, "", `User "viewer" cannot list resource "jobs" in API group "batch" in the namespace "ml"`))
	got := Explain(err)
	require.Equal(t, "cannot list jobs.batch in namespace ml: forbidden; ask for the built-in view role in namespace ml", got.Error())
	require.True(t, apierrors.IsForbidden(got), "still a Forbidden error")

	got = Explain(refusedByAPI(jobSets, "x", `User "viewer" cannot get resource "jobsets" in API group "jobset.x-k8s.io" in the namespace "ml"`))
	require.Equal(t, New("get", jobSets, "ml", nil).Message(), got.Error())

	got = Explain(refusedByAPI(wds, "", `User "viewer" cannot list resource "workloaddefinitions" in API group "workmap.dev" at the cluster scope`))
	require.Equal(t, New("list", wds, "", nil).Message(), got.Error())

	got = Explain(refusedByAPI(podGroups, "g", `User "viewer" cannot update resource "podgroups/status" in API group "scheduling.x-k8s.io" in the namespace "ml"`))
	require.Equal(t, New("update", podGroups, "ml", nil).Message(), got.Error(), "a subresource is granted with its resource")

	other := apierrors.NewNotFound(jobs, "x")
	require.Equal(t, other, Explain(other))
	unparsed := refusedByAPI(jobs, "", "no")
	require.Equal(t, unparsed, Explain(unparsed))
	require.NoError(t, Explain(nil))
	require.Equal(t, New("list", jobs, "ml", unparsed), Of(unparsed, "list", jobs, "ml"))
	require.Equal(t, other, Of(other, "list", jobs, "ml"))
}

func TestKinds(t *testing.T) {
	require.Equal(t, New("list", jobSets, "", nil).Message(), Kinds("list", []schema.GroupResource{jobSets}, ""))
	require.Equal(t, "cannot list any workload kind in any namespace: forbidden (jobsets.jobset.x-k8s.io, leaderworkersets.leaderworkerset.x-k8s.io); ask for a role that grants list on them bound cluster-wide (a ClusterRoleBinding), or use -n NAMESPACE: the built-in view role does once their operators install aggregated rules for them, or else the operators' own roles",
		Kinds("list", []schema.GroupResource{jobSets, lws}, ""))
	require.Equal(t, "cannot list any workload kind in namespace ml: forbidden (pods, jobs.batch); ask for the built-in view role in namespace ml",
		Kinds("list", []schema.GroupResource{pods, jobs}, "ml"), "kinds the built-in view role grants")
	require.Equal(t, "cannot list any workload kind in any namespace: forbidden (pods, jobs.batch, jobsets.jobset.x-k8s.io); ask for the built-in view role bound cluster-wide (a ClusterRoleBinding), or use -n NAMESPACE: "+
		"it grants pods and jobs.batch, and jobsets.jobset.x-k8s.io once its operator installs aggregated rules for it (else ask for the operator's own role)",
		Kinds("list", []schema.GroupResource{pods, jobs, jobSets}, ""))
}
