package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/manifest"
)

func TestUseColor(t *testing.T) {
	var buf bytes.Buffer
	require.False(t, useColor(&buf), "not a terminal")
	t.Setenv("NO_COLOR", "")
	require.False(t, useColor(os.Stdout), "NO_COLOR set (even empty) disables colour")
}

func TestTreeWide(t *testing.T) {
	out, err := run(t, "tree", "-f", example, "-o", "wide")
	require.NoError(t, err)
	require.Contains(t, out, "per pod: cpu 2 cores, memory 8Gi, nvidia.com/gpu 4")
	require.Contains(t, out, "spec.replicatedJobs[1].template.spec.template")
}

// TestQuantityText: the text formats show cpu in cores and bytes in binary units, with at
// most three significant digits; other resources as written.
func TestQuantityText(t *testing.T) {
	tests := map[string]struct {
		name corev1.ResourceName
		q    string
		want string
	}{
		"cores":                            {name: corev1.ResourceCPU, q: "104500m", want: "104.5 cores"},
		"one core":                         {name: corev1.ResourceCPU, q: "1", want: "1 core"},
		"half a core":                      {name: corev1.ResourceCPU, q: "500m", want: "0.5 cores"},
		"millicores":                       {name: corev1.ResourceCPU, q: "10m", want: "0.01 cores"},
		"a fraction of a millicore rounds": {name: corev1.ResourceCPU, q: "0.0001", want: "0.001 cores"},
		"bytes":                            {name: corev1.ResourceMemory, q: "8209715200", want: "7.6Gi"},
		"exact binary":                     {name: corev1.ResourceMemory, q: "512Mi", want: "512Mi"},
		"below the next unit":              {name: corev1.ResourceMemory, q: "1000Mi", want: "1000Mi"},
		"rounds up to the next unit":       {name: corev1.ResourceMemory, q: "1073741000", want: "1Gi"},
		"decimal units":                    {name: corev1.ResourceMemory, q: "120G", want: "112Gi"},
		"three digits":                     {name: corev1.ResourceMemory, q: "55496Mi", want: "54.2Gi"},
		"tebibytes":                        {name: corev1.ResourceMemory, q: "4496Gi", want: "4.4Ti"},
		"a few bytes":                      {name: corev1.ResourceMemory, q: "100", want: "100B"},
		"ephemeral storage":                {name: corev1.ResourceEphemeralStorage, q: "3200Gi", want: "3.1Ti"},
		"hugepages":                        {name: "hugepages-2Mi", q: "2Gi", want: "2Gi"},
		"an extended resource as written":  {name: "nvidia.com/gpu", q: "8", want: "8"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, quantityText(tc.name, apiresource.MustParse(tc.q)))
		})
	}
}

// TestDocumentFormats: kubectl's printers over the versioned documents of tree, groups and
// catalog list.
func TestDocumentFormats(t *testing.T) {
	columns := filepath.Join(t.TempDir(), "columns.txt")
	require.NoError(t, os.WriteFile(columns, []byte("NAME          GPUS\n.workload.name  .totals.gpus\n"), 0o644))
	milvus := filepath.Join(t.TempDir(), "milvus.yaml")
	require.NoError(t, os.WriteFile(milvus, []byte("apiVersion: milvus.io/v1beta1\nkind: Milvus\nmetadata: {name: db, namespace: data}\nspec: {mode: standalone}\n"), 0o644))
	tests := map[string]struct {
		args []string
		want string
	}{
		"name: the workload itself":   {args: []string{"tree", "-f", example, "-o", "name"}, want: "jobset.jobset.x-k8s.io/leader-workers\n"},
		"name: the PodGroups":         {args: []string{"groups", "-f", example, "-o", "name"}, want: "podgroup.scheduling.x-k8s.io/leader-workers-all\n"},
		"jsonpath over one workload":  {args: []string{"tree", "-f", example, "-o", "jsonpath={.totals.gpus} {.roles[*].name}"}, want: "12 leader workers"},
		"jsonpath over the List":      {args: []string{"tree", "-f", example, "-f", example, "-o", "jsonpath={.items[1].totals.gpus}"}, want: "12"},
		"go-template":                 {args: []string{"tree", "-f", example, "-f", example, "-o", `go-template={{range .items}}{{.workload.name}}: {{.totals.pods}} pods{{"\n"}}{{end}}`}, want: "leader-workers: 3 pods\nleader-workers: 3 pods\n"},
		"--template alone":            {args: []string{"groups", "-f", example, "--template", `{{range .items}}{{.podGroup}} {{.minMember}}{{end}}`}, want: "leader-workers-all 3"},
		"custom-columns":              {args: []string{"tree", "-f", example, "-o", "custom-columns=NAME:.workload.name,GPUS:.totals.gpus,ROLES:.roles[*].name,LIVE:.live.pods"}, want: "NAME             GPUS   ROLES            LIVE\nleader-workers   12     leader,workers   <none>\n"},
		"custom-columns-file":         {args: []string{"tree", "-f", example, "-o", "custom-columns-file=" + columns}, want: "NAME             GPUS\nleader-workers   12\n"},
		"custom-columns of the gangs": {args: []string{"groups", "-f", example, "-o", "custom-columns=PODGROUP:podGroup,MIN:{.minMember}"}, want: "PODGROUP             MIN\nleader-workers-all   3\n"},
		"a workload without gangs":    {args: []string{"groups", "-f", milvus, "-o", "json"}, want: "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": []\n}\n"},
		"catalog jsonpath":            {args: []string{"catalog", "list", "-o", "jsonpath={.items[?(@.spec.workload.kind==\"JobSet\")].metadata.name}"}, want: "jobsets.jobset.x-k8s.io"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, tc.args...)
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
		})
	}
}

func TestDocumentFormatErrors(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown format":            {args: []string{"catalog", "list", "-o", "xml"}, want: `unknown output format "xml": use json, yaml, name, jsonpath=…, jsonpath-file=…`},
		"tree's formats listed":     {args: []string{"tree", "-f", example, "-o", "table"}, want: "use tree, wide, json, yaml, name"},
		"groups' formats listed":    {args: []string{"groups", "-f", example, "-o", "table"}, want: "use tree, wide, json, yaml, name"},
		"checked before connecting": {args: []string{"get", "-A", "-o", "xml"}, want: `unknown output format "xml": use wide, json`},
		"catalog's formats":         {args: []string{"catalog", "list", "-o", "wide"}, want: "use json, yaml, name"},
		"a bad jsonpath":            {args: []string{"tree", "-f", example, "-o", "jsonpath={.items["}, want: "unterminated array"},
		"a column without a path":   {args: []string{"tree", "-f", example, "-o", "custom-columns=NAME"}, want: `"NAME" is not HEADER:PATH`},
		"no columns":                {args: []string{"tree", "-f", example, "-o", "custom-columns="}, want: "is not HEADER:PATH"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, tc.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestOrderedYAML: -o yaml is -o json in YAML, with the fields in the same order and every
// scalar read back as it was written.
func TestOrderedYAML(t *testing.T) {
	tests := map[string][]string{
		"tree":         {"tree", "-f", example},
		"DRA GPUs":     {"tree", "-f", filepath.Join("..", "..", "examples", "jobset-dra-gpus.yaml")},
		"groups":       {"groups", "-f", example},
		"catalog list": {"catalog", "list"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			j, err := run(t, append(args, "-o", "json")...)
			require.NoError(t, err)
			y, err := run(t, append(args, "-o", "yaml")...)
			require.NoError(t, err)
			back, err := sigsyaml.YAMLToJSON([]byte(y))
			require.NoError(t, err)
			require.JSONEq(t, j, string(back))
			require.Equal(t, keysInOrder(t, []byte(j)), keysInOrder(t, []byte(y)), "the keys keep their order")
		})
	}
	t.Run("scalars that look like other types stay strings", func(t *testing.T) {
		in := `{"a":"12","b":"true","c":"null","d":"","e":"yes","f":"line\nline","g":0.5,"h":12,"i":false,"j":null,"k":[],"l":{},"m":"8Gi","n":"1e3","y":"n","o":"off","s":"1:20","u":"1_000","x":"0x1f"}`
		y, err := orderedYAML([]byte(in))
		require.NoError(t, err)
		back, err := sigsyaml.YAMLToJSON(y)
		require.NoError(t, err)
		require.JSONEq(t, in, string(back), string(y))
	})
}

// keysInOrder lists every mapping key of a YAML (or JSON) document, depth first, in order.
func keysInOrder(t *testing.T, b []byte) []string {
	t.Helper()
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal(b, &n))
	var keys []string
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				keys = append(keys, c.Value)
				continue
			}
			walk(c)
		}
	}
	walk(&n)
	return keys
}

// TestGetTableNames: get names a workload as tree does, its generateName prefix when it has
// no name yet.
func TestGetTableNames(t *testing.T) {
	reg, err := catalog.Registry()
	require.NoError(t, err)
	docs, err := manifest.ReadFile(example)
	require.NoError(t, err)
	named := docs[0].Object
	generated := named.DeepCopy()
	generated.SetName("")
	generated.SetGenerateName("leader-workers-")
	var ws []*definitions.Workload
	for _, obj := range []*unstructured.Unstructured{named, generated} {
		def, ok := reg.Lookup(obj.GroupVersionKind().GroupKind())
		require.True(t, ok)
		w, err := def.Expand(obj)
		require.NoError(t, err)
		ws = append(ws, w)
	}
	var out bytes.Buffer
	printTable(&out, ws, true, true)
	golden(t, "get-generatename.txt", out.String())
	var tree bytes.Buffer
	printTree(&tree, ws[1], textOptions{})
	require.True(t, strings.HasPrefix(tree.String(), "JobSet default/leader-workers-*  Pending"), tree.String())
}
