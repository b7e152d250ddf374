package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestRenderSchedulerConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		qps      float32
		burst    int32
		wantConn map[string]any
		wantErr  string
	}{{
		name: "profiles kept, connection and leader election replaced",
		in: `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /elsewhere, contentType: application/vnd.kubernetes.protobuf}
leaderElection: {leaderElect: true, resourceName: other}
profiles:
- schedulerName: other-scheduler
`,
		qps: 50, burst: 100,
		wantConn: map[string]any{"kubeconfig": "/k", "qps": float64(50), "burst": float64(100), "contentType": "application/vnd.kubernetes.protobuf"},
	}, {
		name:     "empty file, binary's default limits",
		in:       "",
		wantConn: map[string]any{"kubeconfig": "/k"},
	}, {
		name:    "not a scheduler configuration",
		in:      "apiVersion: v1\nkind: ConfigMap\n",
		wantErr: "kind ConfigMap",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RenderSchedulerConfig([]byte(tc.in), "/k", tc.qps, tc.burst)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var cfg map[string]any
			require.NoError(t, yaml.Unmarshal(out, &cfg))
			assert.Equal(t, "KubeSchedulerConfiguration", cfg["kind"])
			assert.Equal(t, "kubescheduler.config.k8s.io/v1", cfg["apiVersion"])
			assert.Equal(t, tc.wantConn, cfg["clientConnection"])
			assert.Equal(t, false, cfg["leaderElection"].(map[string]any)["leaderElect"])
			if tc.in != "" {
				assert.Equal(t, []any{map[string]any{"schedulerName": "other-scheduler"}}, cfg["profiles"])
			}
		})
	}
}
