// Package grouper resolves each pod's controller-owner chain to its top-level workload,
// decides its gang (an existing pod-group label, a native Go grouper, a definition's gang
// hints, or none) and maintains scheduling.x-k8s.io PodGroups for it.
//
// Inside workmap-scheduler it runs on the scheduler's own pod informer, clientset and event
// recorder. Decisions are made in memory (Hub) and recorded in the one membership view of the
// gangs (Membership), which the scheduler plugin reads; the API writes they imply — a PodGroup
// per gang, its status, a label where the API server did not copy it from the binding — are
// made off the scheduling path by the Writer, and only while the process leads (Leader).
package grouper
