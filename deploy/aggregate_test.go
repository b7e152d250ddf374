package deploy_test

// Tests of the ClusterRoles that add workmap's resources to Kubernetes' built-in view, edit
// and admin roles (rbac/aggregate_roles.yaml and the chart's rbac.aggregateToDefaultRoles):
// rendered by the kustomization and the chart with their aggregation labels, and, on a real
// control plane, what a user bound to view, edit or admin may then do.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/e2e/harness"
)

const (
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
)

// checkAggregateRoles finds the view and edit ClusterRoles among objs and checks their
// aggregation labels and rules.
func checkAggregateRoles(t *testing.T, objs []*unstructured.Unstructured, view, edit string) {
	t.Helper()
	clusterRole := schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	get := func(name string) *rbacv1.ClusterRole {
		u := find(objs, clusterRole, name)
		require.NotNil(t, u, "ClusterRole %s", name)
		var r rbacv1.ClusterRole
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r))
		return &r
	}
	read := []string{"get", "list", "watch"}
	write := []string{"create", "update", "patch", "delete", "deletecollection"}

	v := get(view)
	for _, l := range []string{aggregateToView, aggregateToEdit, aggregateToAdmin} {
		assert.Equal(t, "true", v.Labels[l], "%s: %s", view, l)
	}
	assert.Nil(t, v.AggregationRule)
	assert.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"workmap.dev"}, Resources: []string{"workloaddefinitions", "workloaddefinitions/status"}, Verbs: read},
		{APIGroups: []string{"scheduling.x-k8s.io"}, Resources: []string{"podgroups", "podgroups/status"}, Verbs: read},
	}, v.Rules, "view reads WorkloadDefinitions and PodGroups, and nothing else")

	e := get(edit)
	assert.Empty(t, e.Labels[aggregateToView], "%s is not in view", edit)
	for _, l := range []string{aggregateToEdit, aggregateToAdmin} {
		assert.Equal(t, "true", e.Labels[l], "%s: %s", edit, l)
	}
	assert.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"workmap.dev"}, Resources: []string{"workloaddefinitions"}, Verbs: write},
		{APIGroups: []string{"scheduling.x-k8s.io"}, Resources: []string{"podgroups"}, Verbs: write},
	}, e.Rules, "edit writes WorkloadDefinitions and PodGroups (not their status)")
}

// TestAggregateRolesRender: deploy/, with-serve and with-webhook install workmap-view and
// workmap-edit; so does the chart by default, named after the release, and not with
// rbac.aggregateToDefaultRoles=false.
func TestAggregateRolesRender(t *testing.T) {
	for _, dir := range []string{".", "with-serve", "with-webhook", "rbac"} {
		t.Run("kustomize "+dir, func(t *testing.T) {
			checkAggregateRoles(t, kustomize(t, dir), "workmap-view", "workmap-edit")
		})
	}
	t.Run("helm default values", func(t *testing.T) {
		checkAggregateRoles(t, helmTemplate(t, releaseName, namespace), "workmap-view", "workmap-edit")
		checkAggregateRoles(t, helmTemplate(t, "team-workmap-scheduler", "team"), "team-workmap-view", "team-workmap-edit")
	})
	t.Run("helm rbac.aggregateToDefaultRoles=false", func(t *testing.T) {
		for _, o := range helmTemplate(t, releaseName, namespace, "--set", "rbac.aggregateToDefaultRoles=false") {
			for _, l := range []string{aggregateToView, aggregateToEdit, aggregateToAdmin} {
				assert.Empty(t, o.GetLabels()[l], "%s %s", o.GetKind(), o.GetName())
			}
		}
	})
}

// userAllowed asks the API server whether a user (authenticated, no other group) may do
// something.
func userAllowed(ctx context.Context, t *testing.T, c *harness.Cluster, user string, a access) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	require.NoError(t, err)
	return got.Status.Allowed
}

// testAggregatedAccess binds view, edit and admin to users once rbac/ is applied and checks
// what the aggregation gives each.
func testAggregatedAccess(t *testing.T, c *harness.Cluster) {
	ctx := context.Background()
	bind := func(user, role, ns string) {
		ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}
		subjects := []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}}
		var err error
		if ns == "" {
			_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "aggregate-" + user}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		} else {
			_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "aggregate-" + user}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
		require.NoError(t, err)
	}
	bind("viewer", "view", "")
	bind("editor", "edit", "")
	bind("ns-admin", "admin", "default")
	bind("ns-viewer", "view", "default")

	wd := func(verb string) access {
		return access{verb: verb, group: "workmap.dev", resource: "workloaddefinitions"}
	}
	pg := func(verb, ns string) access {
		return access{verb: verb, group: "scheduling.x-k8s.io", resource: "podgroups", namespace: ns}
	}
	type want struct {
		user  string
		a     access
		allow bool
		why   string
	}
	wants := []want{
		{"viewer", wd("list"), true, "view lists WorkloadDefinitions (workmap get, tree)"},
		{"viewer", wd("watch"), true, "view watches WorkloadDefinitions (workmap serve)"},
		{"viewer", pg("list", ""), true, "view lists PodGroups in every namespace (get -A)"},
		{"viewer", pg("watch", "default"), true, "view watches PodGroups (workmap serve)"},
		{"viewer", access{verb: "get", group: "scheduling.x-k8s.io", resource: "podgroups", subresource: "status", namespace: "default"}, true, "view reads a PodGroup's status"},
		{"viewer", wd("create"), false, "view writes nothing"},
		{"viewer", pg("update", "default"), false, "view writes nothing"},
		{"editor", wd("list"), true, "edit includes view"},
		{"editor", wd("create"), true, "edit writes WorkloadDefinitions (bound cluster-wide)"},
		{"editor", pg("delete", "default"), true, "edit writes PodGroups"},
		{"editor", access{verb: "update", group: "scheduling.x-k8s.io", resource: "podgroups", subresource: "status", namespace: "default"}, false, "a PodGroup's status is the scheduler's"},
		{"ns-admin", pg("create", "default"), true, "admin includes edit"},
		{"ns-admin", pg("list", "default"), true, "admin includes view"},
		{"ns-admin", pg("list", "other"), false, "a RoleBinding grants one namespace"},
		{"ns-admin", wd("list"), false, "a RoleBinding grants nothing cluster-scoped"},
		{"ns-viewer", pg("list", "default"), true, "view in its namespace"},
		{"ns-viewer", wd("list"), false, "WorkloadDefinitions are cluster-scoped"},
	}
	// The aggregation controller fills the built-in roles a moment after the roles appear.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ok := true
		for _, w := range wants {
			if w.allow && !userAllowed(ctx, t, c, w.user, w.a) {
				ok = false
				break
			}
		}
		if ok {
			break
		}
	}
	for _, w := range wants {
		assert.Equal(t, w.allow, userAllowed(ctx, t, c, w.user, w.a), "%s: %s (%s)", w.user, w.a, w.why)
	}
}
