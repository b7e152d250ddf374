#!/usr/bin/env bash
# Brings up workmap-scheduler on a local kind cluster (needs docker, kind, kubectl, and helm
# with INSTALL_WITH=helm), from this checkout:
#   1. creates the kind cluster of kind-config.yaml (kept if it exists),
#   2. builds the image from the repository's Dockerfile and loads it into the nodes (with
#      WITH_SERVE=1, the workmap image too: its target workmap),
#   3. installs JobSet (its release manifests),
#   4. installs workmap-scheduler with `kubectl apply -k deploy/` or the Helm chart (with
#      WITH_SERVE=1, also workmap serve, the web view: `kubectl apply -k deploy/with-serve` or
#      the chart's serve.enabled=true),
#   5. gives the workers fake GPUs (extended resource nvidia.com/gpu on their status),
#   6. applies examples/jobset-leader-workers.yaml and shows its PodGroup.
# The example's image is a placeholder: its 3 pods are bound together (or not at all) and
# then wait on the image pull, which is the point: gang scheduling, not training.
#
# Settings (environment): CLUSTER (workmap), IMAGE (ghcr.io/workmap/workmap-scheduler:latest),
# INSTALL_WITH (kustomize or helm), JOBSET_VERSION (v0.12.0), FAKE_GPUS per worker (8; 0 skips),
# KIND_NODE_IMAGE (kind's default), WITH_SERVE (1 installs workmap serve; default 0),
# SERVE_IMAGE (ghcr.io/workmap/workmap:latest).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

CLUSTER=${CLUSTER:-workmap}
IMAGE=${IMAGE:-ghcr.io/workmap/workmap-scheduler:latest}
INSTALL_WITH=${INSTALL_WITH:-kustomize}
JOBSET_VERSION=${JOBSET_VERSION:-v0.12.0}
FAKE_GPUS=${FAKE_GPUS:-8}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-}
WITH_SERVE=${WITH_SERVE:-0}
SERVE_IMAGE=${SERVE_IMAGE:-ghcr.io/workmap/workmap:latest}
DEFAULT_IMAGE=ghcr.io/workmap/workmap-scheduler:latest
DEFAULT_SERVE_IMAGE=ghcr.io/workmap/workmap:latest
NAMESPACE=workmap-system

need() {
	command -v "$1" >/dev/null 2>&1 || { echo "install.sh: $1 is needed and not on PATH" >&2; exit 1; }
}
need docker
need kind
need kubectl
case $INSTALL_WITH in
kustomize) ;;
helm) need helm ;;
*) echo "install.sh: INSTALL_WITH must be kustomize or helm, not '$INSTALL_WITH'" >&2; exit 1 ;;
esac
case $WITH_SERVE in
0 | 1) ;;
*) echo "install.sh: WITH_SERVE must be 0 or 1, not '$WITH_SERVE'" >&2; exit 1 ;;
esac
for image in "$IMAGE" "$SERVE_IMAGE"; do
	case $image in
	*:*) ;;
	*) echo "install.sh: images need a tag (name:tag), got '$image'" >&2; exit 1 ;;
	esac
done

step() { printf '\n== %s\n' "$*"; }

step "kind cluster $CLUSTER"
if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
	echo "exists, kept"
else
	args=(create cluster --name "$CLUSTER" --config deploy/kind/kind-config.yaml --wait 120s)
	if [ -n "$KIND_NODE_IMAGE" ]; then
		args+=(--image "$KIND_NODE_IMAGE")
	fi
	kind "${args[@]}"
fi
kubectl() { command kubectl --context "kind-$CLUSTER" "$@"; }

step "image $IMAGE"
docker build --target workmap-scheduler -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$CLUSTER"
if [ "$WITH_SERVE" = 1 ]; then
	step "image $SERVE_IMAGE"
	docker build --target workmap -t "$SERVE_IMAGE" .
	kind load docker-image "$SERVE_IMAGE" --name "$CLUSTER"
fi

step "JobSet $JOBSET_VERSION"
# Server-side: the CRDs are too large for the last-applied annotation of a client-side apply.
kubectl apply --server-side -f "https://github.com/kubernetes-sigs/jobset/releases/download/$JOBSET_VERSION/manifests.yaml"
kubectl -n jobset-system rollout status deployment/jobset-controller-manager --timeout=300s

step "workmap-scheduler ($INSTALL_WITH)"
if [ "$INSTALL_WITH" = helm ]; then
	serve_values=()
	if [ "$WITH_SERVE" = 1 ]; then
		serve_values=(--set serve.enabled=true
			--set serve.image.repository="${SERVE_IMAGE%:*}" --set serve.image.tag="${SERVE_IMAGE##*:}")
	fi
	helm upgrade --install workmap-scheduler deploy/helm/workmap-scheduler \
		--kube-context "kind-$CLUSTER" --namespace "$NAMESPACE" --create-namespace \
		--set image.repository="${IMAGE%:*}" --set image.tag="${IMAGE##*:}" ${serve_values[@]+"${serve_values[@]}"}
else
	if [ "$WITH_SERVE" = 1 ]; then
		kubectl apply --server-side -k deploy/with-serve
		if [ "$SERVE_IMAGE" != "$DEFAULT_SERVE_IMAGE" ]; then
			kubectl -n "$NAMESPACE" set image deployment/workmap-serve serve="$SERVE_IMAGE"
		fi
	else
		kubectl apply --server-side -k deploy/
	fi
	if [ "$IMAGE" != "$DEFAULT_IMAGE" ]; then
		kubectl -n "$NAMESPACE" set image deployment/workmap-scheduler scheduler="$IMAGE"
	fi
fi
kubectl -n "$NAMESPACE" rollout status deployment/workmap-scheduler --timeout=300s
if [ "$WITH_SERVE" = 1 ]; then
	kubectl -n "$NAMESPACE" rollout status deployment/workmap-serve --timeout=300s
fi

if [ "$FAKE_GPUS" -gt 0 ]; then
	step "fake GPUs: nvidia.com/gpu=$FAKE_GPUS on each worker"
	for node in $(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' -o name); do
		kubectl patch "$node" --subresource=status --type=json \
			-p "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\"$FAKE_GPUS\"}]"
	done
fi

step "example: examples/jobset-leader-workers.yaml"
# JobSet's webhook may need a moment after its rollout before it admits JobSets.
applied=
for _ in $(seq 1 30); do
	if kubectl apply -f examples/jobset-leader-workers.yaml; then
		applied=1
		break
	fi
	sleep 2
done
[ -n "$applied" ] || { echo "install.sh: the example JobSet was not admitted" >&2; exit 1; }
# The grouper makes the PodGroup when the JobSet's pods appear.
grouped=
for _ in $(seq 1 60); do
	if [ -n "$(kubectl get podgroups -n default -o name 2>/dev/null)" ]; then
		grouped=1
		break
	fi
	sleep 2
done
if [ -z "$grouped" ]; then
	echo "install.sh: no PodGroup after 2 minutes; the scheduler's log:" >&2
	kubectl -n "$NAMESPACE" logs deployment/workmap-scheduler --tail=50 >&2 || true
	exit 1
fi

step "PodGroups"
kubectl get podgroups -A
kubectl get pods -n default -o wide

if [ "$WITH_SERVE" = 1 ]; then
	step "workmap serve"
	echo "open the web view with"
	echo "  kubectl --context kind-$CLUSTER port-forward svc/workmap-serve -n $NAMESPACE 8080:80"
	echo "and http://127.0.0.1:8080/ (metrics at /metrics)"
fi
