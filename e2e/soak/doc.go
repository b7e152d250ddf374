// Package soak runs workmap-scheduler for a long while on a local control plane (etcd,
// kube-apiserver, kube-controller-manager, about 200 kwok nodes, the real JobSet controller
// and LeaderWorkerSet operator) under a steady mix of gang workloads — plain Jobs, JobSets,
// LeaderWorkerSets; gangs of 1 to 64 pods, some too big to fit for a while, some deleted
// while their members wait at Permit, some whose pods fail and are recreated — while faults
// are injected: workmap-scheduler killed and restarted, leadership moved between two
// replicas, kube-apiserver restarted with etcd compacted underneath (so that resumed watches
// are told their resource version is too old), etcd compacted, nodes deleted and added.
//
// All through the run and at its end it checks that no gang is ever left partly bound, that
// no PodGroup outlives its workload, that no pod stays Pending while its gang fits, that every
// gang that fits is bound within a bound, and that the scheduler's and the webhook's memory
// and goroutines do not grow. Any violation fails the test.
//
// Its files build only with the soak tag (go test -tags soak), so that `go test ./...` does not
// run it beside the other tests. The test lasts WORKMAP_SOAK_DURATION (default 3m); `make soak`
// runs it for 30 minutes and writes its report (WORKMAP_SOAK_REPORT) to docs/soak.md, and
// `make test` ends with its 3-minute form (`make soak-short`), alone on the machine.
package soak
