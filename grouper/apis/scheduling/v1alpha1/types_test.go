package v1alpha1_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// A PodGroup as scheduler-plugins' coscheduling users write and read it: every field must
// survive a round trip through our types unchanged.
const schedulerPluginsPodGroup = `
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: nginx
  namespace: default
spec:
  minMember: 3
  minResources:
    cpu: "3"
    nvidia.com/gpu: "12"
  scheduleTimeoutSeconds: 10
status:
  phase: Running
  occupiedBy: default/nginx
  scheduled: 3
  running: 3
  succeeded: 1
  failed: 1
  scheduleStartTime: "2026-11-29T10:00:00Z"
`

func TestPodGroupWireCompatible(t *testing.T) {
	var want map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(schedulerPluginsPodGroup), &want))

	var pg v1alpha1.PodGroup
	require.NoError(t, yaml.UnmarshalStrict([]byte(schedulerPluginsPodGroup), &pg))
	require.EqualValues(t, 3, pg.Spec.MinMember)
	require.Equal(t, v1alpha1.PodGroupRunning, pg.Status.Phase)

	raw, err := json.Marshal(&pg)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	delete(got["metadata"].(map[string]any), "creationTimestamp")
	require.Equal(t, want, got)
}
