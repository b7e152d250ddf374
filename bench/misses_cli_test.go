package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCLIMissBreaksDownTheTime: the miss of the live tree's target says where the time went,
// from what the run measured, and names the largest part as what to fix.
func TestCLIMissBreaksDownTheTime(t *testing.T) {
	micro := []MicroResult{{Name: "BenchmarkExpandLive1000", NsPerOp: 2e6}}
	tests := map[string]struct {
		cli  CLIResult
		want []string
	}{
		"the list is the largest part": {
			cli: CLIResult{Pods: 1000, Ms: 320, RunsMs: []float64{310, 320, 330}, VersionMs: 60, OfflineMs: 90, ListPodsMs: 120, ResolveMs: 190},
			want: []string{
				"**cli_tree_ms_1000_pods = 320 ≥ 300.**",
				"process start 60 ms (`workmap version`); the offline `tree -f` of a 3-pod JobSet 90 ms, so 30 ms for its definition",
				"one list of the 1,000 pods as protobuf (the API server's answer and its decoding) takes 120 ms and the whole resolution 190 ms: 70 ms for the other lists",
				"(which alone, `BenchmarkExpandLive1000`, is 2 ms)",
				"The runs ranged from 310 to 330 ms",
				"What would fix it: the pods' list is the largest part",
			},
		},
		"the conversion is the largest part": {
			cli:  CLIResult{Pods: 1000, Ms: 320, VersionMs: 60, OfflineMs: 90, ListPodsMs: 50, ResolveMs: 190},
			want: []string{"What would fix it: turning the pods into unstructured objects is the largest part"},
		},
		"an older raw.json without the in-process parts": {
			cli:  CLIResult{Pods: 1000, Ms: 320, VersionMs: 60, OfflineMs: 250},
			want: []string{"so 190 ms for its definition", "What would fix it: compiling the definition is the largest part"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := &Report{CLI: &tc.cli, Micro: micro}
			miss := r.cliTimeMiss()
			for _, want := range tc.want {
				assert.Contains(t, miss, want)
			}
		})
	}
}
