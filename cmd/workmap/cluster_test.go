package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
)

// TestCLIAgainstCluster runs the CLI against the real control plane with the real JobSet
// controller: the example JobSet shows its roles, 3 pods, 12 GPUs and status.
func TestCLIAgainstCluster(t *testing.T) {
	c := harness.Start(t, harness.Options{JobSet: true})
	ctx := context.Background()
	js, err := harness.ExampleJobSet("leader-workers", corev1.DefaultSchedulerName, 0)
	require.NoError(t, err)
	_, err = c.Dynamic.Resource(harness.JobSetResource).Namespace("default").Create(ctx, js, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pods, err := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=leader-workers"})
		if err != nil || len(pods.Items) != 3 {
			return false
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond)
	kc := []string{"--kubeconfig", c.Kubeconfig}

	t.Run("tree", func(t *testing.T) {
		out, err := run(t, append([]string{"tree", "jobset/leader-workers", "-n", "default"}, kc...)...)
		require.NoError(t, err)
		for _, want := range []string{"JobSet default/leader-workers  Running", "├─ leader  1 pod  4 GPUs  [1/1 found: 1 Running]", "└─ workers  2 pods  8 GPUs  [2/2 found: 2 Running]", "pod/leader-workers-workers-1-0-", "Gang all (leader, workers): minMember 3", "Total: 3 pods, 12 GPUs"} {
			require.Contains(t, out, want)
		}
	})
	t.Run("tree -o wide names each pod's Job and age", func(t *testing.T) {
		out, err := run(t, append([]string{"tree", "jobset/leader-workers", "-n", "default", "-o", "wide"}, kc...)...)
		require.NoError(t, err)
		require.Regexp(t, `pod/leader-workers-workers-1-0-\S+  Running  on \S+  owner Job/leader-workers-workers-1  age \S+  0 restarts\n`, out)
		require.Contains(t, out, "Role workers: per pod: cpu 2 cores, memory 8Gi, nvidia.com/gpu 4")
	})
	t.Run("tree with kubectl-style kind names", func(t *testing.T) {
		for _, kind := range []string{"jobsets", "JobSet", "jobset.jobset.x-k8s.io"} {
			_, err := run(t, append([]string{"tree", kind, "leader-workers"}, kc...)...)
			require.NoError(t, err, kind)
		}
	})
	t.Run("get golden", func(t *testing.T) {
		out, err := run(t, append([]string{"get", "-A"}, kc...)...)
		require.NoError(t, err)
		golden(t, "get-all.txt", out)
	})
	t.Run("live documents", func(t *testing.T) {
		out, err := run(t, append([]string{"tree", "jobset/leader-workers", "-n", "default", "-o", "json"}, kc...)...)
		require.NoError(t, err)
		var head struct{ APIVersion, Kind string }
		require.NoError(t, json.Unmarshal([]byte(out), &head))
		require.Equal(t, "WorkloadTree", head.Kind, "KIND/NAME gives one WorkloadTree")
		s := workloadTreeSchema(t)
		require.Equal(t, 1, validateTrees(t, s, []byte(out), "live tree"))
		out, err = run(t, append([]string{"get", "-A", "-o", "json"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, 1, validateTrees(t, s, []byte(out), "live get"))
		out, err = run(t, append([]string{"get", "-A", "-o", "name"}, kc...)...)
		require.NoError(t, err)
		require.Equal(t, "jobset.jobset.x-k8s.io/leader-workers\n", out)
		out, err = run(t, append([]string{"get", "-A", "-o", "custom-columns=NAMESPACE:.workload.namespace,NAME:.workload.name,READY:.live.ready,GPUS:.totals.gpus,GANGS:.groups[*].minMember"}, kc...)...)
		require.NoError(t, err)
		golden(t, "get-all-columns.txt", out)
	})
	t.Run("lint --cluster", func(t *testing.T) {
		out, err := run(t, append([]string{"lint", "--cluster"}, kc...)...)
		require.NoError(t, err, out)
		require.Contains(t, out, "jobsets.jobset.x-k8s.io: ok (against the CRD schema of v1alpha2)")
	})
	t.Run("definitions: cluster overrides the catalog, --definitions overrides the cluster", func(t *testing.T) {
		gangNamed := func(group string) string {
			return `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: jobsets.jobset.x-k8s.io}
spec:
  workload: {group: jobset.x-k8s.io, kind: JobSet, versions: [v1alpha2]}
  roles:
  - name: replicatedJob
    podTemplate: spec.replicatedJobs[*].template.spec.template
    instanceName: item.name
    replicas: "item.?replicas.orValue(1)"
  gang:
    groups: [{name: ` + group + `, members: [replicatedJob]}]
`
		}
		docs, err := manifest.Read([]byte(gangNamed("from-cluster")), "wd.yaml")
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(workloadDefinitions).Create(ctx, docs[0].Object, metav1.CreateOptions{})
		require.NoError(t, err)
		defer func() {
			_ = c.Dynamic.Resource(workloadDefinitions).Delete(ctx, "jobsets.jobset.x-k8s.io", metav1.DeleteOptions{})
		}()

		out, err := run(t, append([]string{"groups", "jobset/leader-workers"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "leader-workers-from-cluster")

		file := filepath.Join(t.TempDir(), "local.yaml")
		require.NoError(t, os.WriteFile(file, []byte(gangNamed("from-file")), 0o644))
		out, err = run(t, append([]string{"groups", "jobset/leader-workers", "--definitions", file}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "leader-workers-from-file")
	})
	t.Run("errors", func(t *testing.T) {
		tests := map[string]struct {
			args []string
			want string
		}{
			"object not found":   {args: []string{"tree", "jobset/nope"}, want: `JobSet "nope" not found in namespace "default"`},
			"unknown kind":       {args: []string{"tree", "widget/x"}, want: "see `workmap catalog list`"},
			"kind not installed": {args: []string{"tree", "leaderworkerset/x"}, want: "is not installed in the cluster"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				_, err := run(t, append(tc.args, kc...)...)
				require.ErrorContains(t, err, tc.want)
			})
		}
	})
	t.Run("tree makes at most child kinds + 3 requests", func(t *testing.T) {
		var reqs harness.Requests
		count := func(o *options) { o.kube.WrapConfigFn = reqs.Wrap }
		_, err := runWith(t, count, append([]string{"tree", "jobset/leader-workers"}, kc...)...)
		require.NoError(t, err)
		const jobSetChildKinds = 1
		require.LessOrEqual(t, len(reqs.List()), jobSetChildKinds+3)
		t.Logf("workmap tree made %d API requests", len(reqs.List()))
	})
	t.Run("a user with only the view role", func(t *testing.T) {
		// JobSet's own chart aggregates read access to jobsets into the view role.
		_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "jobset-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"jobset.x-k8s.io"}, Resources: []string{"jobsets"}, Verbs: []string{"get", "list", "watch"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "viewer", APIGroup: "rbac.authorization.k8s.io"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		as := append([]string{"--as", "viewer"}, kc...)
		require.Eventually(t, func() bool { // the aggregation controller fills the view role
			_, err := run(t, append([]string{"tree", "jobset/leader-workers"}, as...)...)
			return err == nil
		}, 30*time.Second, 200*time.Millisecond)
		out, err := run(t, append([]string{"get"}, as...)...)
		require.NoError(t, err)
		require.Contains(t, out, "leader-workers")
		_, err = run(t, append([]string{"get", "-A", "--as", "nobody"}, kc...)...)
		require.ErrorContains(t, err, "forbidden")
	})
	t.Run("lint --cluster checks every version the definition lists", func(t *testing.T) {
		dir := t.TempDir()
		crd := filepath.Join(dir, "crd.yaml")
		require.NoError(t, os.WriteFile(crd, []byte(widgetCRDVersions), 0o644))
		c.InstallCRDs(crd)
		def := filepath.Join(dir, "def.yaml")
		require.NoError(t, os.WriteFile(def, []byte(widgetDefinition("self.spec.workers", "v1", "v2")), 0o644))
		out, err := run(t, append([]string{"lint", def, "--cluster"}, kc...)...)
		require.ErrorContains(t, err, "1 of 1 definitions are invalid")
		require.Contains(t, out, "undefined field 'workers' (at column 10) (in version v2)")
	})
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./cmd/workmap -update")
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got); run with -update if intended:\n%s", path, diff)
	}
}

// TestUnreachableCluster: a kubeconfig pointing nowhere gives one clear line.
func TestUnreachableCluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	_, err := run(t, "tree", "jobset/x", "--kubeconfig", kubeconfig)
	require.ErrorContains(t, err, "cannot reach the cluster at https://127.0.0.1:1")
}
