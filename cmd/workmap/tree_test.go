package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const example = "../../examples/jobset-leader-workers.yaml"

// run executes the CLI in-process and returns stdout and the error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runWith(t, nil, args...)
}

// runWith executes the CLI in-process with tuned options.
func runWith(t *testing.T, tune func(*options), args ...string) (string, error) {
	t.Helper()
	t.Setenv("NO_COLOR", "1")
	var out, errOut bytes.Buffer
	var tunes []func(*options)
	if tune != nil {
		tunes = append(tunes, tune)
	}
	cmd := newRootCommand(&out, &errOut, tunes...)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestTreeGolden(t *testing.T) {
	tests := map[string]struct {
		args   []string
		golden string
	}{
		"example JobSet as a tree":                {args: []string{"tree", "-f", example}, golden: "tree-jobset.txt"},
		"the catalog":                             {args: []string{"catalog", "list"}, golden: "catalog-list.txt"},
		"example JobSet's gangs":                  {args: []string{"groups", "-f", example}, golden: "groups-jobset.txt"},
		"example JobSet as JSON":                  {args: []string{"tree", "-f", example, "-o", "json"}, golden: "tree-jobset.json"},
		"example JobSet as YAML, fields in order": {args: []string{"tree", "-f", example, "-o", "yaml"}, golden: "tree-jobset.yaml"},
		"example JobSet's gangs as YAML":          {args: []string{"groups", "-f", example, "-o", "yaml"}, golden: "groups-jobset.yaml"},
		"the catalog's definitions by name":       {args: []string{"catalog", "list", "-o", "name"}, golden: "catalog-list-name.txt"},
		"GPUs claimed through DRA, with their sources": {
			args: []string{"tree", "-f", filepath.Join("..", "..", "examples", "jobset-dra-gpus.yaml"), "-o", "wide"}, golden: "tree-dra-gpus.txt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := run(t, tc.args...)
			require.NoError(t, err)
			path := filepath.Join("testdata", tc.golden)
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "golden file missing: run go test ./cmd/workmap -update")
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("output differs from %s (-want +got); run with -update if intended:\n%s", path, diff)
			}
		})
	}
}

func TestTreeJSONContract(t *testing.T) {
	// Several workloads: a List of WorkloadTrees, as kubectl prints several objects.
	out, err := run(t, "tree", "-f", example, "-f", example, "-o", "json")
	require.NoError(t, err)
	var list struct {
		APIVersion, Kind string
		Items            []json.RawMessage
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Equal(t, "v1", list.APIVersion)
	require.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 2)
	// One workload: the WorkloadTree itself.
	out, err = run(t, "tree", "-f", example, "-o", "json")
	require.NoError(t, err)
	var doc struct {
		APIVersion, Kind string
		Workload         struct{ APIVersion, Kind, Namespace, Name string }
		Status           struct{ State, Reason string }
		Totals           struct {
			Pods, GPUs int64
			Resources  map[string]string
		}
		Roles []struct {
			Name      string
			Pods      int64
			GPUs      int64
			Instances []json.RawMessage
		}
		Groups []struct {
			Name      string
			MinMember int32
			Scope     string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, "workmap.dev/v1alpha1", doc.APIVersion)
	require.Equal(t, "WorkloadTree", doc.Kind)
	require.Equal(t, "JobSet", doc.Workload.Kind)
	require.Equal(t, "leader-workers", doc.Workload.Name)
	require.EqualValues(t, 3, doc.Totals.Pods)
	require.EqualValues(t, 12, doc.Totals.GPUs)
	require.Equal(t, "12", doc.Totals.Resources["nvidia.com/gpu"])
	require.Len(t, doc.Roles, 2)
	require.Equal(t, "leader", doc.Roles[0].Name)
	require.EqualValues(t, 1, doc.Roles[0].Pods)
	require.EqualValues(t, 4, doc.Roles[0].GPUs)
	require.Equal(t, "workers", doc.Roles[1].Name)
	require.EqualValues(t, 2, doc.Roles[1].Pods)
	require.EqualValues(t, 8, doc.Roles[1].GPUs)
	require.Len(t, doc.Roles[1].Instances, 2)
	require.Len(t, doc.Groups, 1)
	require.EqualValues(t, 3, doc.Groups[0].MinMember)
	require.Equal(t, "workload", doc.Groups[0].Scope)
	require.NotEmpty(t, doc.Status.State)
	require.NotEmpty(t, doc.Status.Reason)
}

func TestTreeErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	tests := map[string]struct {
		args []string
		want string
	}{
		"no file":                 {args: []string{"tree"}, want: "name a workload as KIND/NAME"},
		"missing file":            {args: []string{"tree", "-f", filepath.Join(dir, "nope.yaml")}, want: "no such file"},
		"malformed YAML has line": {args: []string{"tree", "-f", write("bad.yaml", "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: [unclosed\n")}, want: "bad.yaml:5: malformed YAML: did not find expected"},
		"no known kind":           {args: []string{"tree", "-f", write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}, want: "no workload of a known kind"},
		"unknown output":          {args: []string{"tree", "-f", example, "-o", "xml"}, want: "unknown output format"},
		"broken definitions dir":  {args: []string{"tree", "-f", example, "--definitions", write("def.yaml", "apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: {name: x}\nspec: {workload: {group: a, kind: B, versions: [v1]}, roles: []}\n")}, want: "spec.roles"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, tc.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.False(t, strings.Contains(err.Error(), "\n\n"), "errors stay compact")
		})
	}
}

func TestTreeYAML(t *testing.T) {
	out, err := run(t, "tree", "-f", example, "-o", "yaml")
	require.NoError(t, err)
	require.Contains(t, out, "gpus: 12")
	require.Contains(t, out, "minMember: 3")
}
