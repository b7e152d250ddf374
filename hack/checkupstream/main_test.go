package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/workmap/workmap/e2e/harness"
)

// TestCheckUpstream runs the check on the JobSet release's real CRD (from the control-plane
// folder), as written and with an upstream rename: the rename fails, naming the definition,
// and so does an entry of the ahead list for a field the release has.
func TestCheckUpstream(t *testing.T) {
	crd, err := os.ReadFile(filepath.Join(harness.BinDir(t), "jobset", "crds", "jobset.x-k8s.io_jobsets.yaml"))
	require.NoError(t, err)
	tests := map[string]struct {
		crd     string
		ahead   string
		wantErr string
	}{
		"the release's CRD": {crd: string(crd), ahead: "[]"},
		"a field renamed upstream": {
			crd: strings.ReplaceAll(string(crd), "replicatedJobs:", "replicatedJobGroups:"), ahead: "[]",
			wantErr: `definition "jobsets.jobset.x-k8s.io" is invalid`,
		},
		"a stale entry of the ahead list": {
			crd:     string(crd),
			ahead:   "- {definition: jobsets.jobset.x-k8s.io, version: v1alpha2, field: spec.replicatedJobs, why: stale}",
			wantErr: `field "replicatedJobs" is in the schema already`,
		},
		"a required definition without a CRD": {crd: string(crd), ahead: "[]", wantErr: "rayjobs.ray.io was not checked"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			bin := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(bin, "jobset", "crds"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(bin, "jobset", "crds", "jobsets.yaml"), []byte(tc.crd), 0o644))
			ahead := filepath.Join(bin, "ahead.yaml")
			require.NoError(t, os.WriteFile(ahead, []byte(tc.ahead), 0o644))
			required := []string{"jobsets.jobset.x-k8s.io"}
			if strings.Contains(name, "without a CRD") {
				required = append(required, "rayjobs.ray.io")
			}
			err := run(bin, ahead, required)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
