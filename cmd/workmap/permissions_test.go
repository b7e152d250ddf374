package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
)

// widgetObject is a Widget of two workers, a kind only a WorkloadDefinition in the cluster
// describes.
const widgetObject = `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: ml}
spec:
  workers: 2
  template:
    spec:
      containers: [{name: w, image: busybox}]
`

// definitionsRefused is the warning of a user who may not list the cluster's WorkloadDefinitions.
const definitionsRefused = "warning: the cluster's WorkloadDefinitions could not be read, so only the embedded catalog's definitions are used: " +
	"cannot list workloaddefinitions.workmap.dev cluster-wide: forbidden; ask for the built-in view role bound cluster-wide (a ClusterRoleBinding: a RoleBinding grants nothing cluster-scoped), " +
	"which includes workloaddefinitions.workmap.dev once workmap's aggregated ClusterRole workmap-view is installed (deploy/ or the Helm chart)\n"

// TestViewRole: a user bound to Kubernetes' built-in view role (with the JobSet operator's
// and the Widget operator's read access aggregated into it, as operators ship theirs) runs
// `get -A`, `tree`, `groups` and `serve` once workmap's aggregated roles (deploy/rbac) are
// installed; before, and for a user with no access, every refusal names the verb, the
// resource and the role to ask for, and a kind only the cluster's definitions describe is not
// called unknown.
func TestViewRole(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true, NoScheduler: true})
	c.StartWorkmapScheduler(harness.SchedulerOptions{})
	ctx := context.Background()
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	crd := filepath.Join(t.TempDir(), "widgets.yaml")
	require.NoError(t, os.WriteFile(crd, []byte(widgetCRD), 0o644))
	c.InstallCRDs(crd)
	create := func(src string, ns bool) {
		docs, err := manifest.Read([]byte(src), "object.yaml")
		require.NoError(t, err)
		obj := docs[0].Object
		gvk := obj.GroupVersionKind()
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
		if ns {
			_, err = c.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
		} else {
			_, err = c.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
		}
		require.NoError(t, err)
	}
	create(customWidgetDefinition, false)
	create(widgetObject, true)
	js, err := harness.ExampleJobSet("leader-workers", "workmap-scheduler", 0)
	require.NoError(t, err)
	js.SetNamespace("ml")
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("ml").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)

	// The operators' aggregated read access to their own kinds, and view bound cluster-wide.
	for name, rule := range map[string]rbacv1.PolicyRule{
		"jobset-view": {APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: []string{"get", "list", "watch"}},
		"widget-view": {APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}},
	} {
		_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules:      []rbacv1.PolicyRule{rule},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "viewer", APIGroup: "rbac.authorization.k8s.io"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	kc := []string{"--kubeconfig", c.Kubeconfig, "-n", "ml"}
	as := append([]string{"--as", "viewer"}, kc...)
	require.Eventually(t, func() bool { // the aggregation controller fills view; the grouper makes the PodGroup
		_, _, err = runStreams(t, append([]string{"get", "jobsets"}, as...)...)
		pg, _ := c.Dynamic.Resource(schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}).Namespace("ml").List(ctx, metav1.ListOptions{})
		return err == nil && pg != nil && len(pg.Items) == 1
	}, 60*time.Second, 200*time.Millisecond, "last error: %v", err)

	t.Run("view without workmap's roles", func(t *testing.T) {
		_, stderr, err := runStreams(t, append([]string{"tree", "widget/w1"}, as...)...)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "no definition describes that kind", "definitions may describe it: they could not be read")
		require.Equal(t, `"widget" means Widget of example.com (widgets.example.com), as in kubectl; `+
			`the cluster's WorkloadDefinitions could not be read (cannot list workloaddefinitions.workmap.dev cluster-wide: forbidden), `+
			`and neither the embedded catalog nor --definitions describes that kind; `+
			`ask for the built-in view role bound cluster-wide (a ClusterRoleBinding: a RoleBinding grants nothing cluster-scoped), `+
			`which includes workloaddefinitions.workmap.dev once workmap's aggregated ClusterRole workmap-view is installed (deploy/ or the Helm chart)`, err.Error())
		require.Equal(t, definitionsRefused, stderr)

		out, stderr, err := runStreams(t, append([]string{"get", "-A"}, as...)...)
		require.NoError(t, err)
		require.Contains(t, out, "leader-workers")
		require.NotContains(t, out, "w1", "no definition of Widget is in effect")
		require.Equal(t, definitionsRefused, stderr)

		out, _, err = runStreams(t, append([]string{"groups", "jobset/leader-workers"}, as...)...)
		require.NoError(t, err)
		require.Contains(t, out, "unknown: cannot list podgroups.scheduling.x-k8s.io in namespace ml: forbidden; ask for the built-in view role in namespace ml, "+
			"which includes podgroups.scheduling.x-k8s.io once workmap's aggregated ClusterRole workmap-view is installed")
	})

	t.Run("a user who may read nothing", func(t *testing.T) {
		_, stderr, err := runStreams(t, append([]string{"tree", "jobset/leader-workers", "--as", "nobody"}, kc...)...)
		require.EqualError(t, err, "cannot get jobsets.jobset.x-k8s.io in namespace ml: forbidden; ask for a role that grants get on jobsets.jobset.x-k8s.io in namespace ml: "+
			"the built-in view role does once its operator installs aggregated rules for it, or else the operator's own role")
		require.Equal(t, definitionsRefused, stderr)
		_, _, err = runStreams(t, append([]string{"get", "-A", "--as", "nobody"}, kc...)...)
		require.EqualError(t, err, "cannot list any workload kind in any namespace: forbidden (pods, jobs.batch, jobsets.jobset.x-k8s.io); ask for the built-in view role bound cluster-wide (a ClusterRoleBinding), or use -n NAMESPACE: "+
			"it grants pods and jobs.batch, and jobsets.jobset.x-k8s.io once its operator installs aggregated rules for it (else ask for the operator's own role)", "Kubernetes' own kinds and the one workload kind installed")
		_, _, err = runStreams(t, append([]string{"get", "jobsets", "--as", "nobody"}, kc...)...)
		require.EqualError(t, err, "cannot list jobsets.jobset.x-k8s.io in namespace ml: forbidden; ask for a role that grants list on jobsets.jobset.x-k8s.io in namespace ml: "+
			"the built-in view role does once its operator installs aggregated rules for it, or else the operator's own role")
		_, _, err = runStreams(t, append([]string{"catalog", "list", "--cluster", "--as", "nobody"}, kc...)...)
		require.ErrorContains(t, err, "cannot list workloaddefinitions.workmap.dev cluster-wide: forbidden; ask for the built-in view role")
	})

	// workmap's aggregated roles, as deploy/ installs them.
	docs, err := manifest.ReadFile(filepath.Join("..", "..", "deploy", "rbac", "aggregate_roles.yaml"))
	require.NoError(t, err)
	for _, d := range docs {
		var role rbacv1.ClusterRole
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object.Object, &role))
		_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		_, stderr, err := runStreams(t, append([]string{"get", "-A"}, as...)...)
		return err == nil && stderr == ""
	}, 30*time.Second, 200*time.Millisecond, "the aggregation controller adds workmap's rules to view")

	t.Run("view with workmap's roles", func(t *testing.T) {
		out, stderr, err := runStreams(t, append([]string{"get", "-A"}, as...)...)
		require.NoError(t, err)
		require.Empty(t, stderr)
		require.Regexp(t, `ml +JobSet +leader-workers +`, out)
		require.Regexp(t, `ml +Widget +w1 +`, out)

		for _, workload := range []string{"widget/w1", "jobset/leader-workers"} {
			out, stderr, err = runStreams(t, append([]string{"tree", workload}, as...)...)
			require.NoError(t, err, workload)
			require.Empty(t, stderr, workload)
			require.NotContains(t, out, "forbidden", workload)
		}
		require.Contains(t, out, "Gang all (leader, workers): minMember 3")

		out, stderr, err = runStreams(t, append([]string{"groups", "jobset/leader-workers"}, as...)...)
		require.NoError(t, err)
		require.Empty(t, stderr)
		require.Contains(t, out, "leader-workers-all")
		require.NotContains(t, out, "unknown")
		require.NotContains(t, out, "forbidden")
	})

	t.Run("serve as view with workmap's roles", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		out, w := io.Pipe()
		var errOut strings.Builder
		cmd := newRootCommand(w, &errOut)
		cmd.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--as", "viewer", "--kubeconfig", c.Kubeconfig})
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx); w.Close() }()
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		url := strings.TrimSuffix(strings.Fields(line)[2], "/")
		var page string
		require.Eventually(t, func() bool {
			page = fetch(t, url+"/")
			return strings.Contains(page, "ml/leader-workers") && strings.Contains(page, "ml/w1")
		}, 30*time.Second, 200*time.Millisecond, "both workloads listed:\n%s", page)
		for _, kind := range []string{"JobSet.jobset.x-k8s.io", "Widget.example.com"} {
			assert.Contains(t, page, `data-kind="`+kind+`" data-access="watching"`)
		}
		workload := fetch(t, url+"/workloads/jobset.x-k8s.io/JobSet/ml/leader-workers")
		assert.Contains(t, workload, "leader-workers-all")
		assert.NotContains(t, workload, "forbidden")
		assert.NotContains(t, workload, "not permitted")
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
		}
		assert.NotContains(t, strings.ToLower(errOut.String()), "forbidden")
	})
}
