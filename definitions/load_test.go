package definitions_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
)

func TestLoadFiles(t *testing.T) {
	otherKind := strings.ReplaceAll(strings.ReplaceAll(jobSetDef, "JobSet", "Other"), "jobsets.jobset", "others.jobset")
	broken := strings.Replace(otherKind, `replicas: "item.?replicas.orValue(1)"`, `replicas: "itme.replicas"`, 1)
	tests := map[string]struct {
		files     map[string]string // name → content, in a fresh directory
		args      []string          // relative to the directory; default: the directory
		wantKinds []string
		wantErr   []string
	}{
		"a directory: yaml, yml and json, not other files": {
			files: map[string]string{
				"a.yaml":    jobSetDef,
				"b.yml":     otherKind,
				"c.json":    `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}`,
				"notes.txt": "not: [a definition",
			},
			wantKinds: []string{"JobSet", "Other"},
		},
		"single files": {
			files:     map[string]string{"a.yaml": jobSetDef, "b.yaml": otherKind},
			args:      []string{"b.yaml", "a.yaml"},
			wantKinds: []string{"JobSet", "Other"}, // sorted by file name
		},
		"two files for one kind": {
			files:   map[string]string{"a.yaml": jobSetDef, "b.yaml": jobSetDef},
			wantErr: []string{"both describe JobSet.jobset.x-k8s.io"},
		},
		"an invalid definition names its file": {
			files:   map[string]string{"a.yaml": jobSetDef, "broken.yaml": broken},
			wantErr: []string{"broken.yaml: ", "spec.roles[0].replicas", "itme"},
		},
		"malformed YAML names its file and line": {
			files:   map[string]string{"bad.yaml": "apiVersion: workmap.dev/v1alpha1\nkind: WorkloadDefinition\nmetadata: [\n"},
			wantErr: []string{"bad.yaml:", "malformed YAML"},
		},
		"missing file": {
			args:    []string{"nope.yaml"},
			wantErr: []string{"nope.yaml"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, content := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600))
			}
			args := []string{dir}
			if tc.args != nil {
				args = nil
				for _, a := range tc.args {
					args = append(args, filepath.Join(dir, a))
				}
			}
			defs, err := definitions.LoadFiles(args...)
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, s := range tc.wantErr {
					require.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			var kinds []string
			for _, d := range defs {
				kinds = append(kinds, d.GroupKind.Kind)
			}
			require.Equal(t, tc.wantKinds, kinds)
		})
	}
}
