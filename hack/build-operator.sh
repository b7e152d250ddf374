#!/usr/bin/env bash
# Builds one framework operator from its tool module hack/tools/<name> into $K8S_BIN/<name>/:
# the manager binary (manager), its CRDs (crds/), its webhook configurations (webhooks.yaml)
# where it has them, and the files it reads at run time, all copied from the release module
# pinned in the tool module. A stamp of the tool module, this script and the Go version skips
# the build when nothing changed. Run by `make controlplane`; the e2e tests under
# e2e/operators/ start the operators from there.
set -euo pipefail
name=$1
: "${K8S_BIN:?set K8S_BIN}"
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
self=$here/$(basename "$0")
tool=$here/tools/$name
out=$K8S_BIN/$name

# Per operator: module, main package, CRD files, webhook manifests, other files ("src:dest").
# Paths are relative to the module's folder; quote globs so they expand there (a pattern that
# matches nothing fails the build: the release moved its files).
crds=() hooks="" extra=()
post() { :; } # files an operator needs that its module does not hold
case $name in
lws)
	mod=sigs.k8s.io/lws pkg=sigs.k8s.io/lws/cmd
	crds=(config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml) hooks=config/webhook/manifests.yaml ;;
kuberay)
	# Webhooks (RayCluster validation only) are off unless ENABLE_WEBHOOKS=true: not copied.
	mod=github.com/ray-project/kuberay/ray-operator pkg=$mod
	crds=(config/crd/bases/ray.io_rayclusters.yaml config/crd/bases/ray.io_rayjobs.yaml config/crd/bases/ray.io_rayservices.yaml) ;;
training-operator)
	# PyTorchJob only: the MPIJob kind is the MPI operator's (v2beta1), not this one's v1.
	mod=github.com/kubeflow/training-operator pkg=$mod/cmd/training-operator.v1
	crds=(manifests/base/crds/kubeflow.org_pytorchjobs.yaml) hooks=manifests/base/webhook/manifests.yaml ;;
mpi-operator)
	mod=github.com/kubeflow/mpi-operator pkg=$mod/cmd/mpi-operator
	crds=(manifests/base/kubeflow.org_mpijobs.yaml) ;;
kserve)
	mod=github.com/kserve/kserve pkg=$mod/cmd/manager
	crds=('config/crd/full/serving.kserve.io_*.yaml' 'config/crd/full/*/serving.kserve.io_*.yaml')
	hooks=config/webhook/manifests.yaml
	extra=(config/configmap/inferenceservice.yaml:inferenceservice-config.yaml config/runtimes:runtimes) ;;
milvus-operator)
	# The manager reads config/assets/templates (milvus.yaml templates) and
	# config/assets/charts/values.yaml relative to its working directory, so they go to
	# config/assets/ here and the tests start it in this folder. values.yaml is the
	# milvus-helm chart's, fetched by the release image build, not part of the module: the
	# operator only merges its etcd/minio/pulsar/kafka sections into in-cluster dependency
	# values, so a file with empty sections lets it start; with external dependencies (as
	# the e2e tests use) nothing reads them, and no Helm chart is installed.
	# Its three kinds: the Milvus controller, the MilvusUpgrade controller and the v1alpha1
	# MilvusCluster converter all start with the manager and need their CRDs. No webhooks:
	# the manager serves them on the fixed port 9443, and its reconciler applies the same
	# defaults to every Milvus itself.
	mod=github.com/zilliztech/milvus-operator pkg=$mod
	crds=(config/crd/bases/milvus.io_milvuses.yaml config/crd/bases/milvus.io_milvusupgrades.yaml config/crd/bases/milvus.io_milvusclusters.yaml)
	extra=(config/assets/templates:config/assets/templates)
	post() {
		mkdir -p "$out/config/assets/charts"
		printf '%s: {}\n' etcd minio pulsar pulsarv3 kafka tei > "$out/config/assets/charts/values.yaml"
	} ;;
*) echo "build-operator: unknown operator $name" >&2; exit 2 ;;
esac

key=$(cat "$tool/go.mod" "$tool/go.sum" "$self" <("$GO" env GOVERSION) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/.stamp" 2>/dev/null)" = "$key" ] && [ -x "$out/manager" ]; then
	echo "controlplane: $name up to date in $out"; exit 0
fi
set -x
rm -rf "$out"; mkdir -p "$out/crds"
cd "$tool"
# Without symbol table and DWARF: a third smaller and faster to link; panics still name
# functions and lines.
GOWORK=off "$GO" build -ldflags='-s -w' -o "$out/manager" "$pkg"
src=$(GOWORK=off "$GO" list -m -f '{{.Dir}}' "$mod")
cd "$src"
shopt -s failglob
# shellcheck disable=SC2068 # unquoted on purpose: the patterns expand here, in the module
install -m 0644 ${crds[@]} "$out/crds/"
[ -z "$hooks" ] || install -m 0644 "$hooks" "$out/webhooks.yaml"
for e in "${extra[@]}"; do
	mkdir -p "$(dirname "$out/${e#*:}")"
	cp -R "${e%%:*}" "$out/${e#*:}"
done
post
chmod -R u+w "$out"
echo "$key" > "$out/.stamp"
