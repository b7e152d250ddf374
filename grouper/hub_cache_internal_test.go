package grouper

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var trainerGK = schema.GroupKind{Group: "example.com", Kind: "Trainer"}

// countingGrouper groups every Trainer into one gang of two from its metadata and counts
// the workloads it was asked to group, by UID.
type countingGrouper struct{ calls map[types.UID]int }

func (g *countingGrouper) GroupsFromMetadata() {}

func (g *countingGrouper) Gangs(owner Owner, _ *unstructured.Unstructured) (Gangs, error) {
	g.calls[owner.UID]++
	return oneGang("all", 2, nil), nil
}

// trainers resolves every pod to the Trainer its owner reference names, at generation 1.
type trainers struct{}

func (trainers) TopOwner(_ context.Context, obj metav1.Object, _, _ string) (Owner, error) {
	ref := obj.GetOwnerReferences()[0]
	return Owner{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: obj.GetNamespace(), Name: ref.Name, UID: ref.UID, Generation: 1}, nil
}

func trainerPod(uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: string(uid) + "-0", Namespace: "ml", UID: uid + "-pod",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Trainer", Name: string(uid), UID: uid, Controller: ptr.To(true)}},
	}}
}

// TestHubCacheEvictsLeastRecentlyGrouped: with room for two workloads, grouping a third
// forgets the one whose pods were grouped least recently, not all of them; a workload that
// is forgotten (or deleted) is grouped again on its next pod.
func TestHubCacheEvictsLeastRecentlyGrouped(t *testing.T) {
	tests := map[string]struct {
		grouped   []types.UID // workloads whose pods are grouped, in order
		forget    types.UID   // a workload deleted after that, if any
		wantAgain []types.UID // workloads grouped again when their next pod comes
		wantKept  []types.UID // workloads their next pod finds cached
	}{
		"within the bound, all are kept": {
			grouped:  []types.UID{"a", "b"},
			wantKept: []types.UID{"a", "b"},
		},
		"a third workload evicts the first": {
			grouped:   []types.UID{"a", "b", "c"},
			wantAgain: []types.UID{"a"},
			wantKept:  []types.UID{"b", "c"},
		},
		"a workload grouped again is kept over an older one": {
			grouped:   []types.UID{"a", "b", "a", "c"},
			wantAgain: []types.UID{"b"},
			wantKept:  []types.UID{"a", "c"},
		},
		"a deleted workload is forgotten": {
			grouped:   []types.UID{"a", "b"},
			forget:    "a",
			wantAgain: []types.UID{"a"},
			wantKept:  []types.UID{"b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := &countingGrouper{calls: map[types.UID]int{}}
			h := &Hub{Owners: trainers{}, Natives: map[schema.GroupKind]KindGrouper{trainerGK: g}, cacheSize: 2}
			decide := func(uid types.UID) {
				d, err := h.Decide(t.Context(), trainerPod(uid))
				require.NoError(t, err)
				require.Equal(t, string(uid)+"-all", d.PodGroup)
			}
			for _, uid := range tc.grouped {
				decide(uid)
			}
			if tc.forget != "" {
				h.Forget(tc.forget)
			}
			before := map[types.UID]int{}
			for uid, n := range g.calls {
				before[uid] = n
			}
			// The kept ones first: asking for an evicted one would evict again.
			for _, uid := range tc.wantKept {
				decide(uid)
				require.Equal(t, before[uid], g.calls[uid], "workload %s found cached", uid)
			}
			for _, uid := range tc.wantAgain {
				decide(uid)
				require.Equal(t, before[uid]+1, g.calls[uid], "workload %s grouped again", uid)
			}
		})
	}
}
