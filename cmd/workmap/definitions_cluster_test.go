package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/e2e/harness"
)

// TestClusterDefinitions: on the real control plane, a WorkloadDefinition the API server
// accepts but workmap cannot compile is listed by `catalog list --cluster` as Invalid beside a
// valid custom one, fails `lint --cluster` with its field, and is skipped by the other
// commands with a warning naming it.
func TestClusterDefinitions(t *testing.T) {
	c := harness.Start(t, harness.Options{NoScheduler: true, Nodes: []harness.Node{}})
	ctx := context.Background()
	crd := filepath.Join(t.TempDir(), "widgets.yaml")
	require.NoError(t, os.WriteFile(crd, []byte(widgetCRD), 0o644))
	c.InstallCRDs(crd)
	for _, src := range []string{invalidGadgetDefinition, customWidgetDefinition} {
		docs, err := manifest.Read([]byte(src), "definition.yaml")
		require.NoError(t, err)
		_, err = c.Dynamic.Resource(workloadDefinitions).Create(ctx, docs[0].Object, metav1.CreateOptions{})
		require.NoError(t, err, "the API server accepts it")
	}
	kc := []string{"--kubeconfig", c.Kubeconfig}

	t.Run("catalog list --cluster", func(t *testing.T) {
		out, errOut, err := runCLI(t, append([]string{"catalog", "list", "--cluster"}, kc...)...)
		require.NoError(t, err)
		require.Empty(t, errOut)
		require.Regexp(t, regexp.MustCompile(`(?m)^Gadget +example\.com +v1 +worker +no +gadgets\.example\.com +cluster +Invalid: spec\.roles\[0\]\.podTemplate: Invalid value: "spec\.template\[": .*; spec\.roles\[0\]\.replicas: Invalid value: "self\.spec\.\(": Syntax error`), out)
		require.Regexp(t, regexp.MustCompile(`(?m)^Widget +example\.com +v1 +worker +no +widgets\.example\.com +cluster +In effect$`), out)
		require.Regexp(t, regexp.MustCompile(`(?m)^JobSet +.* embedded +In effect$`), out)
	})
	t.Run("catalog show --cluster", func(t *testing.T) {
		out, _, err := runCLI(t, append([]string{"catalog", "show", "widget", "--cluster"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, out, "workmap.dev/source: cluster")
	})
	t.Run("lint --cluster fails on the invalid one, naming the field", func(t *testing.T) {
		out, _, err := runCLI(t, append([]string{"lint", "--cluster"}, kc...)...)
		require.ErrorContains(t, err, "1 of 17 definitions are invalid")
		require.Contains(t, out, "cluster: definition \"gadgets.example.com\" is invalid:\n")
		require.Contains(t, out, `  spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error`)
		require.Contains(t, out, "cluster: widgets.example.com: ok (against the CRD schema of v1)")
	})
	t.Run("other commands skip it with a warning", func(t *testing.T) {
		_, errOut, err := runCLI(t, append([]string{"get", "-A"}, kc...)...)
		require.NoError(t, err)
		require.Contains(t, errOut, `warning: WorkloadDefinition gadgets.example.com in the cluster is invalid, skipped: spec.roles[0].replicas: Invalid value: "self.spec.(": Syntax error`)
		require.NotContains(t, errOut, "skipping the cluster's")
	})
}
