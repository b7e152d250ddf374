// Package webhook is workmap-webhook's admission logic: on pod CREATE it resolves the new pod's
// owner chain and decides its gang with the same hub as workmap-scheduler's grouper, then
// either points the pod at a native scheduling.k8s.io PodGroup it makes sure exists (for pods
// of Kubernetes' own scheduler with its GangScheduling plugin), or labels the pod with its
// scheduling.x-k8s.io pod group (for pods of workmap-scheduler, which then writes no label).
// It never refuses a pod: what it cannot decide in time is left as it came, and a pod of a
// gang that was created without its native PodGroup (the webhook down, unreachable or failing)
// gets a Warning event saying so (UngroupedReporter). It also validates WorkloadDefinitions
// (DefinitionValidator): one that does not compile is refused at `kubectl apply`.
package webhook
