// Package grouper resolves each pod's controller-owner chain to its top-level workload,
// decides its gang (an existing pod-group label, a native Go grouper, a definition's gang
// hints, or none) and maintains scheduling.x-k8s.io PodGroups for it (SPEC §6).
//
// This first part holds the PodGroup maintenance: desired PodGroups from a workload model,
// created and kept current idempotently.
package grouper
