# Pinned versions of the local Kubernetes control plane built by `make controlplane`.
# This is the ONE place to change them; the tool modules under
# hack/tools/ must agree (`make verify-tool-versions` checks it, `make controlplane`
# runs that check first). To bump: edit here, edit hack/tools/*/go.mod to match
# (for Kubernetes: every staging replace, and etcd as pinned by k8s.io/kubernetes'
# own go.mod), run `go mod tidy` in each tool module, then `make controlplane`.
K8S_VERSION := v1.36.3
# The k8s.io/* staging modules (k8s.io/api, k8s.io/client-go, ...) of K8S_VERSION.
K8S_STAGING_VERSION := v0.36.3
# go.etcd.io/etcd/server/v3, exactly the version k8s.io/kubernetes@K8S_VERSION pins.
ETCD_VERSION := v3.6.8
# The next Kubernetes minor, whose API server, controller manager and kube-scheduler the
# native-gang and webhook suites also run against (hack/tools/k8s137, into
# bin/k8s-<K8S_NEXT_VERSION>; the other components are K8S_VERSION's).
K8S_NEXT_VERSION := v1.37.2
K8S_NEXT_STAGING_VERSION := v0.37.2
KWOK_VERSION := v0.8.0
JOBSET_VERSION := v0.12.0
HELM_VERSION := v4.3.1
# Framework operators the e2e tests run (hack/tools/<name>, built by hack/build-operator.sh
# into K8S_BIN/<name>/ with their CRDs and webhook manifests).
LWS_VERSION := v0.8.0
KUBERAY_VERSION := v1.5.0
TRAINING_OPERATOR_VERSION := v1.9.0
MPI_OPERATOR_VERSION := v0.8.0
KSERVE_VERSION := v0.20.0
MILVUS_OPERATOR_VERSION := v1.3.7
