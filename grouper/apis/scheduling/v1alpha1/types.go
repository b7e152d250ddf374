package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupLabel on a pod names the PodGroup (in the pod's namespace) it belongs to.
const PodGroupLabel = "scheduling.x-k8s.io/pod-group"

// PodGroupPhase is the phase of a PodGroup.
type PodGroupPhase string

// The phases of a PodGroup, as scheduler-plugins names them.
const (
	// PodGroupPending means the group is accepted but not all its pods are created or scheduled.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupScheduling means minMember pods are being scheduled.
	PodGroupScheduling PodGroupPhase = "Scheduling"
	// PodGroupScheduled means at least minMember pods are bound.
	PodGroupScheduled PodGroupPhase = "Scheduled"
	// PodGroupRunning means at least minMember pods are running.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupFinished means the group's pods completed.
	PodGroupFinished PodGroupPhase = "Finished"
	// PodGroupFailed means at least one pod failed and the group cannot make progress.
	PodGroupFailed PodGroupPhase = "Failed"
	// PodGroupUnknown means the phase could not be determined.
	PodGroupUnknown PodGroupPhase = "Unknown"
)

// PodGroup is a set of pods that must be scheduled together: none binds until minMember of
// them can.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName={pg,pgs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="MinMember",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduled`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodGroupSpec   `json:"spec,omitempty"`
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupSpec is what the group needs to be scheduled.
type PodGroupSpec struct {
	// MinMember is the number of pods that must be schedulable together before any binds.
	// +kubebuilder:validation:Minimum=0
	MinMember int32 `json:"minMember,omitempty"`

	// MinResources are the resources the first MinMember pods need together; the scheduler
	// can reject the group early when the cluster cannot provide them.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// ScheduleTimeoutSeconds is how long pods wait at the gang gate for their group before
	// they are all rejected.
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// PodGroupStatus is what the scheduler observed of the group.
type PodGroupStatus struct {
	// Phase of the group.
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`

	// OccupiedBy names the workload the group belongs to.
	// +optional
	OccupiedBy string `json:"occupiedBy,omitempty"`

	// Scheduled, Running, Succeeded and Failed count the group's pods.
	// +optional
	Scheduled int32 `json:"scheduled,omitempty"`
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// ScheduleStartTime is when the scheduler started to schedule the group.
	// +optional
	ScheduleStartTime metav1.Time `json:"scheduleStartTime,omitempty"`
}

// PodGroupList is a list of PodGroups.
//
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}
