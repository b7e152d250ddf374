// Package harness runs a real, local Kubernetes control plane for tests: etcd and
// kube-apiserver (through controller-runtime's envtest), kube-controller-manager (so Jobs make
// pods), kube-scheduler, kwok (so fake GPU nodes are Ready and pods run, succeed or fail on
// request) and, when asked, the real JobSet controller with its webhooks on loopback, or
// Kubernetes' own gang scheduling (Options.NativeGangs: PodGroups of scheduling.k8s.io/v1alpha2
// and kube-scheduler's GangScheduling plugin, alpha in 1.36; v1beta1 behind GenericWorkload in
// 1.37).
//
// A cluster runs Kubernetes 1.36 unless Options.Release names 1.37, whose API server,
// controller manager and kube-scheduler it then runs beside the 1.36 etcd, kubectl and kwok.
// Binaries come from `make controlplane` (bin/k8s-<version>/, or WORKMAP_K8S_BIN for 1.36's,
// with 1.37's in the folder beside it); tests skip with a message when they are absent. Everything is torn down in reverse order when the test
// ends, also when it fails, and the processes' logs are printed on failure.
package harness
