package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	tests := map[string]struct {
		data      string
		wantNames []string
		wantLines []int
		wantErr   string
	}{
		"multi-document with comments and empty documents": {
			data:      "# leading comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
			wantNames: []string{"a", "b"},
			wantLines: []int{3, 10},
		},
		"a List is flattened": {
			data:      "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: first}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: second}}\n",
			wantNames: []string{"first", "second"},
			wantLines: []int{1, 1},
		},
		"malformed YAML names the file and line": {
			data:    "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: [oops\n",
			wantErr: "f.yaml:5: malformed YAML",
		},
		"a scalar document is not an object": {
			data:    "apiVersion: v1\nkind: ConfigMap\n---\njust a string\n",
			wantErr: "f.yaml:4: document is not a Kubernetes object",
		},
		"kind is required": {
			data:    "apiVersion: v1\nmetadata: {name: a}\n",
			wantErr: "f.yaml:1: document is not a Kubernetes object: apiVersion and kind are required",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			docs, err := Read([]byte(tc.data), "f.yaml")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			var lines []int
			for _, d := range docs {
				names = append(names, d.Object.GetName())
				lines = append(lines, d.Line)
			}
			require.Equal(t, tc.wantNames, names)
			require.Equal(t, tc.wantLines, lines)
		})
	}
}

// TestReadNumbersAreInt64: whole numbers decode as int64, as the API server decodes them, so
// CEL sees ints (a float64 replica count breaks integer arithmetic in definitions).
func TestReadNumbersAreInt64(t *testing.T) {
	docs, err := Read([]byte("apiVersion: v1\nkind: X\nspec: {replicas: 3, ratio: 0.5}\n"), "f.yaml")
	require.NoError(t, err)
	spec := docs[0].Object.Object["spec"].(map[string]any)
	require.IsType(t, int64(0), spec["replicas"])
	require.IsType(t, float64(0), spec["ratio"])
}

func TestLineOf(t *testing.T) {
	data := "# a comment\napiVersion: v1\nkind: Thing\n---\napiVersion: x/v1\nkind: JobSet\nspec:\n  replicatedJobs:\n  - name: a\n    replicas: 1\n  - name: b\n    replicas: two\n    template:\n      limits:\n        nvidia.com/gpu: -4\n"
	docs, err := Read([]byte(data), "job.yaml")
	require.NoError(t, err)
	require.Len(t, docs, 2)
	tests := map[string]struct {
		path string
		want int
	}{
		"a field":                            {path: "spec.replicatedJobs[1].replicas", want: 12},
		"a list item":                        {path: "spec.replicatedJobs[1]", want: 11},
		"a quoted key":                       {path: `spec.replicatedJobs[1].template.limits["nvidia.com/gpu"]`, want: 15},
		"past the document: deepest found":   {path: "spec.replicatedJobs[0].template.spec", want: 9},
		"an index past the list":             {path: "spec.replicatedJobs[5].replicas", want: 8},
		"no path: the document's first line": {path: "", want: 5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, docs[1].LineOf(tc.path))
		})
	}
}
