package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuthoringGuideExample keeps docs/writing-definitions.md true: its object, definition and
// fixture lint, pass and render as the guide says.
func TestAuthoringGuideExample(t *testing.T) {
	guide, err := os.ReadFile("../../docs/writing-definitions.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(guide), -1)
	require.Len(t, blocks, 3, "the guide's yaml blocks: object, definition, fixture")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	object, def := write("object.yaml", blocks[0][1]), write("trainer.yaml", blocks[1][1])
	fixtureDir := filepath.Dir(write("testdata/trainer/running.yaml", blocks[2][1]))

	out, err := run(t, "lint", def)
	require.NoError(t, err, out)
	out, err = run(t, "test", "--definitions", def, fixtureDir)
	require.NoError(t, err, out)
	out, err = run(t, "tree", "-f", object, "--definitions", def)
	require.NoError(t, err)
	require.Contains(t, out, "Completed")
	require.Contains(t, out, "Total: 4 pods, 32 GPUs")
}
