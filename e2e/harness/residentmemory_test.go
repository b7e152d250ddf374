package harness

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseResidentMemory(t *testing.T) {
	tests := map[string]struct {
		status  string
		want    ResidentMemory
		wantErr string
	}{
		"both lines among the others": {
			status: "Name:\tworkmap-sched\nVmRSS:\t  204800 kB\nRssAnon:\t  180224 kB\nRssFile:\t   24576 kB\nRssShmem:\t       0 kB\n",
			want:   ResidentMemory{Anon: 180224 * 1024, File: 24576 * 1024},
		},
		"a kernel without the lines": {
			status:  "Name:\tx\nVmRSS:\t  204800 kB\n",
			wantErr: "no RssAnon and RssFile",
		},
		"a number that is not one": {
			status:  "RssAnon:\t 12x kB\nRssFile:\t 1 kB\n",
			wantErr: `RssAnon: "12x"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseResidentMemory([]byte(tc.status))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestResidentMemoryOfThisProcess(t *testing.T) {
	m, err := residentMemory(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, m.Anon)
	require.Positive(t, m.File, "the test binary's code is resident")
}
