// Package v1alpha1 holds the workmap.dev/v1alpha1 API: the cluster-scoped WorkloadDefinition
// that describes, as data, where one workload kind keeps its pod templates, replica counts,
// child objects, status and gang-scheduling hints.
//
// +kubebuilder:object:generate=true
// +groupName=workmap.dev
package v1alpha1
