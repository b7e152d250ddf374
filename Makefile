# workmap — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin
FUZZTIME ?= 60s
SERVE_ADDR ?= 127.0.0.1:8090
SERVE_FLAGS ?=
# How long `make soak` runs, its overall timeout and where its report goes; `make test` runs
# the short form (soak-short: 3 minutes, its report in bin/).
SOAK_DURATION ?= 30m
SOAK_TIMEOUT ?= 2h
SOAK_REPORT ?= $(CURDIR)/docs/soak.md
# A directory for each process's heap profiles (end of each role's warm-up, end of run) and every sample (samples.csv); none when empty.
SOAK_PROFILES ?=
GENERATED := deploy/crds/workmap.dev_workloaddefinitions.yaml definitions/api/v1alpha1/zz_generated.deepcopy.go \
  deploy/crds/scheduling.x-k8s.io_podgroups.yaml grouper/apis/scheduling/v1alpha1/zz_generated.deepcopy.go \
  definitions/catalog/catalog.json definitions/catalog/README.md \
  deploy/helm/workmap-scheduler/crds/workmap.dev_workloaddefinitions.yaml deploy/helm/workmap-scheduler/crds/scheduling.x-k8s.io_podgroups.yaml

# Local Kubernetes control plane for the e2e tests: versions are pinned in
# hack/versions.mk, built from the tool modules in hack/tools/ into K8S_BIN, which the
# tests find through WORKMAP_K8S_BIN (and envtest through KUBEBUILDER_ASSETS).
include hack/versions.mk
K8S_BIN := $(CURDIR)/bin/k8s-$(K8S_VERSION)
K8S_TOOLS := hack/tools
CONTROLPLANE_BINS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok jobset-controller jobset/webhooks.yaml
K8S_MAJOR := $(patsubst v%,%,$(word 1,$(subst ., ,$(K8S_VERSION))))
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
# The control plane and Helm are linked without symbol table and DWARF (STRIP; the operators
# too, in hack/build-operator.sh): a third smaller and faster to link; panics and profiles
# still name functions and lines.
STRIP := -s -w
K8S_LDFLAGS := $(STRIP) -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=$(K8S_MAJOR) -X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/client-go/pkg/version.gitMajor=$(K8S_MAJOR) -X k8s.io/client-go/pkg/version.gitMinor=$(K8S_MINOR) \
  -X k8s.io/client-go/pkg/version.gitTreeState=clean
# The next minor's own components (see hack/versions.mk), with a stamp of their own.
K8S_NEXT_BIN := $(CURDIR)/bin/k8s-$(K8S_NEXT_VERSION)
K8S_NEXT_BINS := kube-apiserver kube-controller-manager kube-scheduler
K8S_NEXT_LDFLAGS := $(subst $(K8S_VERSION),$(K8S_NEXT_VERSION),$(subst gitMinor=$(K8S_MINOR),gitMinor=$(word 2,$(subst ., ,$(K8S_NEXT_VERSION))),$(K8S_LDFLAGS)))
K8S_NEXT_KEY = $$(cat <(grep -E '^(K8S_NEXT_VERSION|K8S_NEXT_STAGING_VERSION) ' hack/versions.mk) $(K8S_TOOLS)/k8s137/go.mod $(K8S_TOOLS)/k8s137/go.sum \
  <(echo '$(K8S_NEXT_BINS) $(K8S_NEXT_LDFLAGS)') <($(GO) env GOVERSION) | sha256sum | cut -d' ' -f1)
JOBSET_LDFLAGS := $(STRIP) -X sigs.k8s.io/jobset/pkg/version.GitVersion=$(JOBSET_VERSION)
# The stamp key: anything that changes what `controlplane-core` builds. Helm
# (hack/tools/helm) and the framework operators (their own stamps) are left out, and so are
# the comments of hack/versions.mk.
CONTROLPLANE_TOOLS := jobset k8s kwok
CONTROLPLANE_PINS := K8S_VERSION K8S_STAGING_VERSION ETCD_VERSION KWOK_VERSION JOBSET_VERSION
CONTROLPLANE_KEY = $$(cat <(grep -E '^($(subst $(space),|,$(CONTROLPLANE_PINS))) ' hack/versions.mk) $(CONTROLPLANE_TOOLS:%=$(K8S_TOOLS)/%/go.mod) \
  $(CONTROLPLANE_TOOLS:%=$(K8S_TOOLS)/%/go.sum) \
  <(echo '$(CONTROLPLANE_BINS) $(K8S_LDFLAGS) $(JOBSET_LDFLAGS)') <($(GO) env GOVERSION) | sha256sum | cut -d' ' -f1)
TOOL_BUILD := GOWORK=off $(GO) build
space := $(subst ,, )
comma := ,
# Framework operators: each has its own stamp (hack/build-operator.sh), so bumping one
# rebuilds only that one.
OPERATORS := lws kuberay training-operator mpi-operator kserve milvus-operator
# build_operators <names>: build-operator.sh for each.
build_operators = for op in $(1); do GO=$(GO) K8S_BIN=$(K8S_BIN) hack/build-operator.sh $$op || exit 1; done

# What `workmap version` says of a binary built here: the commit (and -dirty with uncommitted
# changes), passed at link time so that it holds where the Go toolchain stamps no VCS
# information (GOFLAGS=-buildvcs=false, a tarball). Outside a git clone: nothing is passed.
WORKMAP_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
WORKMAP_DIRTY := $(if $(WORKMAP_COMMIT),$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty))
WORKMAP_LDFLAGS := $(if $(WORKMAP_COMMIT),-X "main.version=commit $(WORKMAP_COMMIT)$(WORKMAP_DIRTY)")

# Helm, for the chart in deploy/helm: built once from hack/tools/helm into bin/helm, rebuilt
# when its module, HELM_VERSION or the Go version change (the stamp beside it).
HELM := $(CURDIR)/$(BIN)/helm
HELM_CHART := deploy/helm/workmap-scheduler
HELM_LDFLAGS := $(STRIP) -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION) -X helm.sh/helm/v4/internal/version.gitTreeState=clean
HELM_KEY = $$(cat $(K8S_TOOLS)/helm/go.mod $(K8S_TOOLS)/helm/go.sum <(echo '$(HELM_LDFLAGS)') <($(GO) env GOVERSION) | sha256sum | cut -d' ' -f1)

.PHONY: all build test unit soak soak-short check-upstream lint generate verify-generate bench fuzz demo serve clean controlplane controlplane-core controlplane-next verify-tool-versions helm helm-lint download

all: build

build: ## Build the binaries into bin/ (workmap is also installed as kubectl-workmap; workmap-scheduler, workmap-webhook)
	$(GO) build -ldflags '$(WORKMAP_LDFLAGS)' -o $(BIN)/workmap ./cmd/workmap
	ln -sf workmap $(BIN)/kubectl-workmap
	$(GO) build -o $(BIN)/workmap-scheduler ./cmd/workmap-scheduler
	$(GO) build -o $(BIN)/workmap-webhook ./cmd/workmap-webhook

# Where the e2e tests find the control plane and this repository's binaries (bin/); without
# them the tests skip, or build their own binaries. Test binaries are linked without DWARF
# (twice as fast).
E2E_ENV := WORKMAP_K8S_BIN=$(K8S_BIN) KUBEBUILDER_ASSETS=$(K8S_BIN) WORKMAP_SCHEDULER=$(CURDIR)/$(BIN)/workmap-scheduler \
  WORKMAP_WEBHOOK=$(CURDIR)/$(BIN)/workmap-webhook WORKMAP_CLI=$(CURDIR)/$(BIN)/workmap
GO_TEST := $(E2E_ENV) $(GO) test -count=1 -ldflags='-s -w' -timeout 30m
# The test packages that need `make controlplane` beyond its core: the operators' e2e.
OPERATOR_TESTS := ./e2e/operators/...

# The scheduler's e2e package (./plugin) runs longest (about 14 minutes, mostly waiting on its
# clusters) and goes first, so that the other packages run beside it rather than after it.
unit: controlplane controlplane-next helm build ## go test ./... (the e2e tests use the control plane in K8S_BIN and the binaries in bin/)
	$(GO_TEST) ./plugin/ ./...

# Everything CI checks. Most e2e tests wait on their clusters with the CPU half idle, while the
# operators' builds keep both cores busy for a quarter of an hour on a cold machine, so the two
# overlap: every package but those of OPERATOR_TESTS runs (./plugin first, as in `make unit`) while
# `make lint controlplane` goes on beside it under `nice` (the tests keep the CPU their waits
# need; the builds fill what they leave idle), followed there by OPERATOR_TESTS as soon as the
# operators are built. That side's output follows the tests'. Then the
# catalog against the operators' CRDs (check-upstream) and the short soak on a machine of its
# own. `go vet` runs once, in lint, not again in each `go test`. An interrupt or a failed test
# stops what runs beside it.
test: verify-generate controlplane-core controlplane-next helm build ## Everything CI checks: lint, generated code, every test (the operators' builds and e2e beside the other tests), the catalog against the operators' CRDs, the short soak
	@log=$$(mktemp); beside=""; trap '[ -z "$$beside" ] || kill -- -$$beside 2>/dev/null; rm -f $$log' EXIT; \
	  set -m; { nice -n 10 $(MAKE) --no-print-directory lint controlplane && $(GO_TEST) -vet=off $(OPERATOR_TESTS); } >$$log 2>&1 & \
	  beside=$$!; set +m; \
	  pkgs=$$($(GO) list ./... | grep -vxF -f <($(GO) list ./plugin/ $(OPERATOR_TESTS))) || exit 1; \
	  echo "go test ./plugin/ and every package but $(OPERATOR_TESTS); beside them: nice make lint controlplane, then go test $(OPERATOR_TESTS)"; \
	  $(GO_TEST) -vet=off ./plugin/ $$pkgs || exit 1; \
	  wait $$beside; status=$$?; beside=""; cat $$log; \
	  [ $$status = 0 ] || { echo "make lint controlplane, or go test $(OPERATOR_TESTS), beside the tests failed (above)"; exit 1; }
	$(MAKE) --no-print-directory check-upstream
	$(MAKE) --no-print-directory soak-short

soak: controlplane build ## The soak (e2e/soak) for SOAK_DURATION: gang workloads on ~200 kwok nodes while the scheduler, leadership, kube-apiserver, etcd and nodes are disrupted; writes docs/soak.md
	$(E2E_ENV) WORKMAP_REQUIRE_ALL=1 \
	  WORKMAP_SOAK_DURATION=$(SOAK_DURATION) WORKMAP_SOAK_REPORT=$(SOAK_REPORT) WORKMAP_SOAK_PROFILES=$(SOAK_PROFILES) \
	  $(GO) test -tags soak -count=1 -ldflags='-s -w' -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$' -v ./e2e/soak

soak-short: ## The soak's 3-minute form (part of `make test`, after the other tests, so that it has the machine to itself); report in bin/soak-short.md
	$(MAKE) soak SOAK_DURATION=3m SOAK_TIMEOUT=30m SOAK_REPORT=$(CURDIR)/$(BIN)/soak-short.md

# The catalog definitions whose kinds' CRDs ship with the operators built into K8S_BIN.
UPSTREAM_CHECKED := jobsets.jobset.x-k8s.io leaderworkersets.leaderworkerset.x-k8s.io rayclusters.ray.io rayjobs.ray.io \
  rayservices.ray.io pytorchjobs.kubeflow.org mpijobs.kubeflow.org inferenceservices.serving.kserve.io milvuses.milvus.io

check-upstream: controlplane controlplane-next ## Check the catalog against the CRDs of the pinned operator releases, every version each definition lists (newer fields: hack/upstream-ahead.yaml), and the native gang API's fields against each release's API server
	$(GO) run ./hack/checkupstream -bin $(K8S_BIN) -ahead hack/upstream-ahead.yaml -require $(subst $(space),$(comma),$(UPSTREAM_CHECKED)) -native

controlplane: controlplane-core ## Build the control plane and the framework operators the tests run once into K8S_BIN
	@$(call build_operators,$(OPERATORS))

controlplane-core: verify-tool-versions ## Build etcd, kube-*, kubectl, kwok and jobset-controller once into K8S_BIN (all `make demo` needs)
	@key=$(CONTROLPLANE_KEY); \
	  if [ "$$(cat $(K8S_BIN)/.stamp 2>/dev/null)" = "$$key" ] && \
	     (cd $(K8S_BIN) && ls $(CONTROLPLANE_BINS) >/dev/null 2>&1); then \
	    echo "controlplane: up to date in $(K8S_BIN)"; exit 0; fi; \
	  set -ex; mkdir -p $(K8S_BIN); rm -f $(K8S_BIN)/.stamp; \
	  cd $(K8S_TOOLS)/k8s; \
	  $(TOOL_BUILD) -ldflags '$(K8S_LDFLAGS)' -o $(K8S_BIN)/ k8s.io/kubernetes/cmd/kube-apiserver \
	    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl; \
	  $(TOOL_BUILD) -ldflags '$(STRIP)' -o $(K8S_BIN)/etcd go.etcd.io/etcd/server/v3; \
	  cd ../kwok; $(TOOL_BUILD) -ldflags '$(STRIP)' -o $(K8S_BIN)/kwok sigs.k8s.io/kwok/cmd/kwok; \
	  cd ../jobset; $(TOOL_BUILD) -ldflags '$(JOBSET_LDFLAGS)' -o $(K8S_BIN)/jobset-controller sigs.k8s.io/jobset; \
	  src=$$(GOWORK=off $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/jobset); mkdir -p $(K8S_BIN)/jobset/crds; \
	  install -m 0644 $$src/config/components/crd/bases/*.yaml $(K8S_BIN)/jobset/crds/; \
	  install -m 0644 $$src/config/components/webhook/manifests.yaml $(K8S_BIN)/jobset/webhooks.yaml; \
	  echo "$$key" > $(K8S_BIN)/.stamp

controlplane-next: verify-tool-versions ## Build the next minor's kube-apiserver, kube-controller-manager and kube-scheduler once into K8S_NEXT_BIN (the tests run the native-gang suites against both minors)
	@key=$(K8S_NEXT_KEY); \
	  if [ "$$(cat $(K8S_NEXT_BIN)/.stamp 2>/dev/null)" = "$$key" ] && \
	     (cd $(K8S_NEXT_BIN) && ls $(K8S_NEXT_BINS) >/dev/null 2>&1); then \
	    echo "controlplane: Kubernetes $(K8S_NEXT_VERSION) up to date in $(K8S_NEXT_BIN)"; exit 0; fi; \
	  set -ex; mkdir -p $(K8S_NEXT_BIN); rm -f $(K8S_NEXT_BIN)/.stamp; start=$$(date +%s); \
	  cd $(K8S_TOOLS)/k8s137; \
	  $(TOOL_BUILD) -ldflags '$(K8S_NEXT_LDFLAGS)' -o $(K8S_NEXT_BIN)/ $(K8S_NEXT_BINS:%=k8s.io/kubernetes/cmd/%); \
	  echo "$$key" > $(K8S_NEXT_BIN)/.stamp; echo "controlplane: Kubernetes $(K8S_NEXT_VERSION) built in $$(( $$(date +%s) - start )) s"

# The tool modules in the order the builds above need them (the control plane's first).
TOOL_MODULES := k8s kwok jobset $(OPERATORS) k8s137 helm

download: ## Fetch the Go modules the builds and tests need (each tool module's tools, the main module's packages with their tests) into the module cache; .ci/run runs it beside the builds, so that they wait on the network less
	@for tool in $(TOOL_MODULES); do (cd $(K8S_TOOLS)/$$tool && GOWORK=off $(GO) list -deps tool >/dev/null) || exit 1; done
	$(GO) list -deps -test ./... tool >/dev/null

verify-tool-versions: ## The tool modules in hack/tools agree with hack/versions.mk
	@GO=$(GO) K8S_VERSION=$(K8S_VERSION) K8S_STAGING_VERSION=$(K8S_STAGING_VERSION) ETCD_VERSION=$(ETCD_VERSION) \
	  K8S_NEXT_VERSION=$(K8S_NEXT_VERSION) K8S_NEXT_STAGING_VERSION=$(K8S_NEXT_STAGING_VERSION) \
	  KWOK_VERSION=$(KWOK_VERSION) JOBSET_VERSION=$(JOBSET_VERSION) HELM_VERSION=$(HELM_VERSION) \
	  LWS_VERSION=$(LWS_VERSION) KUBERAY_VERSION=$(KUBERAY_VERSION) TRAINING_OPERATOR_VERSION=$(TRAINING_OPERATOR_VERSION) \
	  MPI_OPERATOR_VERSION=$(MPI_OPERATOR_VERSION) KSERVE_VERSION=$(KSERVE_VERSION) MILVUS_OPERATOR_VERSION=$(MILVUS_OPERATOR_VERSION) \
	  bash hack/verify-tool-versions.sh

helm: verify-tool-versions ## Build helm (HELM_VERSION) once into bin/helm
	@key=$(HELM_KEY); \
	  if [ "$$(cat $(BIN)/.helm.stamp 2>/dev/null)" = "$$key" ] && [ -x $(HELM) ]; then \
	    echo "helm: up to date in $(HELM)"; exit 0; fi; \
	  set -ex; mkdir -p $(BIN); rm -f $(BIN)/.helm.stamp; \
	  (cd $(K8S_TOOLS)/helm && $(TOOL_BUILD) -ldflags '$(HELM_LDFLAGS)' -o $(HELM) helm.sh/helm/v4/cmd/helm); \
	  echo "$$key" > $(BIN)/.helm.stamp

helm-lint: helm ## helm lint --strict the chart, and render it with the default and with extra values
	$(HELM) lint --strict $(HELM_CHART)
	$(HELM) lint --strict $(HELM_CHART) --set replicas=2 --set 'rbac.extraWorkloadResources[0].apiGroup=example.com' \
	  --set 'rbac.extraWorkloadResources[0].resources={widgets}'
	$(HELM) lint --strict $(HELM_CHART) --set serve.enabled=true
	$(HELM) lint --strict $(HELM_CHART) --set webhook.enabled=true
	$(HELM) lint --strict $(HELM_CHART) --set webhook.enabled=true --set webhook.certManager.enabled=true --set webhook.failurePolicy=Fail
	@out=$$($(HELM) template workmap-scheduler $(HELM_CHART) --include-crds --namespace workmap-system \
	    --kube-version $(K8S_VERSION)) || exit 1; \
	  for kind in CustomResourceDefinition ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding ConfigMap Deployment; do \
	    grep -q "^kind: $$kind$$" <<<"$$out" || { echo "helm template: no $$kind rendered"; exit 1; }; done; \
	  echo "helm template: $$(grep -c '^kind:' <<<"$$out") objects rendered"

lint: helm-lint ## go vet and gofmt (and helm-lint)
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

generate: ## Regenerate deepcopy code, CRD YAML (controller-gen, run as a Go tool), the catalog's catalog.json and README
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./definitions/api/... paths=./grouper/apis/... \
	  crd:crdVersions=v1 output:crd:dir=deploy/crds
	$(GO) run ./hack/gencatalog
	rm -f $(HELM_CHART)/crds/*.yaml && cp deploy/crds/*.yaml $(HELM_CHART)/crds/

verify-generate: ## Fail when `make generate` would change committed files
	@before=$$(sha256sum $(GENERATED)); \
	  $(MAKE) --no-print-directory generate >/dev/null; \
	  after=$$(sha256sum $(GENERATED)); \
	  if [ "$$before" != "$$after" ]; then echo "generated files were stale: run 'make generate' and commit"; diff <(echo "$$before") <(echo "$$after"); exit 1; fi

bench: controlplane controlplane-next ## Benchmarks (micro, scheduler throughput, CLI, grouper memory): bench/results.json, docs/benchmarks.md (BENCH_FLAGS: go run ./bench/cmd/bench -h)
	$(GO) build -o $(BIN)/ ./cmd/workmap ./cmd/workmap-scheduler ./cmd/workmap-webhook
	$(E2E_ENV) $(GO) run ./bench/cmd/bench $(BENCH_FLAGS)

fuzz: ## Run every fuzz target for FUZZTIME each
	$(GO) test ./definitions/paths -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions -run='^$$' -fuzz=FuzzDecodeDefinition -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions -run='^$$' -fuzz=FuzzCompileFields -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions/paths -run='^$$' -fuzz='^FuzzSet$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions/expr -run='^$$' -fuzz='^FuzzEval$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions/catalog -run='^$$' -fuzz='^FuzzExpandCatalog$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./grouper -run='^$$' -fuzz='^FuzzTopOwner$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./grouper -run='^$$' -fuzz='^FuzzOwnerResolver$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./grouper -run='^$$' -fuzz='^FuzzDefinitionGenerations$$' -fuzztime=$(FUZZTIME)

serve: build controlplane-core ## A local cluster to try workmap on, kept up until Ctrl-C: kwok GPU nodes, the JobSet controller and the operators the tests run (SERVE_FLAGS=-operators=…: which; all by default), workmap-scheduler, the example JobSet and workmap serve (SERVE_ADDR, default 127.0.0.1:8090)
	$(GO) build -o $(BIN)/ ./hack/serve
	@# only the operators SERVE_FLAGS' -operators selects (serve -print-builds names their builds)
	@ops=$$($(BIN)/serve -print-builds $(SERVE_FLAGS)) || exit 1; $(call build_operators,$$ops)
	# exec: make's child is serve itself, so the SIGTERM make passes on reaches it
	WORKMAP_K8S_BIN=$(K8S_BIN) WORKMAP_SCHEDULER=$(CURDIR)/$(BIN)/workmap-scheduler exec $(BIN)/serve -workmap $(BIN)/workmap -addr $(SERVE_ADDR) $(SERVE_FLAGS)

demo: build controlplane-core ## The main job: a local control plane, the example JobSet gang-scheduled by workmap-scheduler, its live tree (12 GPUs)
	$(GO) build -o $(BIN)/ ./hack/demo
	WORKMAP_K8S_BIN=$(K8S_BIN) WORKMAP_SCHEDULER=$(CURDIR)/$(BIN)/workmap-scheduler exec $(BIN)/demo -workmap $(BIN)/workmap

clean:
	rm -rf $(BIN)
