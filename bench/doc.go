// Package bench measures workmap the same way every run (issue 8, SPEC §11): micro-benchmarks
// parsed from `go test -bench`, scheduler throughput of plain kube-scheduler against
// workmap-scheduler on one local control plane (harness) with kwok GPU nodes, the API
// requests and wall time of `workmap tree` on a 1,000-pod workload, and the grouper's heap
// per tracked pod. It writes bench/results.json and regenerates docs/benchmarks.md with a
// chart (docs/benchmarks-throughput.svg). `make bench` runs it through bench/cmd/bench.
package bench
