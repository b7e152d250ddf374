package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/internal/needs"
)

// runStreams executes the CLI in-process and returns stdout, stderr and the error.
func runStreams(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runStreamsWith(t, func(*options) {}, args...)
}

// upstreamCRDFolders are the folders of the upstream CRDs of every catalog framework beside
// the checkout (../shared/upstream), or the test skips: users' clones do not have them. The
// JobSet CRD is left out: the harness installs the one of the JobSet release it runs.
func upstreamCRDFolders(t *testing.T) []string {
	t.Helper()
	up := filepath.Join("..", "..", "..", "shared", "upstream")
	entries, err := os.ReadDir(filepath.Join(up, "crds"))
	if err != nil {
		needs.Skip(t, "upstream CRDs not available at %s (%v): skipping the test with every catalog CRD installed", up, err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "jobset" {
			dir, err := filepath.Abs(filepath.Join(up, "crds", e.Name()))
			require.NoError(t, err)
			dirs = append(dirs, dir)
		}
	}
	dynamo, err := filepath.Abs(filepath.Join(up, "crds-standin-NOT-UPSTREAM", "dynamo"))
	require.NoError(t, err)
	return append(dirs, dynamo)
}

// TestCLINamesAndPermissions runs the CLI against a control plane with the CRD of every
// catalog framework installed: kind names resolve as kubectl resolves them, a user who may not
// list a kind or a workload's children still gets what can be shown, and `get -A` is fast.
func TestCLINamesAndPermissions(t *testing.T) {
	crds := upstreamCRDFolders(t)
	c := harness.Start(t, harness.Options{JobSet: true, CRDPaths: crds})
	ctx := context.Background()
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	js, err := harness.ExampleJobSet("leader-workers", corev1.DefaultSchedulerName, 0)
	require.NoError(t, err)
	js.SetNamespace("ml")
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("ml").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	docs, err := manifest.ReadFile(filepath.Join("..", "..", "..", "shared", "upstream", "samples", "lws", "sample-lws.yaml"))
	require.NoError(t, err)
	docs[0].Object.SetNamespace("ml")
	lwsResource := schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	_, err = c.Dynamic.Resource(lwsResource).Namespace("ml").Create(ctx, docs[0].Object, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the JobSet controller makes the Jobs
		jobs, err := c.Kube.BatchV1().Jobs("ml").List(ctx, metav1.ListOptions{})
		return err == nil && len(jobs.Items) == 3
	}, 60*time.Second, 100*time.Millisecond)
	kc := []string{"--kubeconfig", c.Kubeconfig, "-n", "ml"}

	t.Run("kind names as kubectl resolves them", func(t *testing.T) {
		tests := map[string]struct {
			args []string
			want string
		}{
			"short name":             {args: []string{"tree", "lws/leaderworkerset-sample"}, want: "LeaderWorkerSet ml/leaderworkerset-sample"},
			"resource.group":         {args: []string{"tree", "leaderworkersets.leaderworkerset.x-k8s.io/leaderworkerset-sample"}, want: "LeaderWorkerSet ml/leaderworkerset-sample"},
			"resource.version.group": {args: []string{"tree", "jobsets.v1alpha2.jobset.x-k8s.io/leader-workers"}, want: "JobSet ml/leader-workers"},
			"kind and name":          {args: []string{"tree", "JobSet", "leader-workers"}, want: "JobSet ml/leader-workers"},
			"short names in get":     {args: []string{"get", "lws,pcs,isvc,ksvc,mi,dgd"}, want: "leaderworkerset-sample"},
			"a category in get":      {args: []string{"get", "all"}, want: "No workloads found."},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				out, stderr, err := runStreams(t, append(tc.args, kc...)...)
				require.NoError(t, err, stderr)
				require.Contains(t, out, tc.want)
			})
		}
	})
	t.Run("errors name what kubectl would mean", func(t *testing.T) {
		tests := map[string]struct {
			args []string
			want string
		}{
			"services are core Services":      {args: []string{"get", "services"}, want: `"services" means the core kind Service (services), as in kubectl, and no definition describes that kind; for the workload kind of the same name use services.serving.knative.dev / kservice / ksvc`},
			"a namespace that does not exist": {args: []string{"get", "-n", "nosuchns"}, want: `namespace "nosuchns" does not exist`},
			"an unknown kind":                 {args: []string{"tree", "widgets/x"}, want: `unknown workload kind "widgets"`},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				// The test's own -n comes last, so it wins over kc's.
				args := append(append(tc.args[:1:1], kc...), tc.args[1:]...)
				_, _, err := runStreams(t, args...)
				require.ErrorContains(t, err, tc.want)
			})
		}
	})

	// reader may list every workload kind but LeaderWorkerSets, and the Jobs and pods of
	// JobSets; specOnly may read JobSets and nothing else.
	groups := []string{"jobset.x-k8s.io", "kubeflow.org", "ray.io", "serving.kserve.io", "serving.knative.dev", "apps.nvidia.com", "milvus.io", "grove.io", "nvidia.com"}
	read := []string{"get", "list", "watch"}
	roles := map[string][]rbacv1.PolicyRule{
		"reader": {
			{APIGroups: groups, Resources: []string{"*"}, Verbs: read},
			{APIGroups: []string{"", "batch"}, Resources: []string{"pods", "jobs"}, Verbs: read},
		},
		"spec-only": {{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: read}},
	}
	for user, rules := range roles {
		_, err := c.Kube.RbacV1().Roles("ml").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.RbacV1().RoleBindings("ml").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	t.Run("get skips a kind the user may not list", func(t *testing.T) {
		var out, stderr string
		require.Eventually(t, func() bool { // RBAC caches catch up
			out, stderr, err = runStreams(t, append([]string{"get", "--as", "reader"}, kc...)...)
			return err == nil && strings.Contains(out, "leader-workers")
		}, 30*time.Second, 200*time.Millisecond)
		require.Equal(t, definitionsRefused+"warning: cannot list leaderworkersets.leaderworkerset.x-k8s.io in namespace ml: forbidden; "+
			"ask for a role that grants list on leaderworkersets.leaderworkerset.x-k8s.io in namespace ml: the built-in view role does once its operator installs aggregated rules for it, or else the operator's own role\n", stderr)
		require.Contains(t, out, "JobSet   leader-workers")
		require.NotContains(t, out, "leaderworkerset-sample")
	})
	t.Run("tree without permission on children and pods shows the spec", func(t *testing.T) {
		var out, stderr string
		require.Eventually(t, func() bool {
			out, stderr, err = runStreams(t, append([]string{"tree", "jobset/leader-workers", "--as", "spec-only"}, kc...)...)
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "last error: %v", err)
		for _, want := range []string{
			"JobSet ml/leader-workers",
			"├─ leader  1 pod  4 GPUs",
			"└─ workers  2 pods  8 GPUs",
			"Total: 3 pods, 12 GPUs",
			"Warning: cannot list jobs.batch in namespace ml: forbidden: showing what the spec gives, without live children and pods; ask for the built-in view role in namespace ml\n",
			"Warning: cannot list pods in namespace ml: forbidden: showing what the spec gives, without live children and pods; ask for the built-in view role in namespace ml\n",
		} {
			require.Contains(t, out, want)
		}
		require.Equal(t, definitionsRefused, stderr)
	})
	t.Run("get -A with every catalog CRD installed", func(t *testing.T) {
		t.Setenv("KUBECACHEDIR", t.TempDir()) // the first round reads discovery from the cluster
		for _, round := range []string{"discovery not cached", "discovery cached"} {
			var reqs harness.Requests
			start := time.Now()
			out, stderr, err := runStreamsWith(t, func(o *options) { o.kube.WrapConfigFn = reqs.Wrap }, "get", "-A", "--kubeconfig", c.Kubeconfig)
			took := time.Since(start)
			require.NoError(t, err, stderr)
			require.Contains(t, out, "leader-workers")
			require.Contains(t, out, "leaderworkerset-sample")
			t.Logf("workmap get -A (%s, 13 workload kinds installed) took %s with %d API requests", round, took.Round(time.Millisecond), len(reqs.List()))
		}
	})
}

// runStreamsWith is runStreams with tuned options.
func runStreamsWith(t *testing.T, tune func(*options), args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("NO_COLOR", "1")
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut, tune)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}
