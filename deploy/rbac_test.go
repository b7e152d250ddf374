package deploy_test

// Tests of workmap-scheduler's RBAC (rbac/ and the Helm chart's): the API server's own
// authorizer, asked through SubjectAccessReviews on a real control plane, must allow exactly
// what the scheduler needs and deny the rest (secrets above all), and the read access to
// workload kinds must cover the embedded catalog's pod owners and nothing more.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
)

// coreOwners are the built-in kinds that own pods (directly or through each other) and so sit
// in the owner chains the grouper walks. DaemonSets are left out on purpose: a DaemonSet's pods
// are one per node, never a gang.
var coreOwners = []schema.GroupResource{
	{Group: "batch", Resource: "jobs"},
	{Group: "batch", Resource: "cronjobs"},
	{Group: "apps", Resource: "deployments"},
	{Group: "apps", Resource: "replicasets"},
	{Group: "apps", Resource: "statefulsets"},
	{Group: "", Resource: "replicationcontrollers"},
}

// notPodOwners are catalog child kinds that never appear in a pod's owner chain, so the
// scheduler gets no access to them.
var notPodOwners = map[schema.GroupKind]string{
	{Group: "", Kind: "Service"}:                            "routes traffic to pods, owns none",
	{Group: "", Kind: "ConfigMap"}:                          "configuration, owns no pods (and may hold sensitive settings)",
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: "scales a workload, owns no pods",
	{Group: "serving.knative.dev", Kind: "Route"}:           "routes traffic to Revisions, owns no pods",
	{Group: "scheduler.grove.io", Kind: "PodGang"}:          "Grove's scheduling record; its pods are owned by PodCliques",
}

// irregularPlurals are the catalog kinds whose resource is not lower-case kind + "s" (checked
// against the upstream CRDs).
var irregularPlurals = map[string]string{"Milvus": "milvuses"}

func resourceOf(kind, explicit string) string {
	if explicit != "" {
		return explicit
	}
	if p, ok := irregularPlurals[kind]; ok {
		return p
	}
	return strings.ToLower(kind) + "s"
}

// catalogOwners are the resources the grouper may meet in an owner chain: the catalog's
// workload kinds and their pod-owning children, plus the core owners.
func catalogOwners(t *testing.T) sets.Set[schema.GroupResource] {
	t.Helper()
	defs, err := catalog.Raw()
	require.NoError(t, err)
	require.NotEmpty(t, defs)
	out := sets.New(coreOwners...)
	for _, d := range defs {
		w := d.Spec.Workload
		out.Insert(schema.GroupResource{Group: w.Group, Resource: resourceOf(w.Kind, "")})
		for _, c := range d.Spec.Children {
			if _, skip := notPodOwners[schema.GroupKind{Group: c.Group, Kind: c.Kind}]; skip {
				continue
			}
			out.Insert(schema.GroupResource{Group: c.Group, Resource: resourceOf(c.Kind, c.Resource)})
		}
	}
	return out
}

// TestWorkloadsRoleMatchesCatalog: the read-only ClusterRole for workload kinds grants exactly
// get, list and watch on the catalog's pod owners: a definition added to the catalog without
// its RBAC fails here, and so does a grant nothing needs.
func TestWorkloadsRoleMatchesCatalog(t *testing.T) {
	want := catalogOwners(t)
	var role *rbacv1.ClusterRole
	for _, o := range readObjects(t, "rbac/cluster_role.yaml") {
		if o.GetName() == "workmap-scheduler-workloads" {
			role = &rbacv1.ClusterRole{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role))
		}
	}
	require.NotNil(t, role, "rbac/cluster_role.yaml has the ClusterRole workmap-scheduler-workloads")
	got := sets.New[schema.GroupResource]()
	for _, r := range role.Rules {
		assert.Equal(t, []string{"get", "list", "watch"}, r.Verbs, "read only: %v", r)
		assert.Empty(t, r.ResourceNames)
		assert.Empty(t, r.NonResourceURLs)
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got.Insert(schema.GroupResource{Group: g, Resource: res})
			}
		}
	}
	assert.Empty(t, sorted(want.Difference(got)), "pod owners the scheduler cannot read: add them to rbac/cluster_role.yaml and the chart")
	assert.Empty(t, sorted(got.Difference(want)), "read access nothing in the catalog needs")
}

func sorted(s sets.Set[schema.GroupResource]) []string {
	out := make([]string, 0, s.Len())
	for gr := range s {
		out = append(out, gr.String())
	}
	slices.Sort(out)
	return out
}

// access is one question to the authorizer.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		r += " " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

// allowed asks the API server whether a service account may do something, with the groups a
// service account token carries.
func allowed(ctx context.Context, t *testing.T, c *harness.Cluster, saNamespace, saName string, a access) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + saNamespace + ":" + saName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	require.NoError(t, err)
	return got.Status.Allowed
}

// expectation is an access and whether the scheduler must have it, with the reason.
type expectation struct {
	access
	allow bool
	why   string
}

// expectations are what the scheduler's ServiceAccount in ns (which also holds its Lease) must
// and must not be able to do.
func expectations(t *testing.T, ns string) []expectation {
	allow := func(why string, a access) expectation { return expectation{access: a, allow: true, why: why} }
	deny := func(why string, a access) expectation { return expectation{access: a, allow: false, why: why} }
	out := []expectation{
		// kube-scheduler's own needs (system:kube-scheduler, system:volume-scheduler).
		allow("scheduling reads pods", access{verb: "watch", resource: "pods"}),
		allow("binding", access{verb: "create", resource: "pods", subresource: "binding", namespace: "default"}),
		allow("pod conditions (Unschedulable)", access{verb: "patch", resource: "pods", subresource: "status", namespace: "default"}),
		allow("preemption evicts victims", access{verb: "delete", resource: "pods", namespace: "default"}),
		allow("scheduling reads nodes", access{verb: "list", resource: "nodes"}),
		allow("volume binding", access{verb: "update", resource: "persistentvolumeclaims", namespace: "default"}),
		allow("delegated authentication of the secure port", access{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"}),
		allow("delegated authentication reads the client CA", access{verb: "get", resource: "configmaps", namespace: "kube-system", name: "extension-apiserver-authentication"}),
		allow("scheduler events", access{verb: "create", group: "events.k8s.io", resource: "events", namespace: "default"}),
		// Leader election, in the Lease's namespace and on its name only.
		allow("leader election creates its Lease", access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: ns}),
		allow("leader election reads its Lease", access{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "workmap-scheduler"}),
		allow("leader election renews its Lease", access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "workmap-scheduler"}),
		deny("only its own Lease", access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "someone-else"}),
		deny("its Lease lives in its own namespace", access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "default", name: "workmap-scheduler"}),
		deny("Leases expire, never deleted", access{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "workmap-scheduler"}),
		// The grouper and the plugin.
		allow("the grouper labels pods with their PodGroup", access{verb: "patch", resource: "pods", namespace: "default"}),
		deny("the scheduler never makes pods", access{verb: "create", resource: "pods", namespace: "default"}),
		deny("nor rewrites them whole", access{verb: "update", resource: "pods", namespace: "default"}),
		allow("the grouper makes PodGroups", access{verb: "create", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		allow("and keeps them current", access{verb: "update", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		allow("and keeps them current", access{verb: "patch", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		allow("the plugin watches PodGroups", access{verb: "watch", group: "scheduling.x-k8s.io", resource: "podgroups"}),
		allow("PodGroup status", access{verb: "update", group: "scheduling.x-k8s.io", resource: "podgroups", subresource: "status", namespace: "default"}),
		allow("PodGroup status", access{verb: "patch", group: "scheduling.x-k8s.io", resource: "podgroups", subresource: "status", namespace: "default"}),
		deny("PodGroups go with their workload (garbage collector)", access{verb: "delete", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		deny("PodGroups go with their workload (garbage collector)", access{verb: "deletecollection", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		allow("definitions in the cluster", access{verb: "watch", group: "workmap.dev", resource: "workloaddefinitions"}),
		allow("definitions in the cluster", access{verb: "list", group: "workmap.dev", resource: "workloaddefinitions"}),
		allow("topology levels from a Kueue Topology", access{verb: "watch", group: "kueue.x-k8s.io", resource: "topologies"}),
		allow("topology levels from a KAI Topology", access{verb: "list", group: "kai.scheduler", resource: "topologies"}),
		deny("Topology objects are read only", access{verb: "update", group: "kueue.x-k8s.io", resource: "topologies", name: "default"}),
		allow("whether a waiting pod's ResourceClaimTemplate exists", access{verb: "watch", group: "resource.k8s.io", resource: "resourceclaimtemplates"}),
		allow("whether a waiting pod's ResourceClaimTemplate exists", access{verb: "list", group: "resource.k8s.io", resource: "resourceclaimtemplates"}),
		deny("ResourceClaimTemplates are read only", access{verb: "create", group: "resource.k8s.io", resource: "resourceclaimtemplates", namespace: "default"}),
		allow("the leader sets each definition's Accepted condition", access{verb: "update", group: "workmap.dev", resource: "workloaddefinitions", subresource: "status", name: "jobsets.jobset.x-k8s.io"}),
		allow("the leader sets each definition's Accepted condition", access{verb: "patch", group: "workmap.dev", resource: "workloaddefinitions", subresource: "status", name: "jobsets.jobset.x-k8s.io"}),
		deny("definitions are read only", access{verb: "update", group: "workmap.dev", resource: "workloaddefinitions", name: "jobsets.jobset.x-k8s.io"}),
		deny("definitions are read only", access{verb: "patch", group: "workmap.dev", resource: "workloaddefinitions", name: "jobsets.jobset.x-k8s.io"}),
		deny("definitions are read only", access{verb: "delete", group: "workmap.dev", resource: "workloaddefinitions", name: "jobsets.jobset.x-k8s.io"}),
		deny("definitions are read only", access{verb: "create", group: "workmap.dev", resource: "workloaddefinitions"}),
		allow("grouper events", access{verb: "create", resource: "events", namespace: "default"}),
		allow("grouper events", access{verb: "patch", resource: "events", namespace: "default"}),
		// Workloads are read, never written.
		allow("JobSets are read", access{verb: "list", group: "jobset.x-k8s.io", resource: "jobsets"}),
		deny("workloads are read only", access{verb: "update", group: "jobset.x-k8s.io", resource: "jobsets", namespace: "default"}),
		deny("workloads are read only", access{verb: "delete", group: "batch", resource: "jobs", namespace: "default"}),
		deny("workloads are read only", access{verb: "create", group: "batch", resource: "jobs", namespace: "default"}),
		deny("DaemonSet pods are never gangs", access{verb: "list", group: "apps", resource: "daemonsets"}),
		deny("Knative Routes own no pods", access{verb: "list", group: "serving.knative.dev", resource: "routes"}),
		deny("no other workload kinds", access{verb: "list", group: "example.com", resource: "widgets"}),
		// Nothing sensitive, nothing that widens its own rights.
		deny("configuration is not the scheduler's business", access{verb: "list", resource: "configmaps"}),
		deny("configuration is not the scheduler's business", access{verb: "get", resource: "configmaps", namespace: "kube-system", name: "kubeadm-config"}),
		deny("nodes are read only", access{verb: "patch", resource: "nodes", name: "node-0"}),
		deny("no tokens", access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: ns, name: "workmap-scheduler"}),
		deny("no impersonation", access{verb: "impersonate", resource: "users", name: "admin"}),
		deny("no RBAC changes", access{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}),
		deny("no RBAC changes", access{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"}),
		deny("no RBAC changes", access{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "workmap-scheduler"}),
	}
	for _, secrets := range []string{"", "default", "kube-system", ns} {
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, deny("never secrets", access{verb: verb, resource: "secrets", namespace: secrets}))
		}
	}
	// Every pod owner of the catalog is readable, the way the grouper reads it.
	for gr := range catalogOwners(t) {
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, allow("owner chains and definitions read "+gr.String(), access{verb: verb, group: gr.Group, resource: gr.Resource}))
		}
	}
	return out
}

// checkAccess waits (up to 30s) until the authorizer has seen the bindings, that is until
// every access that should be allowed is (RBAC is read from an informer), then checks every
// expectation, naming each one that fails.
func checkAccess(ctx context.Context, t *testing.T, c *harness.Cluster, saNamespace, saName string, want []expectation) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if !slices.ContainsFunc(want, func(e expectation) bool { return e.allow && !allowed(ctx, t, c, saNamespace, saName, e.access) }) {
			break
		}
	}
	for _, e := range want {
		assert.Equal(t, e.allow, allowed(ctx, t, c, saNamespace, saName, e.access), "%s (%s)", e.access, e.why)
	}
}

// TestRBAC applies the shipped RBAC, and the Helm chart's in another namespace, to a real
// control plane and checks what each ServiceAccount may do: workmap-scheduler's, workmap
// serve's and workmap-webhook's.
func TestRBAC(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
	ctx := context.Background()
	a := newApplier(c)

	t.Run("rbac/", func(t *testing.T) {
		objs := readObjects(t, append([]string{"scheduler/namespace.yaml"}, rbacFiles(t)...)...)
		for _, o := range objs {
			require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
		}
		checkAccess(ctx, t, c, namespace, "workmap-scheduler", expectations(t, namespace))
	})
	// What the roles rbac/ adds to view, edit and admin give their users (aggregate_test.go).
	t.Run("view, edit and admin", func(t *testing.T) { testAggregatedAccess(t, c) })

	t.Run("helm chart", func(t *testing.T) {
		// Another release in another namespace, so both sets of bindings coexist; one extra
		// workload kind through values.
		const release, ns = "helm-workmap-scheduler", "workmap-helm"
		objs := helmTemplate(t, release, ns,
			"--set", "rbac.extraWorkloadResources[0].apiGroup=example.com",
			"--set", "rbac.extraWorkloadResources[0].resources={widgets}")
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		applied := 0
		for _, o := range objs {
			if o.GetAPIVersion() == rbacv1.SchemeGroupVersion.String() || o.GetKind() == "ServiceAccount" {
				require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
				applied++
			}
		}
		require.Equal(t, 12, applied, "ServiceAccount, 4 ClusterRoles (2 aggregated into view and edit), 4 ClusterRoleBindings, Role, 2 RoleBindings")

		want := expectations(t, ns)
		for i, e := range want {
			if e.group == "example.com" {
				want[i] = expectation{access: e.access, allow: true, why: "rbac.extraWorkloadResources"}
			}
		}
		// The release's ServiceAccount is named after the release.
		checkAccess(ctx, t, c, ns, release, want)
		// Its leader election grant covers its own Lease namespace only, not the other release's.
		assert.False(t, allowed(ctx, t, c, ns, release, access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "workmap-scheduler"}))
	})

	// workmap serve's account, on the same control plane (serve_test.go).
	testServeRBAC(t, c)
	// workmap-webhook's, too (webhook_rbac_test.go).
	testWebhookRBAC(t, c)
}
