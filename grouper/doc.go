// Package grouper resolves each pod's controller-owner chain to its top-level workload, decides its
// gang (an existing pod-group label, a native Go grouper, a definition's gang hints, or none) and
// maintains scheduling.x-k8s.io PodGroups for it. See SPEC §6; built in a later issue.
package grouper
