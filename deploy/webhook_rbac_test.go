package deploy_test

// Tests of workmap-webhook's RBAC (webhook/ and the Helm chart's webhook.enabled), asked of
// the API server's own authorizer: it may make native PodGroups and read them, read the
// definitions and every pod owner of the catalog, watch pods and record events (on the pods
// created without their gang), and (self-managed certificate only) its own Secret and its own
// Mutating- and ValidatingWebhookConfiguration; nothing else: no pod writes, no PodGroup updates or deletes,
// no event reads or deletes, no other Secret, no other webhook configuration.

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workmap/workmap/e2e/harness"
)

// webhookExpectations are what workmap-webhook's ServiceAccount (saNamespace/name, its
// Secret name-certs and its configuration name) must and must not be able to do; with
// certManager its certificate comes from files and it gets no Secret or configuration access.
func webhookExpectations(t *testing.T, saNamespace, name string, certManager bool) []expectation {
	allow := func(why string, a access) expectation { return expectation{access: a, allow: true, why: why} }
	deny := func(why string, a access) expectation { return expectation{access: a, allow: false, why: why} }
	const native = "scheduling.k8s.io"
	secret := name + "-certs"
	const admission = "admissionregistration.k8s.io"
	out := []expectation{
		// Native gangs.
		allow("makes the native PodGroup a new pod joins", access{verb: "create", group: native, resource: "podgroups", namespace: "default"}),
		allow("caches the PodGroups it made", access{verb: "list", group: native, resource: "podgroups"}),
		allow("caches the PodGroups it made", access{verb: "watch", group: native, resource: "podgroups"}),
		allow("reads a PodGroup", access{verb: "get", group: native, resource: "podgroups", namespace: "default", name: "job-all"}),
		deny("it changes one field of a PodGroup, by patch", access{verb: "update", group: native, resource: "podgroups", namespace: "default"}),
		allow("a gang's minCount follows its workload (v1beta1)", access{verb: "patch", group: native, resource: "podgroups", namespace: "default"}),
		deny("PodGroups go with their workload (garbage collector)", access{verb: "delete", group: native, resource: "podgroups", namespace: "default"}),
		deny("PodGroups go with their workload (garbage collector)", access{verb: "deletecollection", group: native, resource: "podgroups", namespace: "default"}),
		deny("status is the scheduler's", access{verb: "update", group: native, resource: "podgroups", subresource: "status", namespace: "default"}),
		deny("it makes no Workloads", access{verb: "create", group: native, resource: "workloads", namespace: "default"}),
		deny("it makes no Workloads", access{verb: "list", group: native, resource: "workloads"}),
		deny("workmap-scheduler's PodGroups are the scheduler's", access{verb: "create", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		deny("workmap-scheduler's PodGroups are the scheduler's", access{verb: "update", group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"}),
		// Pods: the API server applies the webhook's patch; the webhook writes none.
		deny("never makes pods", access{verb: "create", resource: "pods", namespace: "default"}),
		deny("never writes pods (its answer is a patch the API server applies)", access{verb: "update", resource: "pods", namespace: "default"}),
		deny("never writes pods (its answer is a patch the API server applies)", access{verb: "patch", resource: "pods", namespace: "default"}),
		deny("never deletes pods", access{verb: "delete", resource: "pods", namespace: "default"}),
		deny("does not schedule", access{verb: "create", resource: "pods", subresource: "binding", namespace: "default"}),
		deny("never writes a pod's status", access{verb: "update", resource: "pods", subresource: "status", namespace: "default"}),
		deny("never evicts pods", access{verb: "create", resource: "pods", subresource: "eviction", namespace: "default"}),
		allow("watches pods for those created without their gang", access{verb: "list", resource: "pods"}),
		allow("watches pods for those created without their gang", access{verb: "watch", resource: "pods"}),
		allow("watches pods in every namespace", access{verb: "list", resource: "pods", namespace: "default"}),
		deny("reads no pod by name (its cache has them)", access{verb: "get", resource: "pods", namespace: "default", name: "train-0"}),
		deny("no pod logs", access{verb: "get", resource: "pods", subresource: "log", namespace: "default", name: "train-0"}),
		deny("no exec", access{verb: "create", resource: "pods", subresource: "exec", namespace: "default", name: "train-0"}),
		// Events: a Warning on each pod created without its gang.
		allow("records an event on a pod created without its gang", access{verb: "create", group: "events.k8s.io", resource: "events", namespace: "default"}),
		allow("counts a repeated event", access{verb: "patch", group: "events.k8s.io", resource: "events", namespace: "default"}),
		deny("its events are events.k8s.io's", access{verb: "create", resource: "events", namespace: "default"}),
		deny("its events are events.k8s.io's", access{verb: "patch", resource: "events", namespace: "default"}),
		deny("reads no events", access{verb: "list", group: "events.k8s.io", resource: "events"}),
		deny("reads no events", access{verb: "get", group: "events.k8s.io", resource: "events", namespace: "default", name: "e"}),
		deny("events are never replaced or deleted", access{verb: "update", group: "events.k8s.io", resource: "events", namespace: "default", name: "e"}),
		deny("events are never replaced or deleted", access{verb: "delete", group: "events.k8s.io", resource: "events", namespace: "default", name: "e"}),
		deny("events are never replaced or deleted", access{verb: "deletecollection", group: "events.k8s.io", resource: "events", namespace: "default"}),
		// Definitions and owners, read only.
		allow("definitions in the cluster", access{verb: "list", group: "workmap.dev", resource: "workloaddefinitions"}),
		allow("definitions in the cluster", access{verb: "watch", group: "workmap.dev", resource: "workloaddefinitions"}),
		deny("definitions are read only", access{verb: "update", group: "workmap.dev", resource: "workloaddefinitions", name: "jobsets.jobset.x-k8s.io"}),
		deny("definitions are read only", access{verb: "create", group: "workmap.dev", resource: "workloaddefinitions"}),
		deny("their status is the scheduler's", access{verb: "update", group: "workmap.dev", resource: "workloaddefinitions", subresource: "status", name: "jobsets.jobset.x-k8s.io"}),
		deny("workloads are read only", access{verb: "update", group: "jobset.x-k8s.io", resource: "jobsets", namespace: "default"}),
		deny("workloads are read only", access{verb: "delete", group: "batch", resource: "jobs", namespace: "default"}),
		deny("DaemonSet pods are never gangs", access{verb: "list", group: "apps", resource: "daemonsets"}),
		deny("Knative Routes own no pods", access{verb: "list", group: "serving.knative.dev", resource: "routes"}),
		deny("no other workload kinds", access{verb: "list", group: "example.com", resource: "widgets"}),
		// Other webhook configurations are never its business.
		deny("no webhook configuration of another kind", access{verb: "patch", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", name: name}),
		// Secrets: its own only.
		deny("only its own Secret", access{verb: "get", resource: "secrets", namespace: saNamespace, name: "someone-else"}),
		deny("only its own Secret", access{verb: "update", resource: "secrets", namespace: saNamespace, name: "someone-else"}),
		deny("Secrets are read by name", access{verb: "list", resource: "secrets", namespace: saNamespace}),
		deny("Secrets are read by name", access{verb: "watch", resource: "secrets", namespace: saNamespace}),
		deny("it never deletes its Secret", access{verb: "delete", resource: "secrets", namespace: saNamespace, name: secret}),
		deny("it replaces its Secret whole", access{verb: "patch", resource: "secrets", namespace: saNamespace, name: secret}),
		deny("no Secrets elsewhere", access{verb: "create", resource: "secrets", namespace: "default"}),
		deny("no Secrets elsewhere", access{verb: "get", resource: "secrets", namespace: "default", name: secret}),
		deny("no Secrets elsewhere", access{verb: "get", resource: "secrets", namespace: "kube-system", name: secret}),
		// Nothing it does not do.
		deny("no configmaps", access{verb: "list", resource: "configmaps"}),
		// The Lease of the one replica that reports pods created without their gang.
		allow("stands for the report's Lease", access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: saNamespace}),
		allow("holds the report's Lease", access{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: saNamespace, name: name + "-report"}),
		allow("renews or takes over the report's Lease", access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: saNamespace, name: name + "-report"}),
		deny("no other Lease", access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: saNamespace, name: "workmap-scheduler"}),
		deny("no other Lease", access{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: saNamespace, name: "workmap-scheduler"}),
		deny("it never deletes the Lease", access{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: saNamespace, name: name + "-report"}),
		deny("no Leases elsewhere", access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "default"}),
		deny("no Leases elsewhere", access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: "kube-scheduler"}),
		deny("no nodes", access{verb: "list", resource: "nodes"}),
		deny("no tokens", access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: saNamespace, name: name}),
		deny("no impersonation", access{verb: "impersonate", resource: "users", name: "admin"}),
		deny("no RBAC changes", access{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}),
		deny("no RBAC changes", access{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"}),
		deny("no RBAC changes", access{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: name}),
	}
	for _, ns := range []string{"", "default", "kube-system"} {
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, deny("no Secrets but its own", access{verb: verb, resource: "secrets", namespace: ns}))
		}
	}
	for _, cfgs := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		out = append(out,
			deny("only its own configuration", access{verb: "patch", group: admission, resource: cfgs, name: "someone-else"}),
			deny("only its own configuration", access{verb: "get", group: admission, resource: cfgs, name: "someone-else"}),
			deny("not every configuration", access{verb: "list", group: admission, resource: cfgs}),
			deny("not every configuration", access{verb: "watch", group: admission, resource: cfgs}),
			deny("it only sets the caBundle", access{verb: "update", group: admission, resource: cfgs, name: name}),
			deny("it only sets the caBundle", access{verb: "delete", group: admission, resource: cfgs, name: name}),
			deny("no new webhooks", access{verb: "create", group: admission, resource: cfgs}))
	}
	// The self-managed certificate's Secret and caBundle, by name (list and watch with a
	// metadata.name field selector are authorized by that name).
	certs := []access{
		{verb: "create", resource: "secrets", namespace: saNamespace},
		{verb: "get", resource: "secrets", namespace: saNamespace, name: secret},
		{verb: "update", resource: "secrets", namespace: saNamespace, name: secret},
	}
	for _, cfgs := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		for _, verb := range []string{"get", "list", "watch", "patch"} {
			certs = append(certs, access{verb: verb, group: admission, resource: cfgs, name: name})
		}
	}
	for _, a := range certs {
		if certManager {
			out = append(out, deny("cert-manager's certificate is read from files", a))
		} else {
			out = append(out, allow("its own certificate and caBundle", a))
		}
	}
	// Every pod owner of the catalog is readable, as the scheduler's grouper reads them.
	for gr := range catalogOwners(t) {
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, allow("owner chains and definitions read "+gr.String(), access{verb: verb, group: gr.Group, resource: gr.Resource}))
		}
	}
	return out
}

// webhookRBAC are the objects of the webhook's identity and grants among rendered objects,
// with the scheduler's workloads ClusterRole its binding names.
func webhookRBAC(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		rbac := o.GetAPIVersion() == rbacv1.SchemeGroupVersion.String() || o.GetKind() == "ServiceAccount"
		if rbac && (strings.Contains(o.GetName(), "-webhook") || (o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "-scheduler-workloads"))) {
			out = append(out, o)
		}
	}
	return out
}

// testWebhookRBAC is TestRBAC's part for workmap-webhook (one control plane for all).
func testWebhookRBAC(t *testing.T, c *harness.Cluster) {
	ctx := context.Background()
	a := newApplier(c)
	applyIn := func(t *testing.T, ns string, objs []*unstructured.Unstructured, want int) {
		t.Helper()
		if ns != namespace {
			_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		require.Len(t, objs, want, "%v", kindNames(objs))
		for _, o := range objs {
			require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
		}
	}
	withExtra := func(want []expectation, why string) []expectation {
		for i, e := range want {
			if e.group == "example.com" {
				want[i] = expectation{access: e.access, allow: true, why: why}
			}
		}
		return want
	}

	t.Run("webhook/", func(t *testing.T) {
		require.NoError(t, a.apply(ctx, readObjects(t, "scheduler/namespace.yaml")[0], false))
		// ServiceAccount, 2 ClusterRoles and 3 ClusterRoleBindings, 2 Roles, 2 RoleBindings,
		// and the scheduler's workloads ClusterRole.
		applyIn(t, namespace, webhookRBAC(kustomize(t, "with-webhook")), 11)
		checkAccess(ctx, t, c, namespace, webhookName, webhookExpectations(t, namespace, webhookName, false))
	})

	t.Run("helm chart webhook.enabled", func(t *testing.T) {
		// Another release in another namespace: its objects are named after it, and an extra
		// workload kind for the scheduler is one for the webhook too.
		const release, ns, name = "webhook-workmap-scheduler", "workmap-helm-webhook", "webhook-workmap-webhook"
		applyIn(t, ns, webhookRBAC(helmTemplate(t, release, ns, "--set", "webhook.enabled=true",
			"--set", "rbac.extraWorkloadResources[0].apiGroup=example.com",
			"--set", "rbac.extraWorkloadResources[0].resources={widgets}")), 11)
		checkAccess(ctx, t, c, ns, name, withExtra(webhookExpectations(t, ns, name, false), "rbac.extraWorkloadResources"))
		// Its grants cover its own Secret and configuration, not the other installation's.
		require.False(t, allowed(ctx, t, c, ns, name, access{verb: "get", resource: "secrets", namespace: namespace, name: "workmap-webhook-certs"}))
		require.False(t, allowed(ctx, t, c, ns, name, access{verb: "patch", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: webhookName}))
		require.False(t, allowed(ctx, t, c, ns, name, access{verb: "patch", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: webhookName}))
	})

	t.Run("helm chart webhook.certManager.enabled", func(t *testing.T) {
		// deploy/webhook-cert-manager's RBAC is webhook/'s without the four certificate
		// objects (webhook_test.go); the chart's is applied here.
		const release, ns, name = "cm-workmap-scheduler", "workmap-helm-cm", "cm-workmap-webhook"
		applyIn(t, ns, webhookRBAC(helmTemplate(t, release, ns, "--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true")), 7)
		checkAccess(ctx, t, c, ns, name, webhookExpectations(t, ns, name, true))
	})
}
