package grouper_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/workmap/workmap/grouper"
	"github.com/workmap/workmap/grouper/apis/scheduling/v1alpha1"
)

func TestGroupStatus(t *testing.T) {
	pending := corev1.Pod{}
	bound := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	running := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	succeeded := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	failed := corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	pods := func(ps ...corev1.Pod) []*corev1.Pod {
		out := make([]*corev1.Pod, len(ps))
		for i := range ps {
			out[i] = &ps[i]
		}
		return out
	}
	tests := map[string]struct {
		min       int32
		pods      []*corev1.Pod
		wantPhase v1alpha1.PodGroupPhase
		scheduled int32
	}{
		"no pods yet":                           {min: 3, wantPhase: v1alpha1.PodGroupPending},
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
			got := grouper.GroupStatus(tc.min, tc.pods, v1alpha1.PodGroupStatus{OccupiedBy: "kept"})
			require.Equal(t, tc.wantPhase, got.Phase)
			require.Equal(t, tc.scheduled, got.Scheduled)
			require.Equal(t, "kept", got.OccupiedBy)
		})
	}
}
