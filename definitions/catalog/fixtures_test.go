package catalog

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/definitions/fixtures"
)

// TestFixtures runs every fixture under testdata/<definition>/ against the catalog and the
// definitions of Kubernetes' own kinds (testdata/job, testdata/pod): expected
// state, reason, pods, GPUs, roles and gangs, and no fixture matched by two states' rules.
func TestFixtures(t *testing.T) {
	reg := catalogRegistry(t)
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
