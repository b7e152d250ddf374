#!/usr/bin/env bash
# Checks that the tool modules under hack/tools/ agree with the versions pinned in
# hack/versions.mk. Run through `make verify-tool-versions`, which passes the pins
# as environment variables: K8S_VERSION K8S_STAGING_VERSION ETCD_VERSION K8S_NEXT_VERSION
# K8S_NEXT_STAGING_VERSION
# KWOK_VERSION JOBSET_VERSION HELM_VERSION, the operators' LWS_VERSION KUBERAY_VERSION
# TRAINING_OPERATOR_VERSION MPI_OPERATOR_VERSION KSERVE_VERSION MILVUS_OPERATOR_VERSION (and GO).
set -euo pipefail
cd "$(dirname "$0")/tools"
GO=${GO:-go}
fail=0
err() { echo "verify-tool-versions: $*" >&2; fail=1; }

# required <tool dir> <module path>: the version required in that tool's go.mod.
required() {
	awk -v m="$2" '{ sub(/^require[ \t]+/, "") } $1 == m && $2 ~ /^v/ { print $2 }' "$1/go.mod"
}
expect() {
	local got
	got=$(required "$1" "$2")
	[ "$got" = "$3" ] || err "hack/tools/$1/go.mod requires $2 '${got:-<missing>}', hack/versions.mk says '$3'"
}

expect k8s k8s.io/kubernetes "$K8S_VERSION"
expect k8s go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
expect kwok sigs.k8s.io/kwok "$KWOK_VERSION"
expect jobset sigs.k8s.io/jobset "$JOBSET_VERSION"
expect helm helm.sh/helm/v4 "$HELM_VERSION"
expect lws sigs.k8s.io/lws "$LWS_VERSION"
expect kuberay github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION"
expect training-operator github.com/kubeflow/training-operator "$TRAINING_OPERATOR_VERSION"
expect mpi-operator github.com/kubeflow/mpi-operator "$MPI_OPERATOR_VERSION"
expect kserve github.com/kserve/kserve "$KSERVE_VERSION"
expect milvus-operator github.com/zilliztech/milvus-operator "$MILVUS_OPERATOR_VERSION"

# An operator's module is not the main module of its tool module, so its replace directives
# do not apply there; the tool module must carry every one of them.
replaces() { awk '/^replace[ \t]*\(/ { in_r = 1; next } in_r && /^\)/ { in_r = 0; next }
	/^replace / { sub(/^replace[ \t]+/, ""); print; next } in_r && NF { print }' "$1" | sed 's/^[ \t]*//; s/[ \t]*\/\/.*//' | sort; }
for t in lws:sigs.k8s.io/lws:LWS_VERSION kuberay:github.com/ray-project/kuberay/ray-operator:KUBERAY_VERSION \
	training-operator:github.com/kubeflow/training-operator:TRAINING_OPERATOR_VERSION \
	mpi-operator:github.com/kubeflow/mpi-operator:MPI_OPERATOR_VERSION kserve:github.com/kserve/kserve:KSERVE_VERSION \
	milvus-operator:github.com/zilliztech/milvus-operator:MILVUS_OPERATOR_VERSION; do
	IFS=: read -r dir mod pin <<<"$t"
	if gomod=$(cd "$dir" && GOWORK=off "$GO" mod download -json "$mod@${!pin}" 2>/dev/null |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') && [ -f "$gomod" ]; then
		missing=$(comm -23 <(replaces "$gomod") <(replaces "$dir/go.mod"))
		[ -z "$missing" ] || err "hack/tools/$dir/go.mod lacks replaces of $mod@${!pin}:"$'\n'"$missing"
	fi
done

expect k8s137 k8s.io/kubernetes "$K8S_NEXT_VERSION"

# staging <tool dir> <kubernetes version> <staging version>: every replace in a Kubernetes
# tool module pins a staging module at the staging version and, when k8s.io/kubernetes' own
# go.mod is available (module cache, or the proxy), they cover exactly its staging modules.
# It prints the path of that go.mod ("" when unavailable).
staging() {
	local dir=$1 version=$2 stagingVersion=$3 ours bad upstream theirs
	ours=$(awk '$2 == "=>" { print $1 }' "$dir/go.mod" | sort)
	bad=$(awk -v v="$stagingVersion" '$2 == "=>" && ($1 != $3 || $4 != v)' "$dir/go.mod")
	[ -z "$bad" ] || err "hack/tools/$dir/go.mod has replaces not at $stagingVersion:"$'\n'"$bad"
	if upstream=$(cd "$dir" && GOWORK=off "$GO" mod download -json "k8s.io/kubernetes@$version" 2>/dev/null |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') && [ -f "$upstream" ]; then
		theirs=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$upstream" | sort)
		[ "$ours" = "$theirs" ] || err "hack/tools/$dir/go.mod replaces differ from k8s.io/kubernetes@$version's staging modules:"$'\n'"$(diff <(echo "$theirs") <(echo "$ours") || true)"
		echo "$upstream"
	else
		echo "verify-tool-versions: k8s.io/kubernetes@$version go.mod not available, skipping the staging-list check" >&2
	fi
}

# etcd must be the one the Kubernetes of K8S_VERSION pins.
upstream=$(staging k8s "$K8S_VERSION" "$K8S_STAGING_VERSION")
if [ -n "$upstream" ]; then
	pinned=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$upstream")
	[ "$pinned" = "$ETCD_VERSION" ] || err "k8s.io/kubernetes@$K8S_VERSION pins etcd server $pinned, hack/versions.mk says $ETCD_VERSION"
fi
staging k8s137 "$K8S_NEXT_VERSION" "$K8S_NEXT_STAGING_VERSION" >/dev/null

# Builds that compile the same packages share them in Go's build cache only when every module
# below a package is at the same version in both, so one split module at the bottom (x/sys)
# splits everything above it. Each pair below shares a Kubernetes minor, and every module the
# two build lists share is at one version: on a machine with empty caches that saves minutes.
#   - the control plane's tool module and the main module (about 1,300 packages: client-go,
#     the API server's libraries, the scheduler framework);
#   - JobSet and kwok (both in `make demo`) and the main module;
#   - Helm and the second minor's control plane;
#   - the MPI operator and the main module (raised from its release's v0.35 to our minor: it
#     would otherwise build its own client-go, API server libraries, etcd client and
#     OpenTelemetry);
#   - LWS and KubeRay and KServe and the training operator, the operators on the same minor
#     (KServe's replaces pin the others' k8s.io modules; the training operator is raised from
#     its release's v0.31 and controller-runtime 0.19, and cannot go further: controller-runtime
#     0.23 changed the webhook builder it calls, and 0.22 does not build against client-go 0.36).
# The Milvus operator builds alone: it calls apimachinery's diff.ObjectDiff (gone in v0.34) and
# controller-runtime's webhook.Defaulter (gone in 0.20).
# (Raising a tool module to the other's versions: go get MODULE@VERSION there, then
# go mod tidy.) The builds must also pass the same compile flags: one such as -trimpath or
# -gcflags gives every package a cache key of its own (link flags such as -ldflags do not).
built() { # built <dir>: the modules (path, version) of the packages a build compiles ("main": the main module with its tests)
	local dir=$1 pkgs=(tool)
	[ "$dir" != main ] || { dir=../..; pkgs=(-test ./...); }
	(cd "$dir" && GOWORK=off "$GO" list -deps \
		-f '{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}' "${pkgs[@]}" | sort -u)
}
name() { [ "$1" = main ] && echo "the main go.mod" || echo "hack/tools/$1/go.mod"; }
aligned() { # aligned <a> <b> [module...]: a and b build every shared module but the named ones at one version
	local a=$1 b=$2 listA listB split
	shift 2
	if ! listA=$(built "$a") || ! listB=$(built "$b"); then
		err "cannot list the modules $(name "$a") and $(name "$b") build (go list failed, above)"
		return
	fi
	split=$(join <(echo "$listA") <(echo "$listB") | awk -v skip=" $* " -v a="$a" -v b="$b" \
		'$2 != $3 && index(skip, " " $1 " ") == 0 { printf "  %s: %s %s, %s %s\n", $1, a, $2, b, $3 }')
	[ -z "$split" ] || err "$(name "$a") and $(name "$b") require different versions of modules both build; one version each:"$'\n'"$split"
}
aligned main k8s
aligned main jobset
aligned main kwok
aligned k8s137 helm
aligned main mpi-operator
aligned kserve lws
aligned lws training-operator
# gateway-api v1.5.1, KServe's, needs k8s.io v0.35; KServe's replaces hold it on v0.34.
aligned kserve kuberay sigs.k8s.io/gateway-api

exit $fail
