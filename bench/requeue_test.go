package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreeToBound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	freed := map[string]time.Time{"n0": at(0), "n1": at(1000), "n2": at(2000)}
	tests := map[string]struct {
		gangs   map[string][]Bind
		want    []time.Duration
		wantErr string
	}{
		"each gang on the node freed for it: its last pod bound counts": {
			gangs: map[string][]Bind{
				"gang-b": {{Node: "n1", At: at(1120)}, {Node: "n1", At: at(1150)}},
				"gang-a": {{Node: "n0", At: at(80)}, {Node: "n0", At: at(60)}},
			},
			want: []time.Duration{80 * time.Millisecond, 150 * time.Millisecond},
		},
		"a gang on two nodes: from the later of them freed": {
			gangs: map[string][]Bind{"gang-a": {{Node: "n0", At: at(2100)}, {Node: "n2", At: at(2200)}}},
			want:  []time.Duration{200 * time.Millisecond},
		},
		"a gang on a node never freed": {
			gangs:   map[string][]Bind{"gang-a": {{Node: "elsewhere", At: at(10)}}},
			wantErr: "gang gang-a was bound on elsewhere, which was never freed",
		},
		"a gang bound before its room was freed": {
			gangs:   map[string][]Bind{"gang-a": {{Node: "n2", At: at(1500)}}},
			wantErr: "before its room was freed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := FreeToBound(freed, tc.gangs)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRequeueResult(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(i)*10*time.Millisecond)
	}
	assert.Equal(t, 200*time.Millisecond, percentile(ds, 99), "p99 of 20 gangs is the slowest")
	assert.Equal(t, 100*time.Millisecond, percentile(ds, 50))

	r := &Report{Requeue: &RequeueResult{RequeueSetup: RequeueSetup{Gangs: 20, GPUsPerNode: 8, SpacingSeconds: 1}, FreeToBoundMs: []float64{90, 120.5}, P50Ms: 90, P99Ms: 120.5}}
	res := r.Results()
	require.NotNil(t, res.RequeueAfterFreeP99Ms)
	assert.InDelta(t, 120.5, *res.RequeueAfterFreeP99Ms, 1e-9)
	md := r.Markdown("x.svg")
	assert.Contains(t, md, "| `requeue_after_free_p99_ms` | 121 | ≤ 2000 | pass |")
	assert.Contains(t, md, "p50 **90 ms**, p99 **120.5 ms**")
	assert.Nil(t, (&Report{}).Results().RequeueAfterFreeP99Ms, "not measured")

	// Running other steps keeps the requeue step's numbers.
	later := &Report{}
	later.CarryOver(r, []string{"micro"})
	assert.Equal(t, r.Requeue, later.Requeue)
}
