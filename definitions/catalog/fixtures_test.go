package catalog

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/fixtures"
)

// TestFixtures runs every fixture under testdata/<definition>/ against the catalog: expected
// state, reason, pods, GPUs, roles and gangs, and no fixture matched by two states' rules.
func TestFixtures(t *testing.T) {
	defs, err := Definitions()
	require.NoError(t, err)
	reg := definitions.NewRegistry()
	reg.Add(defs...)
	all, err := fixtures.LoadDir("testdata")
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for _, f := range all {
		t.Run(strings.TrimSuffix(filepath.ToSlash(f.Source), ".yaml"), func(t *testing.T) {
			res, err := fixtures.Run(reg, f)
			require.NoError(t, err)
			for _, failure := range res.Failures {
				t.Error(failure)
			}
		})
	}
}
