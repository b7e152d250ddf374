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
			for i, p := range tc.pods {
				pod := p.DeepCopy()
				pod.Name, pod.Namespace, pod.UID = fmt.Sprintf("p%d", i), "ns", types.UID(fmt.Sprintf("p%d", i))
				final := pod.Status.Phase
				if final == corev1.PodSucceeded || final == corev1.PodFailed {
					pod.Status.Phase = corev1.PodRunning
				}
				m.Join(pod, place, time.Now())
				if final != pod.Status.Phase {
					done := pod.DeepCopy()
					done.Status.Phase = final
					require.Equal(t, "ns/g", m.Remove(done), "the informer's delete of a terminated pod")
				}
			}
			counts, ok := m.Counts("ns/g")
			require.True(t, ok)
			got := grouper.GroupStatus(counts, v1alpha1.PodGroupStatus{OccupiedBy: "kept"})
			require.Equal(t, tc.wantPhase, got.Phase)
			require.Equal(t, tc.scheduled, got.Scheduled)
			require.Equal(t, "kept", got.OccupiedBy)
		})
	}
}
