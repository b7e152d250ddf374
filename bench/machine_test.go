package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGitCommitLeavesTheBenchOutputsOut(t *testing.T) {
	tests := map[string]struct {
		change  []string // files changed after the commit
		outputs []string
		dirty   bool
	}{
		"a clean checkout": {},
		"the results of a run before, on the same commit": {change: []string{"bench/results.json", "docs/benchmarks.md"}, outputs: []string{"bench/results.json", "docs/benchmarks.md"}},
		"a changed source file":                           {change: []string{"plugin/gang.go"}, outputs: []string{"bench/results.json"}, dirty: true},
		"a changed source file beside the results":        {change: []string{"bench/results.json", "plugin/gang.go"}, outputs: []string{"bench/results.json"}, dirty: true},
		"results, when no outputs are named":              {change: []string{"bench/results.json"}, dirty: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, string(out))
			}
			files := []string{"bench/results.json", "docs/benchmarks.md", "plugin/gang.go"}
			for _, f := range files {
				require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("one\n"), 0o644))
			}
			git("init", "-q")
			git("add", ".")
			git("commit", "-q", "-m", "first")
			for _, f := range tc.change {
				require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("two\n"), 0o644))
			}
			got := GitCommit(root, tc.outputs...)
			assert.NotEqual(t, "unknown", got)
			assert.Equal(t, tc.dirty, strings.HasSuffix(got, "+dirty"), got)
		})
	}
}
