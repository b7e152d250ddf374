package needs

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

type recorder struct{ skipped, failed string }

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestSkip(t *testing.T) {
	tests := map[string]struct {
		require              string
		wantSkipped, wantErr string
	}{
		"outside CI: skipped": {wantSkipped: "no helm at /x"},
		"in CI: failed":       {require: "1", wantErr: "no helm at /x (required: WORKMAP_REQUIRE_ALL is set)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv(EnvRequireAll, tc.require)
			var r recorder
			Skip(&r, "no helm at %s", "/x")
			require.Equal(t, tc.wantSkipped, r.skipped)
			require.Equal(t, tc.wantErr, r.failed)
		})
	}
}
