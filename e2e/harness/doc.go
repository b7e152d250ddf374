// Package harness runs a real, local Kubernetes control plane for tests: etcd and
// kube-apiserver (through controller-runtime's envtest), kube-controller-manager (so Jobs make
// pods), kube-scheduler, kwok (so fake GPU nodes are Ready and pods run, succeed or fail on
// request) and, when asked, the real JobSet controller with its webhooks on loopback, or
// Kubernetes' own gang scheduling (Options.NativeGangs: PodGroups of scheduling.k8s.io/v1alpha2
// and kube-scheduler's GangScheduling plugin, alpha in 1.36).
//
// Binaries come from `make controlplane` (bin/k8s-<version>/, or WORKMAP_K8S_BIN); tests skip
// with a message when they are absent. Everything is torn down in reverse order when the test
// ends, also when it fails, and the processes' logs are printed on failure.
package harness
