package grouper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

// TestGroupStatus: a PodGroup's status from the membership view. Terminated pods leave the
// scheduler's pod cache (it holds no Succeeded or Failed pods): the view counts them from the
// final state its delete event carries.
func TestGroupStatus(t *testing.T) {
	pending := corev1.Pod{}
	bound := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	running := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	succeeded := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	failed := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	pods := func(ps ...corev1.Pod) []corev1.Pod { return ps }
	tests := map[string]struct {
		min       int32
		pods      []corev1.Pod
		wantPhase v1alpha1.PodGroupPhase
		scheduled int32
	}{
		"all pending":                           {min: 3, pods: pods(pending, pending, pending), wantPhase: v1alpha1.PodGroupPending},
		"some bound (an operator's gang, say)":  {min: 3, pods: pods(bound, pending, pending), wantPhase: v1alpha1.PodGroupScheduling, scheduled: 1},
		"minMember bound":                       {min: 3, pods: pods(bound, bound, bound), wantPhase: v1alpha1.PodGroupScheduled, scheduled: 3},
		"minMember running":                     {min: 2, pods: pods(running, running, pending), wantPhase: v1alpha1.PodGroupRunning, scheduled: 2},
		"running and done count together":       {min: 3, pods: pods(running, succeeded, succeeded), wantPhase: v1alpha1.PodGroupRunning, scheduled: 3},
		"minMember succeeded":                   {min: 2, pods: pods(succeeded, succeeded), wantPhase: v1alpha1.PodGroupFinished, scheduled: 2},
		"a failure leaves too few":              {min: 3, pods: pods(failed, running, running), wantPhase: v1alpha1.PodGroupFailed, scheduled: 3},
		"a failure while a replacement pends":   {min: 3, pods: pods(failed, running, running, pending), wantPhase: v1alpha1.PodGroupScheduled, scheduled: 3},
		"a failure that still leaves minMember": {min: 2, pods: pods(failed, running, running), wantPhase: v1alpha1.PodGroupRunning, scheduled: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := grouper.NewMembership(nil)
			desired := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}, Spec: v1alpha1.PodGroupSpec{MinMember: tc.min}}
			place := grouper.Placement{Key: "ns/g", Namespace: "ns", Name: "g", Desired: desired}
			m.SetPodGroup("ns/g", desired) // the PodGroup exists: the group outlives its pods
			ended := map[types.UID]corev1.PodPhase{}
			for i, p := range tc.pods {
				pod := p.DeepCopy()
				pod.Name, pod.Namespace, pod.UID = fmt.Sprintf("p%d", i), "ns", types.UID(fmt.Sprintf("p%d", i))
				final := pod.Status.Phase
				if final == corev1.PodSucceeded || final == corev1.PodFailed {
					pod.Status.Phase = corev1.PodRunning
				}
				m.Join(pod, place, time.Now())
				if final != pod.Status.Phase {
					// The scheduler's informer drops a pod that terminated, reporting it as it
					// was before; how it ended is read from the API server.
					require.Equal(t, "ns/g", m.Remove(pod), "the informer's delete of a terminated pod")
					ended[pod.UID] = final
				}
			}
			counts, ok := m.Counts("ns/g")
			require.True(t, ok)
			require.EqualValues(t, len(ended), counts.Vanished, "pods gone bound and not deleted: how they ended is not known yet")
			m.Settle("ns/g", ended)
			counts, ok = m.Counts("ns/g")
			require.True(t, ok)
			require.Zero(t, counts.Vanished)
			got := grouper.GroupStatus(counts, v1alpha1.PodGroupStatus{OccupiedBy: "kept"})
			require.Equal(t, tc.wantPhase, got.Phase)
			require.Equal(t, tc.scheduled, got.Scheduled)
			require.Equal(t, "kept", got.OccupiedBy)
		})
	}
}

// TestGroupStatusFinalPhaseStays: a gang that finished (or failed) stays so when its pods are
// deleted after its workload finished; pods of a restarted workload count afresh.
func TestGroupStatusFinalPhaseStays(t *testing.T) {
	finished := v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupFinished, Scheduled: 4, Succeeded: 4, OccupiedBy: "kept"}
	failed := v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupFailed, Scheduled: 4, Failed: 1, Running: 0, Succeeded: 2}
	tests := map[string]struct {
		counts   grouper.Counts
		previous v1alpha1.PodGroupStatus
		want     v1alpha1.PodGroupStatus
	}{
		"finished, its pods deleted": {counts: grouper.Counts{MinMember: 4}, previous: finished, want: finished},
		"failed, its pods deleted":   {counts: grouper.Counts{MinMember: 4}, previous: failed, want: failed},
		"finished, its pods still there, terminated": {
			counts: grouper.Counts{MinMember: 4, Scheduled: 4, Succeeded: 4}, previous: finished, want: finished,
		},
		"finished, then the workload restarted: new pods wait": {
			counts: grouper.Counts{MinMember: 4, Waiting: 4}, previous: finished,
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, OccupiedBy: "kept"},
		},
		"never finished, no pods: pending": {
			counts: grouper.Counts{MinMember: 4}, previous: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupRunning, Running: 4, Scheduled: 4},
			want: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, grouper.GroupStatus(tc.counts, tc.previous))
		})
	}
}
