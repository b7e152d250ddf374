// Package e2e holds end-to-end tests against a real control plane (etcd, kube-apiserver,
// kube-controller-manager, kwok and framework controllers built from the Go module proxy).
// See SPEC §9; built in a later issue.
package e2e
