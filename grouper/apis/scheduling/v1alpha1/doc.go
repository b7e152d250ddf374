// Package v1alpha1 is the scheduling.x-k8s.io/v1alpha1 PodGroup API, defined here field- and
// JSON-compatible with kubernetes-sigs/scheduler-plugins' (which cannot be fetched from the
// module proxy), so PodGroups made by workmap, by operators and by other gang schedulers are
// interchangeable.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.x-k8s.io
package v1alpha1
