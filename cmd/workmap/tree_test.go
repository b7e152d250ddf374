package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/internal/needs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const example = "../../examples/jobset-leader-workers.yaml"

// topologyExample is the example JobSet twice, its gang's topology from workmap's annotations
// and from the definition (JobSet's exclusive placement).
const topologyExample = "testdata/jobset-topology.yaml"

// jobExample is a plain batch Job of 4 GPU workers, which the scheduler gangs with its built-in
// Job grouper.
const jobExample = "../../examples/job-gpu-workers.yaml"

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
		"gangs' topology, from annotations and from the definition": {
			args: []string{"tree", "-f", topologyExample}, golden: "tree-jobset-topology.txt"},
		"gangs' topology as a column": {args: []string{"groups", "-f", topologyExample}, golden: "groups-jobset-topology.txt"},
		"gangs' topology, wide: where it comes from": {
			args: []string{"groups", "-f", topologyExample, "-o", "wide"}, golden: "groups-jobset-topology-wide.txt"},
		"gangs' topology as YAML":                                    {args: []string{"groups", "-f", topologyExample, "-o", "yaml"}, golden: "groups-jobset-topology.yaml"},
		"a batch Job, which the scheduler gangs without a framework": {args: []string{"tree", "-f", jobExample}, golden: "tree-job.txt"},
		"a batch Job's gang, as the scheduler's built-in grouper forms it": {
			args: []string{"groups", "-f", jobExample}, golden: "groups-job.txt"},
		"a batch Job's gang as YAML": {args: []string{"groups", "-f", jobExample, "-o", "yaml"}, golden: "groups-job.yaml"},
		"a pod on its own that asks for a gang": {
			args: []string{"tree", "-f", "testdata/pod-gang.yaml"}, golden: "tree-pod-gang.txt"},
		"a pod's own gang": {args: []string{"groups", "-f", "testdata/pod-gang.yaml"}, golden: "groups-pod-gang.txt"},
		"GPUs claimed through DRA, with their sources": {
			args: []string{"tree", "-f", filepath.Join("..", "..", "examples", "jobset-dra-gpus.yaml"), "-o", "wide"}, golden: "tree-dra-gpus.txt"},
		"GPUs a NIMService claims through DRA (draResources), and why some are not counted": {
			args: []string{"tree", "-f", "testdata/nimservice-dra.yaml", "-o", "wide"}, golden: "tree-nimservice-dra.txt"},
		"GPUs a Grove PodCliqueSet shares through DRA (resourceSharing), each claim once, and why some are not counted": {
			args: []string{"tree", "-f", "testdata/grove-dra.yaml", "-o", "wide"}, golden: "tree-grove-dra.txt"},
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

// upstreamSample is the path of a real upstream sample beside the checkout
// (../shared/upstream/samples), or the test skips: users' clones do not have them.
func upstreamSample(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "upstream", "samples", name)
	if _, err := os.Stat(p); err != nil {
		needs.Skip(t, "upstream sample %s not available (%v)", p, err)
	}
	return p
}

// TestTreeTextOfUpstreamSamples: the tree of real workloads reads as a person reads it:
// quantities in cores and binary units, no "0 GPUs" or roles without pods unless -o wide,
// runs of identical instances on one line, gangs named by the roles they hold.
func TestTreeTextOfUpstreamSamples(t *testing.T) {
	tests := map[string]struct {
		sample string
		wide   bool
		golden string
	}{
		"Milvus: roles without pods on one line":                  {sample: "milvus/cluster_demo.yaml", golden: "tree-milvus.txt"},
		"Milvus, wide: every role, and no empty template place":   {sample: "milvus/demo.yaml", wide: true, golden: "tree-milvus-wide.txt"},
		"Knative minScale 50: one line for the revisions":         {sample: "knative-serving/rollout-probe-setup-activator-direct.yaml", golden: "tree-knative-minscale.txt"},
		"Dynamo: one gang per component, each named":              {sample: "dynamo/vllm-v1beta1-disagg-multinode.yaml", golden: "tree-dynamo-multinode.txt"},
		"RayJob with generateName, memory in bytes":               {sample: "rayjob/ray-job.pytorch-distributed-training.yaml", golden: "tree-rayjob-generatename.txt"},
		"RayJob, wide: per-pod requests in cores and Gi":          {sample: "rayjob/ray-job.batch-inference.yaml", wide: true, golden: "tree-rayjob-wide.txt"},
		"Grove: a computed gang is named by its entry":            {sample: "grove/multi-node-disaggregated.yaml", golden: "tree-grove-scaled.txt"},
		"LeaderWorkerSet: a gang per replica over both its roles": {sample: "lws/sample-lws.yaml", golden: "tree-lws.txt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := []string{"tree", "-f", upstreamSample(t, tc.sample)}
			if tc.wide {
				args = append(args, "-o", "wide")
			}
			out, err := run(t, args...)
			require.NoError(t, err)
			golden(t, tc.golden, out)
		})
	}
	t.Run("wide shows every identical instance", func(t *testing.T) {
		out, err := run(t, "tree", "-f", upstreamSample(t, "knative-serving/rollout-probe-setup-activator-direct.yaml"), "-o", "wide")
		require.NoError(t, err)
		require.Equal(t, 50, strings.Count(out, "  1 pod\n"), out)
		require.Contains(t, out, "└─ revision-49  1 pod\n")
	})
}

// liveNow is the time the live goldens take the pods' ages at.
var liveNow = time.Date(2025, 1, 2, 4, 0, 0, 0, time.UTC)

// TestTreeTextGolden: the tree of workloads the engine read with live data, or could not
// read whole, printed as `tree` and `tree -o wide` print them.
func TestTreeTextGolden(t *testing.T) {
	reg, err := catalog.Registry()
	require.NoError(t, err)
	live, ok := expandFixture(t, reg, filepath.Join("testdata", "tree-live-input.yaml"))
	require.True(t, ok)
	docs, err := manifest.ReadFile(filepath.Join("testdata", "tree-unreadable-input.yaml"))
	require.NoError(t, err)
	def, ok := reg.Lookup(docs[0].Object.GroupVersionKind().GroupKind())
	require.True(t, ok)
	unreadable, err := def.Expand(docs[0].Object)
	require.NoError(t, err)
	require.NotEmpty(t, unreadable.Errors)
	tests := map[string]struct {
		w      *definitions.Workload
		wide   bool
		golden string
	}{
		"live: pods with their reasons, idle Jobs on one line":    {w: live, golden: "tree-live.txt"},
		"live, wide: each pod's Job, age and restarts":            {w: live, wide: true, golden: "tree-live-wide.txt"},
		"roles that could not be read are not roles without pods": {w: unreadable, golden: "tree-unreadable.txt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			printTree(&out, tc.w, textOptions{wide: tc.wide, now: liveNow})
			golden(t, tc.golden, out.String())
		})
	}
}

// TestTreeSkippedDocuments: the documents of -f files no definition describes are named on
// stderr, one line, with their file and line; a file with none of a known kind stays an error.
func TestTreeSkippedDocuments(t *testing.T) {
	tests := map[string]struct {
		sample string
		want   string
	}{
		"a ConfigMap beside the RayJob":        {sample: "rayjob/ray-job.sample.yaml", want: "skipped 1 document with no workload definition: ConfigMap/ray-job-code-sample (%s:122)\n"},
		"a Service beside the LeaderWorkerSet": {sample: "lws/sglang-lws.yaml", want: "skipped 1 document with no workload definition: Service/sglang-leader (%s:91)\n"},
		"a NIMCache before the NIMService":     {sample: "nim/standalone-basic-llm.yaml", want: "skipped 1 document with no workload definition: NIMCache.apps.nvidia.com/meta-llama-3-2-1b-instruct (%s:2)\n"},
		"nothing skipped":                      {sample: "jobset/simple-group.yaml", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := upstreamSample(t, tc.sample)
			out, stderr, err := runStreams(t, "tree", "-f", f)
			require.NoError(t, err)
			require.NotEmpty(t, out)
			want := tc.want
			if want != "" {
				want = fmt.Sprintf(want, f)
			}
			require.Equal(t, want, stderr)
		})
	}
	t.Run("a claim template a workload reads for its GPUs is not skipped; one none reads is", func(t *testing.T) {
		f := "testdata/nimservice-dra.yaml"
		_, stderr, err := runStreams(t, "tree", "-f", f)
		require.NoError(t, err)
		require.Empty(t, stderr)
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		unused := filepath.Join(t.TempDir(), "unused.yaml")
		require.NoError(t, os.WriteFile(unused, []byte(strings.Replace(string(data), "name: single-gpu", "name: unused", 1)), 0o644))
		_, stderr, err = runStreams(t, "tree", "-f", unused)
		require.NoError(t, err)
		require.Equal(t, "skipped 1 document with no workload definition: ResourceClaimTemplate.resource.k8s.io/unused ("+unused+":1)\n", stderr)
	})
	t.Run("no known kind at all is an error, not a skip", func(t *testing.T) {
		f := upstreamSample(t, "knative-serving/helloworld-configuration-route.yaml")
		_, stderr, err := runStreams(t, "tree", "-f", f)
		require.ErrorContains(t, err, "no workload of a known kind in "+f+" (found: Configuration.serving.knative.dev, Route.serving.knative.dev)")
		require.Empty(t, stderr)
	})
}
