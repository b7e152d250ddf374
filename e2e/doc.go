// Package e2e holds end-to-end tests against a real control plane (etcd, kube-apiserver,
// kube-controller-manager, kwok and framework controllers built from the Go module proxy).
// The harness that runs it is e2e/harness.
package e2e
