package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

const setInput = "testdata/set-input.yaml"

// runSet executes the CLI in-process and returns stdout, stderr and the error.
func runSet(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("NO_COLOR", "1")
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestSetFileGolden(t *testing.T) {
	tests := map[string]struct {
		args   []string
		golden string
	}{
		"scheduler: every template of every workload, other documents kept": {
			args: []string{"set", "scheduler", "-f", setInput}, golden: "set-scheduler.yaml"},
		"scheduler by name, as a diff": {
			args: []string{"set", "scheduler", "-f", setInput, "--name", "kai-scheduler", "--diff"}, golden: "set-scheduler-diff.txt"},
		"labels, annotations, node selector and priority class": {
			args: []string{"set", "pod-template", "-f", setInput, "--labels", "kueue.x-k8s.io/queue-name=team-a,tier=gold", "--annotations", "note=hi", "--node-selector", "pool=gpu", "--priority-class", "high", "--diff"}, golden: "set-pod-template-diff.txt"},
		"a partial pod template": {
			args: []string{"set", "pod-template", "-f", setInput, "--patch", "testdata/set-patch.yaml", "--diff"}, golden: "set-patch-diff.txt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := runSet(t, tc.args...)
			require.NoError(t, err)
			golden(t, tc.golden, out+"-- stderr --\n"+errOut)
		})
	}
}

// TestSetFileUnchanged: a manifest that already asks for the scheduler comes out byte for byte.
func TestSetFileUnchanged(t *testing.T) {
	want, err := os.ReadFile(example)
	require.NoError(t, err)
	out, errOut, err := runSet(t, "set", "scheduler", "-f", example)
	require.NoError(t, err)
	require.Equal(t, string(want), out)
	require.Equal(t, "jobset.jobset.x-k8s.io/leader-workers: unchanged (2 pod templates already have spec.schedulerName=workmap-scheduler)\n", errOut)
}

func TestSetErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	thingDef := write("thing.yaml", `apiVersion: workmap.dev/v1alpha1
kind: WorkloadDefinition
metadata: {name: things.example.com}
spec:
  workload: {group: example.com, kind: Thing, versions: [v1]}
  roles:
  - {name: main, podSpec: spec.podSpec}
`)
	thing := write("t.yaml", "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n  podSpec: {containers: [{name: c}]}\n")
	tests := map[string]struct {
		args []string
		want string
	}{
		"no workload named":         {args: []string{"set", "scheduler"}, want: "name a workload as KIND/NAME"},
		"both -f and a name":        {args: []string{"set", "scheduler", "jobset/x", "-f", setInput}, want: "give either -f FILE or KIND/NAME, not both"},
		"dry run of a file":         {args: []string{"set", "scheduler", "-f", setInput, "--dry-run=client"}, want: "--dry-run is for changes to the cluster"},
		"bad dry run":               {args: []string{"set", "scheduler", "jobset/x", "--dry-run=yes"}, want: `--dry-run must be "none", "client" or "server", not "yes"`},
		"invalid scheduler name":    {args: []string{"set", "scheduler", "-f", setInput, "--name", "Not_A_Name"}, want: `--name "Not_A_Name" is not a valid scheduler name`},
		"nothing to set":            {args: []string{"set", "pod-template", "-f", setInput}, want: "nothing to set: give --labels"},
		"invalid label value":       {args: []string{"set", "pod-template", "-f", setInput, "--labels", "team=not ok"}, want: `--labels: value "not ok" of team`},
		"no known kind":             {args: []string{"set", "scheduler", "-f", write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}, want: "no workload of a known kind in " + filepath.Join(dir, "cm.yaml") + " (found: ConfigMap)"},
		"malformed YAML has line":   {args: []string{"set", "scheduler", "-f", write("bad.yaml", "apiVersion: v1\nkind: [unclosed\n")}, want: "bad.yaml:2: malformed YAML"},
		"patch replaces containers": {args: []string{"set", "pod-template", "-f", setInput, "--patch", write("p1.yaml", "spec: {containers: [{name: x}]}\n")}, want: "spec.containers would replace every container of every role"},
		"patch removes a field":     {args: []string{"set", "pod-template", "-f", setInput, "--patch", write("p2.yaml", "spec: {nodeSelector: null}\n")}, want: "spec.nodeSelector is null: removing a field is not supported"},
		"patch outside a template":  {args: []string{"set", "pod-template", "-f", setInput, "--patch", write("p3.yaml", "status: {}\n")}, want: `unknown field "status": a pod template has metadata and spec`},
		"patch of metadata.name":    {args: []string{"set", "pod-template", "-f", setInput, "--patch", write("p4.yaml", "metadata: {name: x}\n")}, want: "metadata.name: only metadata.labels and metadata.annotations"},
		"a bare pod spec takes no labels, naming the object, field and role": {
			args: []string{"set", "pod-template", "-f", thing, "--definitions", thingDef, "--labels", "a=b"},
			want: thing + `:1: thing.example.com/t: cannot set metadata.labels["a"]: role main: metadata.labels["a"]: this role embeds a bare pod spec, only spec.<field> can be set`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := runSet(t, tc.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Empty(t, out, "nothing is written on error")
		})
	}
}

func TestVersionString(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := map[string]struct {
		set  string
		info *debug.BuildInfo
		want string
	}{
		"set at build time":       {set: "v1.2.3", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.0.1"}}, want: "v1.2.3"},
		"go install of a release": {info: &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}, Settings: vcs("vcs.revision", "0123456789abcdef")}, want: "v0.4.0"},
		"built from a checkout": {
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")},
			want: "commit 0123456789ab (2026-01-02T03:04:05Z)"},
		"with uncommitted changes": {
			info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")},
			want: "commit 0123456789ab-dirty"},
		"no version control":   {info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: "unknown (built without version control information)"},
		"no build information": {want: "unknown"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, versionString(tc.set, tc.info))
		})
	}
}

func TestDisplayName(t *testing.T) {
	for argv0, want := range map[string]string{
		"workmap":                     "workmap",
		"/usr/local/bin/workmap":      "workmap",
		"/home/u/bin/kubectl-workmap": "kubectl workmap",
		`C:\bin\kubectl-workmap.exe`:  "kubectl workmap",
	} {
		require.Equal(t, want, displayName(filepath.ToSlash(strings.ReplaceAll(argv0, `\`, "/"))), argv0)
	}
}

// TestHelp: help names the command as kubectl's plugin when run as one, and keeps kubectl's
// connection flags in their own section, left out of commands that never read the cluster.
func TestHelp(t *testing.T) {
	tests := map[string]struct {
		args         []string
		want, absent []string
	}{
		"a live command": {args: []string{"set", "scheduler", "--help"},
			want: []string{"Usage:\n  workmap set scheduler (KIND/NAME", "Flags:\n      --diff", "Global Flags:\n      --definitions", "Kubeconfig Flags:\n      --as string"}},
		"an offline command": {args: []string{"test", "--help"},
			want: []string{"Global Flags:"}, absent: []string{"Kubeconfig Flags:", "--kubeconfig"}},
		"the catalog reads the cluster with --cluster": {args: []string{"catalog", "list", "--help"}, want: []string{"      --cluster", "Kubeconfig Flags:\n      --as string"}},
		"the root":   {args: []string{"--help"}, want: []string{"completion", "set ", "Kubeconfig Flags:"}},
		"completion": {args: []string{"completion", "bash"}, want: []string{"bash completion V2 for workmap"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, _, err := runSet(t, tc.args...)
			require.NoError(t, err)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			for _, a := range tc.absent {
				require.NotContains(t, out, a)
			}
			require.LessOrEqual(t, strings.Count(out, "--definitions strings"), 1, "each flag is listed once")
		})
	}
	t.Run("as kubectl's plugin", func(t *testing.T) {
		var out bytes.Buffer
		cmd := newRootCommand(&out, &out)
		cmd.Annotations[cobra.CommandDisplayNameAnnotation] = displayName("kubectl-workmap")
		cmd.SetArgs([]string{"set", "--help"})
		require.NoError(t, cmd.Execute())
		require.Contains(t, out.String(), "Usage:\n  kubectl workmap set [command]")
		require.Contains(t, out.String(), `Use "kubectl workmap set [command] --help"`)
	})
}
