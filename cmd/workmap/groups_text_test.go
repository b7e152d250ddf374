package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/live"
)

// liveGangsFixture are live gangs held by each backend, in each state GangStates gives; the
// first placed in the rack its annotation requires, the second waiting for a rack its
// definition requires.
func liveGangsFixture() []workloadGangs {
	jobset := func(name string, state *definitions.GangState) workloadGangs {
		group := definitions.Group{Name: "all", MinMember: 3, Scope: v1alpha1.ScopeWorkload, Members: []string{"replicatedJob"}, TimeoutSeconds: ptr.To[int32](60), State: state}
		return workloadGangs{
			workload: definitions.ObjectRef{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Namespace: "ml", Name: name},
			source:   grouper.SourceDefinition, groups: []definitions.Group{group}, podGroups: []string{name + "-all"},
			roles: [][]string{{"leader", "workers"}}, live: true, backends: []*gangBackend{backendOf(state, "v1alpha2")},
		}
	}
	pod := func(name, none string, held *heldGang) workloadGangs {
		return workloadGangs{workload: definitions.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "ml", Name: name}, none: none, held: held, live: true}
	}
	workmap := live.BackendWorkmap
	gangs := []workloadGangs{
		jobset("train", &definitions.GangState{PodGroup: "train-all", Found: true, Backend: workmap, Phase: "Running", Scheduled: 3, Domain: "cloud.example.com/rack=r2"}),
		jobset("too-big", &definitions.GangState{PodGroup: "too-big-all", Found: true, Backend: workmap, Phase: "Pending", Reason: "0/2 nodes are available: PodGroup ml/too-big-all can never fit this cluster as it is: it needs nvidia.com/gpu 124 (all 2 nodes together have 16)"}),
		jobset("starting", &definitions.GangState{PodGroup: "starting-all", Backend: workmap, Reason: "waiting for PodGroup ml/starting-all"}),
		jobset("native", &definitions.GangState{PodGroup: "native-all", Found: true, Backend: live.BackendNative, Phase: "Scheduled"}),
		jobset("native-waiting", &definitions.GangState{PodGroup: "native-waiting-all", Found: true, Backend: live.BackendNative, Phase: "Pending", Reason: "2 of 3 pods are schedulable"}),
		jobset("elsewhere", &definitions.GangState{PodGroup: "elsewhere-all", NotInEffect: "its pods ask for default-scheduler, which does not gang them"}),
		jobset("unreadable", &definitions.GangState{PodGroup: "unreadable-all", Backend: workmap, Note: "not permitted to read PodGroups"}),
		pod("operator-grouped", "<made-by-an-operator: not made by workmap>", &heldGang{backend: operatorBackend(nil), state: &definitions.GangState{PodGroup: "made-by-an-operator", Found: true, Backend: workmap, Phase: "Running", Scheduled: 2}}),
		pod("native-member", "<train-native: a native PodGroup>", &heldGang{backend: backendOf(&definitions.GangState{Backend: live.BackendNative}, "v1alpha2"), state: &definitions.GangState{PodGroup: "train-native", Backend: live.BackendNative}}),
		pod("alone", "", nil),
	}
	gangs[0].groups[0].Topology = &definitions.GroupTopology{Required: "rack", Preferred: "kubernetes.io/hostname", Source: definitions.TopologySourceAnnotation}
	gangs[1].groups[0].Topology = &definitions.GroupTopology{Required: "rack", Source: definitions.TopologySourceDefinition}
	return gangs
}

// TestLiveGroupsGolden: live, `groups` shows what holds each gang (a native PodGroup, a
// PodGroup of workmap-scheduler, an operator's), its topology and its state, and -o wide where
// its topology comes from and the domain it was placed in; its documents carry them all, and
// -o name names each PodGroup in its backend's API version.
func TestLiveGroupsGolden(t *testing.T) {
	var text bytes.Buffer
	printGroups(&text, liveGangsFixture(), false)
	golden(t, "groups-live.txt", text.String())
	text.Reset()
	printGroups(&text, liveGangsFixture(), true)
	golden(t, "groups-live-wide.txt", text.String())

	gangs, refs := gangDocuments(liveGangsFixture())
	b, err := json.Marshal(definitions.NewList(gangs))
	require.NoError(t, err)
	y, err := orderedYAML(b)
	require.NoError(t, err)
	golden(t, "groups-live.yaml", string(y))

	var names bytes.Buffer
	require.NoError(t, (&printers.NamePrinter{}).PrintObj(refList(refs), &names))
	golden(t, "groups-live-name.txt", names.String())
}

// TestGangStateText: `tree` names the backend of a gang as `groups` does (one classification).
func TestGangStateText(t *testing.T) {
	tests := map[string]struct {
		state      *definitions.GangState
		want       string
		wantStatus string
	}{
		"offline": {state: nil, want: ""},
		"workmap-scheduler's, running": {
			state:      &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Running", Scheduled: 3},
			want:       "; PodGroup train-all Running (3 scheduled)",
			wantStatus: "Running (3 scheduled)",
		},
		"workmap-scheduler's, placed in a domain": {
			state:      &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Running", Scheduled: 3, Domain: "cloud.example.com/rack=r2"},
			want:       "; PodGroup train-all Running (3 scheduled), placed in cloud.example.com/rack=r2",
			wantStatus: "Running (3 scheduled)",
		},
		"workmap-scheduler's, some placed, the rest waiting": {
			state:      &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Scheduling", Scheduled: 1, Domain: "cloud.example.com/rack=r2", Reason: "waiting for 2 pods"},
			want:       "; PodGroup train-all Scheduling (1 scheduled), placed in cloud.example.com/rack=r2: waiting for 2 pods",
			wantStatus: "Scheduling (1 scheduled): waiting for 2 pods",
		},
		"a priority other than 0 is shown": {
			state:      &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Running", Scheduled: 3, Priority: ptr.To[int32](1000)},
			want:       "; PodGroup train-all Running (3 scheduled, priority 1000)",
			wantStatus: "Running (3 scheduled, priority 1000)",
		},
		"priority 0, the default, is not": {
			state:      &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Running", Scheduled: 3, Priority: ptr.To[int32](0)},
			want:       "; PodGroup train-all Running (3 scheduled)",
			wantStatus: "Running (3 scheduled)",
		},
		"preempted, waiting for room again": {
			state: &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Pending", Priority: ptr.To[int32](10), Reason: "0/2 nodes are available",
				LastPreemption: &definitions.Preemption{By: "PodGroup ml/serve", At: "2026-12-04T10:01:00Z"}},
			want:       "; PodGroup train-all Pending (priority 10), last preempted by PodGroup ml/serve at 2026-12-04T10:01:00Z: 0/2 nodes are available",
			wantStatus: "Pending (priority 10), last preempted by PodGroup ml/serve at 2026-12-04T10:01:00Z: 0/2 nodes are available",
		},
		"workmap-scheduler's, not made yet": {
			state:      &definitions.GangState{PodGroup: "train-all", Backend: live.BackendWorkmap, Reason: "waiting"},
			want:       "; PodGroup train-all not made yet: waiting",
			wantStatus: "not made yet: waiting",
		},
		"native, waiting": {
			state:      &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendNative, Phase: "Pending", Reason: "2 of 3 pods fit"},
			want:       "; native PodGroup train-all Pending: 2 of 3 pods fit",
			wantStatus: "Pending: 2 of 3 pods fit",
		},
		"not in effect": {
			state:      &definitions.GangState{PodGroup: "train-all", NotInEffect: "its pods ask for default-scheduler, which does not gang them"},
			want:       "; not in effect: its pods ask for default-scheduler, which does not gang them",
			wantStatus: "not in effect: its pods ask for default-scheduler, which does not gang them",
		},
		"unreadable": {
			state:      &definitions.GangState{PodGroup: "train-all", Backend: live.BackendWorkmap, Note: "PodGroups are not installed"},
			want:       "; PodGroup train-all: PodGroups are not installed",
			wantStatus: "unknown: PodGroups are not installed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, gangStateText(tc.state)); diff != "" {
				t.Errorf("gangStateText (-want +got):\n%s", diff)
			}
			if tc.state != nil {
				if diff := cmp.Diff(tc.wantStatus, gangStatus(tc.state)); diff != "" {
					t.Errorf("gangStatus (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestBackendOf: the backend that holds a gang, from its state.
func TestBackendOf(t *testing.T) {
	tests := map[string]struct {
		state    *definitions.GangState
		want     *gangBackend
		wantText string
		// wantKind is how a sentence names the PodGroup ("": not checked).
		wantKind string
	}{
		"offline":       {state: nil, wantText: "-"},
		"not in effect": {state: &definitions.GangState{NotInEffect: "its pods ask for default-scheduler, which does not gang them"}, wantText: "-"},
		"workmap-scheduler's PodGroup": {
			state:    &definitions.GangState{Backend: live.BackendWorkmap},
			want:     &gangBackend{Name: "workmap-scheduler", APIVersion: "scheduling.x-k8s.io/v1alpha1"},
			wantText: "workmap-scheduler (scheduling.x-k8s.io/v1alpha1)",
		},
		"native PodGroup": {
			state:    &definitions.GangState{Backend: live.BackendNative},
			want:     &gangBackend{Name: "native", APIVersion: "scheduling.k8s.io/v1alpha2"},
			wantText: "native (scheduling.k8s.io/v1alpha2)",
		},
		"a PodGroup of the gang's name another controller made, which says who": {
			state:    &definitions.GangState{Backend: live.BackendWorkmap, MadeBy: "kuberay-operator"},
			want:     &gangBackend{Name: "operator", APIVersion: "scheduling.x-k8s.io/v1alpha1", MadeBy: "kuberay-operator"},
			wantText: "operator kuberay-operator (scheduling.x-k8s.io/v1alpha1)", wantKind: "kuberay-operator's PodGroup",
		},
		"a PodGroup of the gang's name another controller made, which does not say who": {
			state:    &definitions.GangState{Backend: live.BackendWorkmap, MadeBy: "another controller"},
			want:     &gangBackend{Name: "operator", APIVersion: "scheduling.x-k8s.io/v1alpha1"},
			wantText: "operator (scheduling.x-k8s.io/v1alpha1)", wantKind: "operator's PodGroup",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := backendOf(tc.state, "v1alpha2")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("backendOf (-want +got):\n%s", diff)
			}
			require.Equal(t, tc.wantText, got.String())
			if tc.wantKind != "" {
				require.Equal(t, tc.wantKind, got.podGroupKind())
			}
		})
	}
}

// TestGangTopologyText: a gang's tree line says its topology and where it comes from, only for
// a constrained gang; `groups` says the topology alone.
func TestGangTopologyText(t *testing.T) {
	tests := map[string]struct {
		topology *definitions.GroupTopology
		want     string // after "minMember 3"
		wantCell string
	}{
		"unconstrained": {want: "", wantCell: ""},
		"required and preferred, from the workload's annotation": {
			topology: &definitions.GroupTopology{Required: "rack", Preferred: "hostname", Source: definitions.TopologySourceAnnotation},
			want:     "; topology: rack required, hostname preferred (from the workload's annotation)",
			wantCell: "rack required, hostname preferred",
		},
		"preferred alone, from the definition": {
			topology: &definitions.GroupTopology{Preferred: "topology.kubernetes.io/zone", Source: definitions.TopologySourceDefinition},
			want:     "; topology: topology.kubernetes.io/zone preferred (from the definition)",
			wantCell: "topology.kubernetes.io/zone preferred",
		},
		"a nested level": {
			topology: &definitions.GroupTopology{Required: "block", Nested: &definitions.NestedGroupTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "rack"}, Source: definitions.TopologySourceDefinition},
			want:     "; topology: block required, each instance replica in one rack (from the definition)",
			wantCell: "block required, each instance replica in one rack",
		},
		"two nested levels": {
			topology: &definitions.GroupTopology{Required: "zone", Source: definitions.TopologySourceDefinition, Nested: &definitions.NestedGroupTopology{
				Scope: v1alpha1.ScopeInstance, Required: "block", Nested: &definitions.NestedGroupTopology{Scope: v1alpha1.ScopeInstanceReplica, Required: "rack"},
			}},
			want:     "; topology: zone required, each instance in one block, each instance replica in one rack (from the definition)",
			wantCell: "zone required, each instance in one block, each instance replica in one rack",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, gangTopologyText(tc.topology))
			require.Equal(t, tc.wantCell, topologyText(tc.topology))
			g := definitions.Group{Name: "all", MinMember: 3, Scope: v1alpha1.ScopeWorkload, Topology: tc.topology,
				State: &definitions.GangState{PodGroup: "train-all", Found: true, Backend: live.BackendWorkmap, Phase: "Running", Scheduled: 3, Domain: "cloud.example.com/rack=r2"}}
			require.Equal(t, "Gang all: minMember 3"+tc.want+"; PodGroup train-all Running (3 scheduled), placed in cloud.example.com/rack=r2", gangLine(&definitions.Workload{}, g))
		})
	}
}
