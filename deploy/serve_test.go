package deploy_test

// Tests of workmap serve's deployment (serve/, with-serve/ and the Helm chart's serve.enabled):
// its ClusterRole reads exactly what the view shows (the embedded catalog's roots and every
// child kind, pods, namespaces, nodes, PodGroups, definitions) and nothing else, asked of the API
// server's own authorizer; its Deployment is hardened; with-serve is deploy/ plus serve; and
// the real `workmap serve`, run as the shipped ServiceAccount, shows a JobSet without being
// refused anything.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/e2e/harness"
)

const serveName = "workmap-serve"

// serveAlwaysRead are what the view reads whatever the definitions: pods (and namespaces, for
// its per-namespace totals and filter), nodes (GPU capacity, topology), events (a workload's
// page lists those of the workload and its pods), PodGroups (gangs) and the cluster's
// definitions.
var serveAlwaysRead = []schema.GroupResource{
	{Group: "", Resource: "pods"},
	{Group: "", Resource: "namespaces"},
	{Group: "", Resource: "nodes"},
	{Group: "", Resource: "events"},
	{Group: "scheduling.x-k8s.io", Resource: "podgroups"},
	{Group: "workmap.dev", Resource: "workloaddefinitions"},
}

// serveGetOnly are read by name only: the DRA claims and claim templates a pod names, for its
// GPUs.
var serveGetOnly = []schema.GroupResource{
	{Group: "resource.k8s.io", Resource: "resourceclaims"},
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"},
}

// serveReads are the resources workmap serve lists and watches: every version's root resource
// and every child kind's resource of the compiled catalog and of Kubernetes' own kinds the
// scheduler gangs (Jobs, pods), derived as the view derives what it watches, plus
// serveAlwaysRead.
func serveReads(t *testing.T) sets.Set[schema.GroupResource] {
	t.Helper()
	defs, err := catalog.Definitions()
	require.NoError(t, err)
	require.NotEmpty(t, defs)
	kinds, err := catalog.KubernetesKinds()
	require.NoError(t, err)
	compiled, err := definitions.CompileAll(kinds, nil)
	require.NoError(t, err)
	defs = append(defs, compiled...)
	out := sets.New(serveAlwaysRead...)
	for _, d := range defs {
		require.NotEmpty(t, d.Source.Spec.Workload.Versions, d.GroupKind.String())
		for _, v := range d.Source.Spec.Workload.Versions {
			root, _ := meta.UnsafeGuessKindToResource(d.GroupKind.WithVersion(v))
			out.Insert(root.GroupResource())
		}
		for _, c := range d.Children() {
			out.Insert(c.Resource.GroupResource())
		}
	}
	return out
}

// TestServeRoleMatchesCatalog: workmap serve's ClusterRole, in serve/ and in the chart, grants
// get, list and watch on exactly what the view watches, get on DRA claims, and nothing else: a
// kind added to the catalog without its RBAC fails here, and so does a grant nothing needs.
func TestServeRoleMatchesCatalog(t *testing.T) {
	want := serveReads(t)
	// The catalog's children that own no pods are shown too (the scheduler's role leaves
	// them out): the derivation above must have found them.
	for gk := range notPodOwners {
		gr := schema.GroupResource{Group: gk.Group, Resource: resourceOf(gk.Kind, "")}
		assert.True(t, want.Has(gr), "%s: the view shows every child kind", gr)
	}

	tests := map[string]func(t *testing.T) []*unstructured.Unstructured{
		"serve/cluster_role.yaml": func(t *testing.T) []*unstructured.Unstructured { return readObjects(t, "serve/cluster_role.yaml") },
		"helm chart": func(t *testing.T) []*unstructured.Unstructured {
			return helmTemplate(t, releaseName, namespace, "--set", "serve.enabled=true")
		},
	}
	for name, objs := range tests {
		t.Run(name, func(t *testing.T) {
			u := find(objs(t), schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}, serveName)
			require.NotNil(t, u, "the ClusterRole %s", serveName)
			var role rbacv1.ClusterRole
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role))
			read, getOnly := sets.New[schema.GroupResource](), sets.New[schema.GroupResource]()
			for _, r := range role.Rules {
				assert.Empty(t, r.ResourceNames, "%v", r)
				assert.Empty(t, r.NonResourceURLs, "%v", r)
				for _, g := range r.APIGroups {
					assert.NotEqual(t, "*", g, "no wildcards: %v", r)
					for _, res := range r.Resources {
						assert.NotEqual(t, "*", res, "no wildcards: %v", r)
						assert.NotContains(t, res, "/", "no subresources: %v", r)
						assert.NotEqual(t, schema.GroupResource{Resource: "secrets"}, schema.GroupResource{Group: g, Resource: res}, "never secrets")
						gr := schema.GroupResource{Group: g, Resource: res}
						switch {
						case slicesEqual(r.Verbs, []string{"get", "list", "watch"}):
							read.Insert(gr)
						case slicesEqual(r.Verbs, []string{"get"}):
							getOnly.Insert(gr)
						default:
							t.Errorf("read only (get, list, watch, or get alone): %v", r)
						}
					}
				}
			}
			assert.Empty(t, sorted(want.Difference(read)), "kinds the view shows but may not list: add them to serve/cluster_role.yaml and the chart")
			assert.Empty(t, sorted(read.Difference(want)), "read access nothing the view shows needs")
			assert.Equal(t, sorted(sets.New(serveGetOnly...)), sorted(getOnly), "get alone: the DRA claims pods name")
		})
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// checkServeDeployment checks workmap serve's Deployment, Service and ClusterRoleBinding among
// rendered objects.
func checkServeDeployment(t *testing.T, objs []*unstructured.Unstructured, ns string) {
	t.Helper()
	u := find(objs, schema.GroupKind{Group: "apps", Kind: "Deployment"}, serveName)
	require.NotNil(t, u, "the Deployment %s", serveName)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	assert.Equal(t, ns, d.Namespace)
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(1), *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	assert.Equal(t, serveName, pod.ServiceAccountName)
	assert.NotNil(t, find(objs, schema.GroupKind{Kind: "ServiceAccount"}, pod.ServiceAccountName), "runs as the ServiceAccount the RBAC binds")
	require.Len(t, pod.Containers, 1)
	ctr := pod.Containers[0]
	assert.Equal(t, "ghcr.io/workmap/workmap:latest", ctr.Image)
	assert.Equal(t, corev1.PullIfNotPresent, ctr.ImagePullPolicy)
	assert.Equal(t, []string{"serve", "--addr=:8080", "-A"}, ctr.Args)
	require.Len(t, ctr.Ports, 1)
	assert.Equal(t, "http", ctr.Ports[0].Name)
	assert.Equal(t, int32(8080), ctr.Ports[0].ContainerPort)
	for name, probe := range map[string]*corev1.Probe{"liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		require.NotNil(t, probe, name)
		require.NotNil(t, probe.HTTPGet, name)
		assert.Equal(t, "/healthz", probe.HTTPGet.Path, name)
		assert.Equal(t, "http", probe.HTTPGet.Port.String(), name)
	}
	// Hardened: non-root, read-only root, no capabilities, the runtime's seccomp profile.
	require.NotNil(t, pod.SecurityContext)
	require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.NotNil(t, pod.SecurityContext.RunAsUser)
	assert.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
	require.NotNil(t, pod.SecurityContext.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
	require.NotNil(t, ctr.SecurityContext)
	require.NotNil(t, ctr.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, *ctr.SecurityContext.ReadOnlyRootFilesystem)
	require.NotNil(t, ctr.SecurityContext.AllowPrivilegeEscalation)
	assert.False(t, *ctr.SecurityContext.AllowPrivilegeEscalation)
	require.NotNil(t, ctr.SecurityContext.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, ctr.SecurityContext.Capabilities.Drop)
	assert.Empty(t, ctr.SecurityContext.Capabilities.Add)
	assert.NotEmpty(t, ctr.Resources.Requests)

	// The Service sends port 80 to the pod's http port, and selects this Deployment's pods.
	su := find(objs, schema.GroupKind{Kind: "Service"}, serveName)
	require.NotNil(t, su, "the Service %s", serveName)
	var svc corev1.Service
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(su.Object, &svc))
	assert.Equal(t, ns, svc.Namespace)
	assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type, "no login of its own: not exposed outside the cluster")
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(80), svc.Spec.Ports[0].Port)
	assert.Equal(t, "http", svc.Spec.Ports[0].TargetPort.String())
	require.NotEmpty(t, svc.Spec.Selector)
	assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)), "the Service selects the pods")
	assert.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector, "and only them")

	// Bound to its own ServiceAccount, cluster-wide (-A).
	bu := find(objs, schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}, serveName)
	require.NotNil(t, bu, "the ClusterRoleBinding %s", serveName)
	var b rbacv1.ClusterRoleBinding
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(bu.Object, &b))
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: serveName}, b.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: serveName, Namespace: ns}}, b.Subjects)
}

// TestServeKustomization: `kubectl kustomize deploy/with-serve` is everything deploy/ renders,
// unchanged, plus workmap serve's five objects, labelled as the scheduler's are and wired to
// each other; the chart with serve.enabled=true renders a Deployment as hardened.
func TestServeKustomization(t *testing.T) {
	base := kustomize(t, ".")
	objs := kustomize(t, "with-serve")
	for _, o := range base {
		got := find(objs, o.GroupVersionKind().GroupKind(), o.GetName())
		if assert.NotNil(t, got, "with-serve installs deploy/'s %s %s", o.GetKind(), o.GetName()) {
			assert.Equal(t, o.Object, got.Object, "%s %s as deploy/ renders it", o.GetKind(), o.GetName())
		}
	}
	var added []string
	for _, o := range objs {
		if find(base, o.GroupVersionKind().GroupKind(), o.GetName()) != nil {
			continue
		}
		added = append(added, o.GetKind()+"/"+o.GetName())
		assert.Equal(t, map[string]string{"app.kubernetes.io/name": serveName, "app.kubernetes.io/part-of": "workmap"}, o.GetLabels(), "%s %s", o.GetKind(), o.GetName())
		if o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			assert.Equal(t, namespace, o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	assert.ElementsMatch(t, []string{
		"ServiceAccount/" + serveName, "ClusterRole/" + serveName, "ClusterRoleBinding/" + serveName,
		"Deployment/" + serveName, "Service/" + serveName,
	}, added)
	// The component's files are what it renders.
	for _, o := range readObjects(t, "serve/service_account.yaml", "serve/cluster_role.yaml", "serve/cluster_role_binding.yaml", "serve/deployment.yaml", "serve/service.yaml") {
		got := find(objs, o.GroupVersionKind().GroupKind(), o.GetName())
		if assert.NotNil(t, got, "%s %s", o.GetKind(), o.GetName()) {
			assert.Equal(t, o.Object, got.Object)
		}
	}

	tests := map[string][]*unstructured.Unstructured{
		"kustomize with-serve": objs,
		"helm serve.enabled":   helmTemplate(t, releaseName, namespace, "--set", "serve.enabled=true"),
	}
	for name, objs := range tests {
		t.Run(name, func(t *testing.T) { checkServeDeployment(t, objs, namespace) })
	}
	t.Run("helm default", func(t *testing.T) {
		for _, o := range helmTemplate(t, releaseName, namespace) {
			assert.NotEqual(t, serveName, o.GetLabels()["app.kubernetes.io/name"], "serve is off by default: %s %s", o.GetKind(), o.GetName())
			assert.False(t, strings.HasSuffix(o.GetName(), "-serve"), "serve is off by default: %s %s", o.GetKind(), o.GetName())
		}
	})
}

// serveExpectations are what workmap serve's ServiceAccount (saNamespace/saName) must and must
// not be able to do: read every kind it shows in every namespace; no secrets, no writes.
func serveExpectations(t *testing.T, saNamespace, saName string) []expectation {
	allow := func(why string, a access) expectation { return expectation{access: a, allow: true, why: why} }
	deny := func(why string, a access) expectation { return expectation{access: a, allow: false, why: why} }
	out := []expectation{
		allow("JobSets in every namespace", access{verb: "list", group: "jobset.x-k8s.io", resource: "jobsets"}),
		allow("JobSets in one namespace", access{verb: "list", group: "jobset.x-k8s.io", resource: "jobsets", namespace: "ml"}),
		allow("pods in every namespace", access{verb: "list", resource: "pods"}),
		allow("pods in every namespace", access{verb: "watch", resource: "pods"}),
		allow("pods in one namespace", access{verb: "list", resource: "pods", namespace: "default"}),
		allow("namespaces", access{verb: "list", resource: "namespaces"}),
		allow("gangs", access{verb: "watch", group: "scheduling.x-k8s.io", resource: "podgroups"}),
		allow("the cluster's definitions", access{verb: "list", group: "workmap.dev", resource: "workloaddefinitions"}),
		allow("DRA GPUs: a claim template a pod names", access{verb: "get", group: "resource.k8s.io", resource: "resourceclaimtemplates", namespace: "default", name: "gpu"}),
		allow("DRA GPUs: a claim a pod names", access{verb: "get", group: "resource.k8s.io", resource: "resourceclaims", namespace: "default", name: "gpu"}),
		deny("claims are read by name", access{verb: "list", group: "resource.k8s.io", resource: "resourceclaims"}),
		allow("it asks what it may list (SelfSubjectAccessReview, granted to every account)", access{verb: "create", group: "authorization.k8s.io", resource: "selfsubjectaccessreviews"}),
		allow("the nodes' GPUs and topology labels", access{verb: "list", resource: "nodes"}),
		allow("the nodes' GPUs and topology labels", access{verb: "watch", resource: "nodes"}),
		allow("the events of a workload and its pods", access{verb: "watch", resource: "events"}),
		deny("nothing it does not show", access{verb: "list", group: "apps", resource: "daemonsets"}),
		deny("nothing it does not show", access{verb: "list", group: "apps", resource: "replicasets"}),
		deny("nothing it does not show", access{verb: "list", group: "example.com", resource: "widgets"}),
		deny("no pod logs", access{verb: "get", resource: "pods", subresource: "log", namespace: "default"}),
		deny("no exec", access{verb: "create", resource: "pods", subresource: "exec", namespace: "default"}),
		deny("never makes pods", access{verb: "create", resource: "pods", namespace: "default"}),
		deny("no tokens", access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: saNamespace, name: saName}),
		deny("no impersonation", access{verb: "impersonate", resource: "users", name: "admin"}),
		deny("no RBAC changes", access{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}),
		deny("no RBAC changes", access{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: saName}),
		deny("no RBAC changes", access{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"}),
	}
	for _, ns := range []string{"", "default", "kube-system", saNamespace} {
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, deny("never secrets", access{verb: verb, resource: "secrets", namespace: ns}))
		}
	}
	// Read only: no write of any kind to what it reads, nor to anything else.
	writable := []access{
		{resource: "pods", namespace: "default"},
		{resource: "pods", subresource: "status", namespace: "default"},
		{resource: "namespaces", name: "default"},
		{resource: "configmaps", namespace: "default"},
		{resource: "services", namespace: "default"},
		{resource: "nodes", name: "node-0"},
		{group: "jobset.x-k8s.io", resource: "jobsets", namespace: "default"},
		{group: "batch", resource: "jobs", namespace: "default"},
		{group: "apps", resource: "deployments", namespace: "default"},
		{group: "scheduling.x-k8s.io", resource: "podgroups", namespace: "default"},
		{group: "scheduling.x-k8s.io", resource: "podgroups", subresource: "status", namespace: "default"},
		{group: "workmap.dev", resource: "workloaddefinitions", name: "jobsets.jobset.x-k8s.io"},
		{group: "resource.k8s.io", resource: "resourceclaims", namespace: "default"},
	}
	for _, a := range writable {
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			a.verb = verb
			out = append(out, deny("read only", a))
		}
	}
	for gr := range serveReads(t) {
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, allow("the view shows "+gr.String(), access{verb: verb, group: gr.Group, resource: gr.Resource}))
		}
	}
	return out
}

// serveRBAC are the objects of workmap serve's identity and grants among rendered objects.
func serveRBAC(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		rbac := o.GetAPIVersion() == rbacv1.SchemeGroupVersion.String() || o.GetKind() == "ServiceAccount"
		if rbac && strings.HasSuffix(o.GetName(), "-serve") {
			out = append(out, o)
		}
	}
	return out
}

// testServeRBAC is TestRBAC's part for workmap serve (one control plane for both).
func testServeRBAC(t *testing.T, c *harness.Cluster) {
	ctx := context.Background()
	a := newApplier(c)

	t.Run("serve/", func(t *testing.T) {
		// The namespace comes from deploy/ (applied by TestRBAC's rbac/ part or here).
		require.NoError(t, a.apply(ctx, readObjects(t, "scheduler/namespace.yaml")[0], false))
		objs := serveRBAC(kustomize(t, "with-serve"))
		require.Len(t, objs, 3, "ServiceAccount, ClusterRole, ClusterRoleBinding")
		for _, o := range objs {
			require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
		}
		checkAccess(ctx, t, c, namespace, serveName, serveExpectations(t, namespace, serveName))
	})

	t.Run("helm chart serve.enabled", func(t *testing.T) {
		// Another release in another namespace: its objects are named after it.
		const release, ns, name = "helm-workmap-scheduler", "workmap-helm-serve", "helm-workmap-serve"
		objs := serveRBAC(helmTemplate(t, release, ns, "--set", "serve.enabled=true",
			"--set", "serve.rbac.extraResources[0].apiGroup=example.com",
			"--set", "serve.rbac.extraResources[0].resources={widgets}"))
		require.Len(t, objs, 3, "ServiceAccount, ClusterRole, ClusterRoleBinding")
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for _, o := range objs {
			require.Equal(t, name, o.GetName())
			require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
		}
		want := serveExpectations(t, ns, name)
		for i, e := range want {
			if e.group == "example.com" {
				want[i] = expectation{access: e.access, allow: true, why: "serve.rbac.extraResources"}
			}
		}
		checkAccess(ctx, t, c, ns, name, want)
	})
}

// TestServeRunsWithShippedRBAC runs `workmap serve` with the Deployment's arguments as
// workmap-system/workmap-serve with nothing but the shipped RBAC: it answers the probes'
// /healthz, shows a JobSet, and is refused nothing it watches.
func TestServeRunsWithShippedRBAC(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{},
		CRDPaths: []string{filepath.Join(harness.BinDir(t), "jobset", "crds")}})
	binary := harness.CLIBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	a := newApplier(c)
	require.NoError(t, a.apply(ctx, readObjects(t, "scheduler/namespace.yaml")[0], false))
	for _, o := range serveRBAC(kustomize(t, "with-serve")) {
		require.NoError(t, a.apply(ctx, o, false), "%s %s", o.GetKind(), o.GetName())
	}
	kubeconfig := serviceAccountKubeconfig(ctx, t, c, namespace, serveName)

	js, err := harness.ExampleJobSet("example", "workmap-scheduler", 0)
	require.NoError(t, err)
	js.SetNamespace("default")
	require.NoError(t, a.apply(ctx, js, false))

	// The Deployment's arguments, but on loopback (and a free port) and with the token's
	// kubeconfig in place of the pod's in-cluster configuration.
	u := find(kustomize(t, "with-serve"), schema.GroupKind{Group: "apps", Kind: "Deployment"}, serveName)
	require.NotNil(t, u)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	port := freePort(t)
	var args []string
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(arg, "--addr=") {
			arg = fmt.Sprintf("--addr=127.0.0.1:%d", port)
		}
		args = append(args, arg)
	}
	args = append(args, "--kubeconfig="+kubeconfig)
	exited, logText := startComponent(t, "workmap serve", binary, args...)

	client := &http.Client{Timeout: 2 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("workmap serve exited: %v", err)
		default:
		}
		status, _ := get("/healthz")
		return status == http.StatusOK
	}, time.Minute, 200*time.Millisecond, "/healthz answers 200")

	// The JobSet shows up (its kind listed and watched with the shipped grants).
	require.Eventually(t, func() bool {
		status, body := get("/api/workloads")
		if status != http.StatusOK {
			return false
		}
		var list struct {
			Kind  string           `json:"kind"`
			Items []map[string]any `json:"items"`
		}
		if json.Unmarshal([]byte(body), &list) != nil {
			return false
		}
		return list.Kind == "List" && strings.Contains(body, `"example"`) && len(list.Items) == 1
	}, time.Minute, 500*time.Millisecond, "the JobSet default/example in /api/workloads")

	status, page := get("/")
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, page, "not permitted", "a kind the view watches is refused to it")
	assert.NotContains(t, page, "forbidden", "a kind the view watches is refused to it")
	status, _ = get("/metrics")
	assert.Equal(t, http.StatusOK, status)
	for _, line := range strings.Split(logText(), "\n") {
		assert.NotContains(t, strings.ToLower(line), "forbidden", "the shipped RBAC refused workmap serve something")
	}
}
