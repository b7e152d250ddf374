// Package bench measures workmap the same way every run: micro-benchmarks
// parsed from `go test -bench`; scheduler throughput of plain kube-scheduler (A) against
// workmap-scheduler (B) on one local control plane (harness) with kwok GPU nodes, in
// alternating runs at the same client limits, in running and backlog mode and again at higher
// limits, optionally with any other kube-scheduler-compatible scheduler (O) beside them; row
// C, workmap-scheduler on pods without a gang against kube-scheduler on the same pods; the
// API requests and wall time of `workmap tree` on a 1,000-pod workload; the grouper's heap
// per tracked pod; and a scale row (thousands of pods on hundreds of nodes, on a control
// plane of its own) with each scheduler's CPU per pod. It writes bench/results.json and
// regenerates docs/benchmarks.md with a chart (docs/benchmarks-throughput.svg). `make bench`
// runs it through bench/cmd/bench.
package bench
