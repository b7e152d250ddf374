// Package webview is the server behind `workmap serve`: a read-only web view of every AI
// workload in a cluster and their Prometheus metrics.
//
// It watches, with one shared informer each, only the resources the definitions in effect
// name: the root kind of every definition the cluster serves, their child kinds, pods, and
// scheduling.x-k8s.io PodGroups when served; and nodes, cluster-wide, cached stripped to their
// labels, allocatable resources and readiness (a heartbeat wakes no page). It resolves
// workloads from those caches with the same engine as `workmap tree` (live),
// re-resolving only the namespaces an event touched, and pushes every change to open pages as
// server-sent events carrying the re-rendered part of the page. Kinds the user may not list
// are shown as not permitted; nodes the user may not list leave the GPU capacity unknown.
//
// Pages: the overview (every workload, filterable and sortable, with the GPUs bound and waiting
// per namespace, and the cluster's capacity and free GPUs), a page per workload (its tree,
// gangs and the pods its definition does not place), the topology (nodes in the domains of
// Options.TopologyLevels with the GPUs each workload holds, and the gangs that wait with the
// scheduler's reason), the workload as JSON (the schema of `workmap tree -o json`), and
// /metrics.
package webview
