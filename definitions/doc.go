// Package definitions is workmap's definition engine. It loads WorkloadDefinitions (YAML
// files, the embedded catalog, the cluster), validates and compiles them once (paths parsed,
// CEL checked and planned, optionally against the target CRD's schema), and expands a workload
// object into the workload model: roles, instances, expected pods, per-pod resources, totals,
// one status with a reason, and gangs with a group-level minMember. It also writes pod-template
// changes back into every instance of a workload.
package definitions
