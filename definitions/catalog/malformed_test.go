package catalog

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/fixtures"
	"github.com/workmap/workmap/definitions/manifest"
	"github.com/workmap/workmap/definitions/paths"
)

// A malformed object — a field missing, of the wrong type, null, negative, absurdly large —
// must never crash the engine (the scheduler runs it) nor be misread silently: the workload
// is Unknown with a reason that names the field, or, where the framework has a default, it is
// read with that default. These tests break real samples of every catalog kind and check
// which of the two happens.

// change breaks a sample object.
type change func(t *testing.T, obj map[string]any)

// setTo writes v (an unstructured value: int64, not int) at every location of path, creating
// missing objects on the way. The path must reach at least one location.
func setTo(path string, v any) change {
	return func(t *testing.T, obj map[string]any) {
		t.Helper()
		n, err := paths.MustParse(path).Update(obj, func(any, bool) (any, error) { return runtime.DeepCopyJSONValue(v), nil })
		require.NoError(t, err, "set %s", path)
		require.Positive(t, n, "set %s: no location", path)
	}
}

// removeField deletes the field at the end of path; it must exist.
func removeField(path string) change {
	return func(t *testing.T, obj map[string]any) {
		t.Helper()
		steps := paths.MustParse(path).Steps()
		last := steps[len(steps)-1]
		require.Equal(t, paths.Field, last.Kind, "remove %s: the last step must be a field", path)
		parents, err := paths.FromSteps(steps[:len(steps)-1]).Get(obj)
		require.NoError(t, err)
		removed := 0
		for _, p := range parents {
			if m, ok := p.Value.(map[string]any); ok {
				if _, ok := m[last.Name]; ok {
					delete(m, last.Name)
					removed++
				}
			}
		}
		require.Positive(t, removed, "remove %s: no such field", path)
	}
}

// repeatFirst replaces the list at path with n copies of its first item.
func repeatFirst(path string, n int) change {
	return func(t *testing.T, obj map[string]any) {
		t.Helper()
		written, err := paths.MustParse(path).Update(obj, func(old any, _ bool) (any, error) {
			l, ok := old.([]any)
			require.True(t, ok && len(l) > 0, "repeat %s: not a non-empty list", path)
			out := make([]any, n)
			for i := range out {
				out[i] = runtime.DeepCopyJSONValue(l[0])
			}
			return out, nil
		})
		require.NoError(t, err)
		require.Positive(t, written, "repeat %s: no location", path)
	}
}

// malformed is one broken sample and what the engine must make of it.
type malformed struct {
	// sample is a fixture under testdata/, without .yaml; its root object is broken.
	sample  string
	changes []change
	// state is the expected state offline; reason lists what the reason must contain (for
	// Unknown: the field, or the role location and definition field, that failed).
	state  v1alpha1.State
	reason []string
	// pods, when not nil, is the expected number of pods; minMembers, when not nil, the
	// PodGroups expected (empty: none).
	pods       *int64
	minMembers []int32
	// warning, when set, must be in one of the workload's warnings (problems that do not
	// change the state, such as a gang that cannot be computed).
	warning string
}

func wantPods(n int64) *int64 { return &n }

// noGroups is an empty, non-nil minMembers: no PodGroup at all.
var noGroups = []int32{}

var malformedCases = map[string]map[string]malformed{
	"jobset": {
		"replicas is a string": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", "two")},
			state:  v1alpha1.StateUnknown,
			reason: []string{"role workers (spec.replicatedJobs[1].template.spec.template)", "spec.roles[0].replicas: expected int, got string"},
			pods:   wantPods(1), minMembers: noGroups,
		},
		"replicas is null": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", nil)},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "spec.roles[0].replicas: expected int, got null"},
		},
		"replicas is a list": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", []any{int64(2)})},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "spec.roles[0].replicas: expected int, got list"},
		},
		"replicas is an object": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", map[string]any{"count": int64(2)})},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "spec.roles[0].replicas: expected int, got map"},
		},
		"replicas has a fraction": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", 1.5)},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "spec.roles[0].replicas: expected int, got double"},
		},
		"replicas is negative": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", int64(-2))},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "replicas (-2), minReplicas (0) and podsPerReplica (1) must not be negative"},
		},
		"replicas is a billion": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].replicas", int64(1e9))},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "replicas (1000000000), minReplicas (0) and podsPerReplica (1) exceed the 1000000 pods one role may have"},
			pods: wantPods(1), minMembers: noGroups,
		},
		"replicas missing: the JobSet default of 1": {
			sample: "jobset/offline", changes: []change{removeField("spec.replicatedJobs[1].replicas")},
			state: v1alpha1.StatePending, pods: wantPods(2), minMembers: []int32{2},
		},
		"parallelism is a string": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].template.spec.parallelism", "1")},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "spec.roles[0].podsPerReplica", "is string"},
		},
		"completions is null": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[1].template.spec.completions", nil)},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "spec.roles[0].podsPerReplica", "item.template.spec.completions is null"},
		},
		"parallelism and completions missing: one pod per Job": {
			sample:  "jobset/offline",
			changes: []change{removeField("spec.replicatedJobs[*].template.spec.parallelism"), removeField("spec.replicatedJobs[*].template.spec.completions")},
			state:   v1alpha1.StatePending, pods: wantPods(3), minMembers: []int32{3},
		},
		"pod template is a string": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[0].template.spec.template", "pod")},
			state: v1alpha1.StateUnknown, reason: []string{"role leader (spec.replicatedJobs[0].template.spec.template): pod template is not an object"},
		},
		"pod template missing: that replicatedJob makes no pods": {
			sample: "jobset/offline", changes: []change{removeField("spec.replicatedJobs[0].template.spec.template")},
			state: v1alpha1.StatePending, pods: wantPods(2), minMembers: []int32{2},
		},
		"containers is an object": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs[0].template.spec.template.spec.containers", map[string]any{"name": "c"})},
			state: v1alpha1.StateUnknown, reason: []string{"role leader", "decoding pod template: spec.containers: cannot restore slice from map"},
		},
		"GPU limit is not a quantity": {
			sample: "jobset/offline", changes: []change{setTo(`spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]`, "lots")},
			state: v1alpha1.StateUnknown, reason: []string{"role leader", `decoding pod template: spec.containers[0].resources.limits["nvidia.com/gpu"]: quantities must match`},
		},
		"GPU limit is negative": {
			sample: "jobset/offline", changes: []change{setTo(`spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]`, int64(-4))},
			state: v1alpha1.StateUnknown, reason: []string{"role leader", `pod template: spec.containers[0].resources.limits["nvidia.com/gpu"] is negative (-4)`},
			pods: wantPods(2), // the workers' 2 pods; the leader's cannot be created
		},
		"replicatedJobs is a string": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs", "leader,workers")},
			state: v1alpha1.StateUnknown, reason: []string{"role replicatedJob: spec.replicatedJobs: expected list or object, found string"},
			pods: wantPods(0), minMembers: noGroups,
		},
		"replicatedJobs is null: no pods": {
			sample: "jobset/offline", changes: []change{setTo("spec.replicatedJobs", nil)},
			state: v1alpha1.StatePending, pods: wantPods(0), minMembers: noGroups,
		},
		"spec missing: no pods": {
			sample: "jobset/offline", changes: []change{removeField("spec")},
			state: v1alpha1.StateUnknown, reason: []string{"spec.status[2].when", "no such key: spec"},
			pods: wantPods(0), minMembers: noGroups,
		},
		"spec is a list": {
			sample: "jobset/offline", changes: []change{setTo("spec", []any{})},
			state: v1alpha1.StateUnknown, reason: []string{"role replicatedJob: spec: expected object, found list"},
		},
		"status.conditions is a string": {
			sample: "jobset/failed", changes: []change{setTo("status.conditions", "oops")},
			state: v1alpha1.StateUnknown, reason: []string{"spec.status[0].when", "self.?status.?conditions.orValue([]) is string"},
		},
		"10,000 replicatedJobs: read, within the limits": {
			sample: "jobset/offline", changes: []change{repeatFirst("spec.replicatedJobs", definitions.MaxObjectCollection)},
			state: v1alpha1.StatePending, pods: wantPods(definitions.MaxObjectCollection), minMembers: []int32{definitions.MaxObjectCollection},
		},
		"10,001 replicatedJobs: Unknown, not minutes of evaluation": {
			sample: "jobset/offline", changes: []change{repeatFirst("spec.replicatedJobs", definitions.MaxObjectCollection+1)},
			state: v1alpha1.StateUnknown, reason: []string{"spec.replicatedJobs has 10001 entries, more than the 10000"},
			pods: wantPods(0), minMembers: noGroups,
		},
		"100,000 status conditions: Unknown, not minutes of evaluation": {
			sample: "jobset/failed", changes: []change{repeatFirst("status.conditions", 100_000)},
			state: v1alpha1.StateUnknown, reason: []string{"status.conditions has 100000 entries"},
		},
		"600,000 pods in each of two replicatedJobs: more than a workload may have": {
			sample: "jobset/offline",
			changes: []change{
				setTo("spec.replicatedJobs[0].template.spec.parallelism", int64(600_000)),
				setTo("spec.replicatedJobs[0].template.spec.completions", int64(600_000)),
				setTo("spec.replicatedJobs[1].template.spec.parallelism", int64(300_000)), // × 2 replicas
				setTo("spec.replicatedJobs[1].template.spec.completions", int64(300_000)),
			},
			state: v1alpha1.StateUnknown, reason: []string{"role workers", "would take the workload past the 1000000 pods one workload may have"},
			pods: wantPods(600_000),
		},
	},
	"pytorchjob": {
		"Worker replicas is a string": {
			sample: "pytorchjob/offline", changes: []change{setTo("spec.pytorchReplicaSpecs.Worker.replicas", "three")},
			state: v1alpha1.StateUnknown, reason: []string{"role worker (spec.pytorchReplicaSpecs.Worker.template)", "spec.roles[0].replicas: expected int, got string"},
			pods: wantPods(1),
		},
		"Worker replicas is negative": {
			sample: "pytorchjob/offline", changes: []change{setTo("spec.pytorchReplicaSpecs.Worker.replicas", int64(-3))},
			state: v1alpha1.StateUnknown, reason: []string{"role worker", "replicas (-3)", "must not be negative"},
		},
		"Worker replicas missing: the operator's default of 1": {
			sample: "pytorchjob/offline", changes: []change{removeField("spec.pytorchReplicaSpecs.Worker.replicas")},
			state: v1alpha1.StatePending, pods: wantPods(2), minMembers: []int32{2},
		},
		"Worker template missing: no worker pods, and no gang waiting for them": {
			sample: "pytorchjob/offline", changes: []change{removeField("spec.pytorchReplicaSpecs.Worker.template")},
			state: v1alpha1.StatePending, pods: wantPods(1), minMembers: noGroups,
			warning: "gang group all: minMember 4 is more than the 1 pods of its members: no gang",
		},
		"Worker spec is a string": {
			sample: "pytorchjob/offline", changes: []change{setTo("spec.pytorchReplicaSpecs.Worker", "3 workers")},
			state: v1alpha1.StateUnknown, reason: []string{"spec.pytorchReplicaSpecs.Worker: expected object, found string"},
		},
		"minAvailable is a string: no gang, and a warning naming the field": {
			sample: "pytorchjob/offline", changes: []change{setTo("spec.runPolicy.schedulingPolicy.minAvailable", "all")},
			state: v1alpha1.StatePending, pods: wantPods(4), minMembers: noGroups,
			warning: "gang group all: spec.gang.groups[0].minMember: expected int, got string",
		},
		"status.conditions is an object": {
			sample: "pytorchjob/failed", changes: []change{setTo("status.conditions", map[string]any{"type": "Failed"})},
			state: v1alpha1.StateUnknown, reason: []string{"spec.status[0].when"},
		},
	},
	"mpijob": {
		"Worker replicas is null": {
			sample: "mpijob/offline", changes: []change{setTo("spec.mpiReplicaSpecs.Worker.replicas", nil)},
			state: v1alpha1.StateUnknown, reason: []string{"role worker (spec.mpiReplicaSpecs.Worker.template)", "expected int, got null"},
		},
		"Worker replicas is a billion": {
			sample: "mpijob/offline", changes: []change{setTo("spec.mpiReplicaSpecs.Worker.replicas", int64(1e9))},
			state: v1alpha1.StateUnknown, reason: []string{"role worker", "exceed the 1000000 pods one role may have"},
			// Not a PodGroup of a billion and one that would hold the launcher forever.
			pods: wantPods(1), minMembers: noGroups, warning: "gang group all: minMember 1000000001 is more than the 1 pods of its members",
		},
		"Launcher template is a list": {
			sample: "mpijob/offline", changes: []change{setTo("spec.mpiReplicaSpecs.Launcher.template", []any{})},
			state: v1alpha1.StateUnknown, reason: []string{"role launcher (spec.mpiReplicaSpecs.Launcher.template): pod template is not an object"},
		},
		"mpiReplicaSpecs is a list": {
			sample: "mpijob/offline", changes: []change{setTo("spec.mpiReplicaSpecs", []any{})},
			state: v1alpha1.StateUnknown, reason: []string{"spec.mpiReplicaSpecs: expected object, found list"},
		},
		"worker GPU request is negative": {
			sample: "mpijob/offline", changes: []change{setTo(`spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.requests["nvidia.com/gpu"]`, int64(-4))},
			state: v1alpha1.StateUnknown, reason: []string{"role worker", `spec.containers[0].resources.requests["nvidia.com/gpu"] is negative (-4)`},
		},
	},
	"raycluster": {
		"worker group replicas is a string": {
			sample: "raycluster/offline", changes: []change{setTo("spec.workerGroupSpecs[0].replicas", "ten")},
			state: v1alpha1.StateUnknown, reason: []string{"role cpu (spec.workerGroupSpecs[0].template)", "spec.roles[1].replicas: expected int, got string"},
		},
		"numOfHosts is negative": {
			sample: "raycluster/offline", changes: []change{setTo("spec.workerGroupSpecs[2].numOfHosts", int64(-2))},
			state: v1alpha1.StateUnknown, reason: []string{"role tpu", "podsPerReplica (-2)", "must not be negative"},
		},
		"numOfHosts is 0: the group has no pods": {
			sample: "raycluster/offline", changes: []change{setTo("spec.workerGroupSpecs[2].numOfHosts", int64(0))},
			state: v1alpha1.StatePending, pods: wantPods(6), minMembers: []int32{6},
		},
		"maxReplicas missing: replicas are not clamped": {
			sample: "raycluster/offline", changes: []change{removeField("spec.workerGroupSpecs[0].maxReplicas")},
			state: v1alpha1.StatePending, pods: wantPods(17), minMembers: []int32{15},
		},
		"head template missing: no head pod": {
			sample: "raycluster/offline", changes: []change{removeField("spec.headGroupSpec.template")},
			state: v1alpha1.StatePending, pods: wantPods(9), minMembers: []int32{7},
		},
		"workerGroupSpecs is a string": {
			sample: "raycluster/offline", changes: []change{setTo("spec.workerGroupSpecs", "noGroups")},
			state: v1alpha1.StateUnknown, reason: []string{"spec.workerGroupSpecs: expected list or object, found string"},
		},
		"a worker group is null": {
			sample: "raycluster/offline", changes: []change{setTo("spec.workerGroupSpecs[3]", nil)},
			state: v1alpha1.StatePending, pods: wantPods(10),
		},
	},
	"rayjob": {
		"worker numOfHosts is a string": {
			sample: "rayjob/offline", changes: []change{setTo("spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts", "two")},
			state: v1alpha1.StateUnknown, reason: []string{"role gpu (spec.rayClusterSpec.workerGroupSpecs[0].template)", "spec.roles[1].podsPerReplica: expected int, got string"},
		},
		"submissionMode is a number: not K8sJobMode, no submitter pod": {
			sample: "rayjob/offline", changes: []change{setTo("spec.submissionMode", int64(1))},
			state: v1alpha1.StatePending, pods: wantPods(5), minMembers: []int32{3},
		},
		"rayClusterSpec missing: only the submitter": {
			sample: "rayjob/offline", changes: []change{removeField("spec.rayClusterSpec")},
			state: v1alpha1.StatePending, pods: wantPods(1), minMembers: noGroups,
		},
		"submitter template is a string": {
			sample: "rayjob/offline", changes: []change{setTo("spec.submitterPodTemplate", "submitter")},
			state: v1alpha1.StateUnknown, reason: []string{"role submitter (spec): spec.submitterPodTemplate: expected object, found string"},
		},
	},
	"rayservice": {
		"rayClusterConfig is a string": {
			sample: "rayservice/offline", changes: []change{setTo("spec.rayClusterConfig", "cluster")},
			state: v1alpha1.StateUnknown, reason: []string{"spec.rayClusterConfig: expected object, found string"},
		},
		"worker minReplicas is a list": {
			sample: "rayservice/offline", changes: []change{setTo("spec.rayClusterConfig.workerGroupSpecs[0].minReplicas", []any{int64(1)})},
			state: v1alpha1.StateUnknown, reason: []string{"role tp (spec.rayClusterConfig.workerGroupSpecs[0].template)", "is list"},
		},
		"suspend is a string": {
			sample: "rayservice/offline", changes: []change{setTo("spec.suspend", "true")},
			state: v1alpha1.StateUnknown, reason: []string{"self.spec.?suspend.orValue(false) is string"},
		},
	},
	"leaderworkerset": {
		"size is a string": {
			sample: "leaderworkerset/offline", changes: []change{setTo("spec.leaderWorkerTemplate.size", "4")},
			state: v1alpha1.StateUnknown, reason: []string{"role worker (spec.leaderWorkerTemplate.workerTemplate)", "spec.roles[2].podsPerReplica", "is string"},
		},
		"size is 0": {
			sample: "leaderworkerset/offline", changes: []change{setTo("spec.leaderWorkerTemplate.size", int64(0))},
			state: v1alpha1.StateUnknown, reason: []string{"role worker", "podsPerReplica (-1)", "must not be negative"},
		},
		"replicas is a billion": {
			sample: "leaderworkerset/offline", changes: []change{setTo("spec.replicas", int64(1e9))},
			state: v1alpha1.StateUnknown, reason: []string{"role leader", "exceed the 1000000 pods one role may have"},
			pods: wantPods(0), minMembers: noGroups,
		},
		"replicas missing: one group": {
			sample: "leaderworkerset/offline", changes: []change{removeField("spec.replicas")},
			state: v1alpha1.StatePending, pods: wantPods(4), minMembers: []int32{4},
		},
		"workerTemplate missing: no pods": {
			sample: "leaderworkerset/offline", changes: []change{removeField("spec.leaderWorkerTemplate.workerTemplate")},
			state: v1alpha1.StatePending, pods: wantPods(0), minMembers: noGroups,
		},
		"leaderWorkerTemplate is null: no pods": {
			sample: "leaderworkerset/offline", changes: []change{setTo("spec.leaderWorkerTemplate", nil)},
			state: v1alpha1.StatePending, pods: wantPods(0), minMembers: noGroups,
		},
	},
	"podcliqueset": {
		"replicas is a string": {
			sample: "podcliqueset/offline", changes: []change{setTo("spec.replicas", "two")},
			state: v1alpha1.StateUnknown, reason: []string{"role frontend (spec.template.cliques[0].spec.podSpec)", "spec.roles[0].replicas: expected int, got string"},
		},
		"a clique's replicas is negative": {
			sample: "podcliqueset/offline", changes: []change{setTo("spec.template.cliques[0].spec.replicas", int64(-1))},
			state: v1alpha1.StateUnknown, reason: []string{"role frontend", "must not be negative"},
		},
		"a million copies of a scaling group: no million PodGroups": {
			sample: "podcliqueset/offline", changes: []change{setTo("spec.template.podCliqueScalingGroups[0].replicas", int64(1_000_000))},
			state: v1alpha1.StateUnknown, reason: []string{"role pleader", "exceed the 1000000 pods one role may have"},
			warning: "more groups than the workload has pods",
		},
		"a scaling group names a clique that does not exist": {
			sample: "podcliqueset/offline", changes: []change{setTo("spec.template.podCliqueScalingGroups[0].cliqueNames", []any{"pleader", "nosuch"})},
			state: v1alpha1.StatePending, pods: wantPods(12),
		},
		"cliques is an object": {
			sample: "podcliqueset/offline", changes: []change{setTo("spec.template.cliques", map[string]any{"frontend": int64(1)})},
			state: v1alpha1.StateUnknown, reason: []string{"spec.template.cliques.frontend: expected object, found number"},
		},
	},
	"knative-service": {
		"minScale is not a number": {
			sample: "knative-service/offline", changes: []change{setTo(`spec.template.metadata.annotations["autoscaling.knative.dev/minScale"]`, "three")},
			state: v1alpha1.StateUnknown, reason: []string{"role revision (spec.template)", "spec.roles[0].replicas"},
		},
		"minScale is an integer, not a string": {
			sample: "knative-service/offline", changes: []change{setTo(`spec.template.metadata.annotations["autoscaling.knative.dev/minScale"]`, int64(3))},
			state: v1alpha1.StateUnknown, reason: []string{"role revision (spec.template)", "spec.roles[0].replicas"},
		},
		"annotations is a list": {
			sample: "knative-service/offline", changes: []change{setTo("spec.template.metadata.annotations", []any{"a"})},
			state: v1alpha1.StateUnknown, reason: []string{"role revision (spec.template)", "spec.roles[0].replicas"},
		},
		"template missing: no revision pods": {
			sample: "knative-service/offline", changes: []change{removeField("spec.template")},
			state: v1alpha1.StatePending, pods: wantPods(0), minMembers: noGroups,
		},
	},
	"inferenceservice": {
		"predictor minReplicas is a string": {
			sample: "inferenceservice/offline", changes: []change{setTo("spec.predictor.minReplicas", "three")},
			state: v1alpha1.StateUnknown, reason: []string{"role predictor (spec.predictor)", "spec.roles[0].replicas: expected int, got string"},
		},
		"predictor is a list": {
			sample: "inferenceservice/offline", changes: []change{setTo("spec.predictor", []any{})},
			state: v1alpha1.StateUnknown, reason: []string{"role predictor"},
		},
		"predictor missing: only the explainer's pod": {
			sample: "inferenceservice/offline", changes: []change{removeField("spec.predictor")},
			state: v1alpha1.StatePending, pods: wantPods(1), minMembers: noGroups,
		},
		"framework GPU request is not a quantity": {
			sample: "inferenceservice/offline", changes: []change{setTo(`spec.predictor.tensorflow.resources.requests["nvidia.com/gpu"]`, "one")},
			state: v1alpha1.StateUnknown, reason: []string{"role predictor (spec.predictor)", `resources: nvidia.com/gpu="one"`},
		},
	},
	"nimservice": {
		"hpa minReplicas is a string": {
			sample: "nimservice/offline", changes: []change{setTo("spec.scale.hpa.minReplicas", "three")},
			state: v1alpha1.StateUnknown, reason: []string{"role nim (spec)", "spec.roles[0].replicas"},
		},
		"replicas is negative": {
			sample: "nimservice/offline", changes: []change{setTo("spec.scale.enabled", false), setTo("spec.replicas", int64(-1))},
			state: v1alpha1.StateUnknown, reason: []string{"role nim (spec)", "must not be negative"},
		},
		"GPU limit is not a quantity": {
			sample: "nimservice/offline", changes: []change{setTo(`spec.resources.limits["nvidia.com/gpu"]`, "a lot")},
			state: v1alpha1.StateUnknown, reason: []string{"role nim (spec)", `decoding pod template: spec.containers[0].resources.limits["nvidia.com/gpu"]`},
		},
		"multiNode pipeline is a string": {
			sample: "nimservice/multinode-running", changes: []change{setTo("spec.multiNode.parallelism.pipeline", "two")},
			state: v1alpha1.StateUnknown, reason: []string{"role nim (spec)", "spec.roles[0].podsPerReplica: expected int, got string"},
		},
	},
	"milvus": {
		"dataNode replicas is a string": {
			sample: "milvus/offline", changes: []change{setTo("spec.components.dataNode.replicas", "3")},
			state: v1alpha1.StateUnknown, reason: []string{"role datanode: ", "replicas", "is string"},
		},
		"dataNode replicas -1: autoscaled, counted as one pod": {
			sample: "milvus/offline", changes: []change{setTo("spec.components.dataNode.replicas", int64(-1))},
			state: v1alpha1.StatePending, pods: wantPods(13),
		},
		"queryNode groups is an object": {
			sample: "milvus/offline", changes: []change{setTo("spec.components.queryNode.groups", map[string]any{"hot": int64(2)})},
			state: v1alpha1.StateUnknown, reason: []string{"queryNode.groups"},
		},
		"components is a list": {
			sample: "milvus/offline", changes: []change{setTo("spec.components", []any{})},
			state: v1alpha1.StateUnknown, reason: []string{"spec.roles["},
		},
		"spec missing": {
			sample: "milvus/offline", changes: []change{removeField("spec")},
			state: v1alpha1.StateUnknown, reason: []string{"no such key: spec"},
		},
	},
	"dynamographdeployment": {
		"v1alpha1: nodeCount is a string": {
			sample: "dynamographdeployment/offline", changes: []change{setTo("spec.services.prefill.multinode.nodeCount", "four")},
			state: v1alpha1.StateUnknown, reason: []string{"role prefill (spec.services.prefill)", "spec.roles[1].podsPerReplica: expected int, got string"},
		},
		"v1alpha1: a GPU count is a number, not a string": {
			sample: "dynamographdeployment/offline", changes: []change{setTo("spec.services.decode.resources.limits.gpu", int64(2))},
			state: v1alpha1.StateUnknown, reason: []string{"role decode (spec.services.decode)", `spec.roles[1].resources: expected map(string, string), but the value of "nvidia.com/gpu" is int`},
		},
		"v1alpha1: services is a list": {
			sample: "dynamographdeployment/offline", changes: []change{setTo("spec.services", []any{"Frontend"})},
			state: v1alpha1.StateUnknown, reason: []string{"role 0 (spec.services[0]): spec.services[0]: expected object, found string"},
		},
		"v1beta1: component replicas is null": {
			sample: "dynamographdeployment/running", changes: []change{setTo("spec.components[1].replicas", nil)},
			state: v1alpha1.StateUnknown, reason: []string{"role decode (spec.components[1].podTemplate)", "expected int, got null"},
		},
		"v1beta1: components is an object": {
			sample: "dynamographdeployment/running", changes: []change{setTo("spec.components", map[string]any{"decode": "x"})},
			state: v1alpha1.StateUnknown, reason: []string{"spec.components.decode: expected object, found string"},
		},
	},
}

// TestMalformedObjects breaks a sample of every catalog kind in the ways malformedCases list.
func TestMalformedObjects(t *testing.T) {
	reg := catalogRegistry(t)
	raw, err := Raw()
	require.NoError(t, err)
	require.Len(t, malformedCases, len(raw), "every catalog definition has malformed cases")
	for kind, cases := range malformedCases {
		t.Run(kind, func(t *testing.T) {
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					f, err := fixtures.Load(filepath.Join("testdata", tc.sample+".yaml"))
					require.NoError(t, err)
					root := runtime.DeepCopyJSON(f.Root)
					for _, c := range tc.changes {
						c(t, root)
					}
					obj := &unstructured.Unstructured{Object: root}
					def, ok := reg.Lookup(obj.GroupVersionKind().GroupKind())
					require.True(t, ok)
					w, err := def.Expand(obj)
					require.NoError(t, err, "a malformed object still expands: the problem is in the status")
					checkWorkload(t, "offline", w)
					assert.Equal(t, tc.state, w.Status.State, "state (reason %q)", w.Status.Reason)
					for _, r := range tc.reason {
						assert.Contains(t, w.Status.Reason, r)
					}
					if tc.pods != nil {
						assert.Equal(t, *tc.pods, w.Totals.Pods, "pods")
					}
					if tc.minMembers != nil {
						mins := []int32{}
						for _, g := range w.Groups {
							mins = append(mins, g.MinMember)
						}
						assert.Equal(t, tc.minMembers, mins, "minMember of each PodGroup")
					}
					if tc.warning != "" {
						assert.Contains(t, strings.Join(w.Warnings, "\n"), tc.warning)
					}
					// Live, with no children or pods yet: the same problem, the same way.
					lw, err := def.ExpandLive(obj, &definitions.LiveData{})
					require.NoError(t, err)
					checkWorkload(t, "live", lw)
					if tc.state == v1alpha1.StateUnknown {
						assert.Equal(t, v1alpha1.StateUnknown, lw.Status.State, "live state (reason %q)", lw.Status.Reason)
					}
				})
			}
		})
	}
}

// breakages are the generic ways TestBreakEveryField breaks a field.
var breakages = map[string]func(any) (any, bool){
	"deleted":          func(any) (any, bool) { return nil, false },
	"null":             func(any) (any, bool) { return nil, true },
	"a string":         func(any) (any, bool) { return "x", true },
	"a list":           func(any) (any, bool) { return []any{int64(1)}, true },
	"an object":        func(any) (any, bool) { return map[string]any{"x": int64(1)}, true },
	"negative":         func(any) (any, bool) { return int64(-1), true },
	"a number too big": func(any) (any, bool) { return int64(1) << 40, true },
}

// Depths TestBreakEveryField goes to: in the small fixtures, every field (a JobSet's GPU limit
// is 12 deep); in the bigger upstream samples, the fields that shape the workload
// (spec.replicatedJobs[0].template.spec.parallelism is 6 deep), not every probe of every
// container.
const (
	fixtureBreakDepth  = 12
	upstreamBreakDepth = 6
)

// fieldLocations lists the locations of v down to depth, parents first, map keys sorted.
func fieldLocations(v any, at []paths.Step, depth int, out *[][]paths.Step) {
	if len(at) >= depth {
		return
	}
	switch c := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			loc := append(slices.Clone(at), paths.Step{Kind: paths.Field, Name: k})
			*out = append(*out, loc)
			fieldLocations(c[k], loc, depth, out)
		}
	case []any:
		for i, e := range c {
			loc := append(slices.Clone(at), paths.Step{Kind: paths.Index, Index: i})
			*out = append(*out, loc)
			fieldLocations(e, loc, depth, out)
		}
	}
}

// breakAt applies one breakage at loc in a copy of obj.
func breakAt(obj map[string]any, loc []paths.Step, breakage func(any) (any, bool)) map[string]any {
	out := runtime.DeepCopyJSON(obj)
	var parent any = out
	for _, s := range loc[:len(loc)-1] {
		if s.Kind == paths.Field {
			parent = parent.(map[string]any)[s.Name]
		} else {
			parent = parent.([]any)[s.Index]
		}
	}
	last := loc[len(loc)-1]
	if m, ok := parent.(map[string]any); ok {
		if v, keep := breakage(m[last.Name]); keep {
			m[last.Name] = v
		} else {
			delete(m, last.Name)
		}
	} else {
		v, _ := breakage(parent.([]any)[last.Index])
		parent.([]any)[last.Index] = v
	}
	return out
}

// breakSample is an object to break, how deep, and whether live too (the fixtures: small;
// the upstream samples are many and big, and break offline only to keep the test quick).
type breakSample struct {
	root  map[string]any
	depth int
	live  bool
}

// breakSamples are the objects TestBreakEveryField breaks: the offline fixture of every
// catalog kind, and the real upstream samples when ../shared/upstream is beside the checkout.
func breakSamples(t *testing.T) map[string]breakSample {
	t.Helper()
	out := map[string]breakSample{}
	files, err := filepath.Glob("testdata/*/offline.yaml")
	require.NoError(t, err)
	for _, f := range files {
		fx, err := fixtures.Load(f)
		require.NoError(t, err)
		out[f] = breakSample{fx.Root, fixtureBreakDepth, true}
	}
	dir := filepath.Join("..", "..", "..", "shared", "upstream", "samples")
	samples, _ := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if len(samples) == 0 {
		t.Logf("upstream samples not available at %s: breaking the fixtures only", dir)
	}
	reg := catalogRegistry(t)
	for _, f := range samples {
		docs, err := manifest.ReadFile(f)
		require.NoError(t, err)
		for _, d := range docs {
			if _, ok := reg.Lookup(d.Object.GroupVersionKind().GroupKind()); ok {
				out[d.Where()] = breakSample{d.Object.Object, upstreamBreakDepth, false}
			}
		}
	}
	return out
}

// TestBreakEveryField breaks every field of real objects of every catalog kind, one at a time,
// in each of the breakages, and expands the result offline and live: whatever the field, no
// panic, no error, a state of the vocabulary and an Unknown state that says why. (Which
// fields matter, and what the engine must then say, is TestMalformedObjects' part.)
func TestBreakEveryField(t *testing.T) {
	if testing.Short() {
		t.Skip("breaks thousands of objects")
	}
	reg := catalogRegistry(t)
	kinds := map[string]bool{}
	expansions := 0
	for where, sample := range breakSamples(t) {
		root := sample.root
		obj := &unstructured.Unstructured{Object: root}
		def, ok := reg.Lookup(obj.GroupVersionKind().GroupKind())
		require.True(t, ok, where)
		kinds[def.Source.Name] = true
		var locs [][]paths.Step
		fieldLocations(root, nil, sample.depth, &locs)
		for _, loc := range locs {
			if loc[0].Name == "apiVersion" || loc[0].Name == "kind" {
				continue // they choose the definition
			}
			for name, breakage := range breakages {
				broken := &unstructured.Unstructured{Object: breakAt(root, loc, breakage)}
				what := fmt.Sprintf("%s: %s %s", where, paths.FromSteps(loc), name)
				w, err := def.Expand(broken)
				require.NoError(t, err, what)
				checkWorkload(t, what, w)
				expansions++
				if !sample.live {
					continue
				}
				w, err = def.ExpandLive(broken, &definitions.LiveData{})
				require.NoError(t, err, what)
				checkWorkload(t, what+" (live)", w)
				expansions++
			}
		}
	}
	defs, err := compiledCatalog()
	require.NoError(t, err)
	require.Len(t, kinds, len(defs), "every catalog definition, and every one of Kubernetes' own kinds, had an object broken")
	t.Logf("%d expansions of broken objects", expansions)
}
