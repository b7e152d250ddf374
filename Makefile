# workmap — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin
FUZZTIME ?= 60s
GENERATED := deploy/crds/workmap.dev_workloaddefinitions.yaml definitions/api/v1alpha1/zz_generated.deepcopy.go \
  deploy/crds/scheduling.x-k8s.io_podgroups.yaml grouper/apis/scheduling/v1alpha1/zz_generated.deepcopy.go \
  definitions/catalog/README.md

# Local Kubernetes control plane for the e2e tests (SPEC.md §9): versions are pinned in
# hack/versions.mk, built from the tool modules in hack/tools/ into K8S_BIN, which the
# tests find through WORKMAP_K8S_BIN (and envtest through KUBEBUILDER_ASSETS).
include hack/versions.mk
K8S_BIN := $(CURDIR)/bin/k8s-$(K8S_VERSION)
K8S_TOOLS := hack/tools
CONTROLPLANE_BINS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok jobset-controller jobset/webhooks.yaml
K8S_MAJOR := $(patsubst v%,%,$(word 1,$(subst ., ,$(K8S_VERSION))))
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/component-base/version.gitMajor=$(K8S_MAJOR) -X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION) \
  -X k8s.io/client-go/pkg/version.gitMajor=$(K8S_MAJOR) -X k8s.io/client-go/pkg/version.gitMinor=$(K8S_MINOR) \
  -X k8s.io/client-go/pkg/version.gitTreeState=clean
JOBSET_LDFLAGS := -X sigs.k8s.io/jobset/pkg/version.GitVersion=$(JOBSET_VERSION)
# The stamp key: anything that changes what `controlplane` builds.
CONTROLPLANE_KEY = $$(cat hack/versions.mk $(K8S_TOOLS)/*/go.mod $(K8S_TOOLS)/*/go.sum \
  <(echo '$(CONTROLPLANE_BINS) $(K8S_LDFLAGS) $(JOBSET_LDFLAGS)') <($(GO) env GOVERSION) | sha256sum | cut -d' ' -f1)
TOOL_BUILD := GOWORK=off $(GO) build

.PHONY: all build test unit lint generate verify-generate bench fuzz demo clean controlplane verify-tool-versions

all: build

build: ## Build the binaries into bin/ (workmap is also installed as kubectl-workmap)
	$(GO) build -o $(BIN)/workmap ./cmd/workmap
	ln -sf workmap $(BIN)/kubectl-workmap

test: lint verify-generate unit ## Everything CI checks

unit: controlplane ## go test ./... (the e2e tests use the control plane in K8S_BIN)
	WORKMAP_K8S_BIN=$(K8S_BIN) KUBEBUILDER_ASSETS=$(K8S_BIN) $(GO) test -count=1 ./...

controlplane: verify-tool-versions ## Build etcd, kube-*, kubectl, kwok, jobset-controller once into K8S_BIN
	@key=$(CONTROLPLANE_KEY); \
	  if [ "$$(cat $(K8S_BIN)/.stamp 2>/dev/null)" = "$$key" ] && \
	     (cd $(K8S_BIN) && ls $(CONTROLPLANE_BINS) >/dev/null 2>&1); then \
	    echo "controlplane: up to date in $(K8S_BIN)"; exit 0; fi; \
	  set -ex; mkdir -p $(K8S_BIN); rm -f $(K8S_BIN)/.stamp; \
	  cd $(K8S_TOOLS)/k8s; \
	  $(TOOL_BUILD) -ldflags '$(K8S_LDFLAGS)' -o $(K8S_BIN)/ k8s.io/kubernetes/cmd/kube-apiserver \
	    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl; \
	  $(TOOL_BUILD) -o $(K8S_BIN)/etcd go.etcd.io/etcd/server/v3; \
	  cd ../kwok; $(TOOL_BUILD) -o $(K8S_BIN)/kwok sigs.k8s.io/kwok/cmd/kwok; \
	  cd ../jobset; $(TOOL_BUILD) -ldflags '$(JOBSET_LDFLAGS)' -o $(K8S_BIN)/jobset-controller sigs.k8s.io/jobset; \
	  src=$$(GOWORK=off $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/jobset); mkdir -p $(K8S_BIN)/jobset/crds; \
	  install -m 0644 $$src/config/components/crd/bases/*.yaml $(K8S_BIN)/jobset/crds/; \
	  install -m 0644 $$src/config/components/webhook/manifests.yaml $(K8S_BIN)/jobset/webhooks.yaml; \
	  echo "$$key" > $(K8S_BIN)/.stamp

verify-tool-versions: ## The tool modules in hack/tools agree with hack/versions.mk
	@GO=$(GO) K8S_VERSION=$(K8S_VERSION) K8S_STAGING_VERSION=$(K8S_STAGING_VERSION) ETCD_VERSION=$(ETCD_VERSION) \
	  KWOK_VERSION=$(KWOK_VERSION) JOBSET_VERSION=$(JOBSET_VERSION) bash hack/verify-tool-versions.sh

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

generate: ## Regenerate deepcopy code, CRD YAML (controller-gen, run as a Go tool) and the catalog README
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./definitions/api/... paths=./grouper/apis/... \
	  crd:crdVersions=v1 output:crd:dir=deploy/crds
	$(GO) run ./hack/gencatalog > definitions/catalog/README.md.tmp && mv definitions/catalog/README.md.tmp definitions/catalog/README.md

verify-generate: ## Fail when `make generate` would change committed files
	@before=$$(sha256sum $(GENERATED)); \
	  $(MAKE) --no-print-directory generate >/dev/null; \
	  after=$$(sha256sum $(GENERATED)); \
	  if [ "$$before" != "$$after" ]; then echo "generated files were stale: run 'make generate' and commit"; diff <(echo "$$before") <(echo "$$after"); exit 1; fi

bench: ## Micro-benchmarks (ns/op, allocs/op)
	$(GO) test -run='^$$' -bench=. -benchmem ./definitions/... ./grouper/...

fuzz: ## Run every fuzz target for FUZZTIME each
	$(GO) test ./definitions/paths -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions -run='^$$' -fuzz=FuzzDecodeDefinition -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions -run='^$$' -fuzz=FuzzCompileFields -fuzztime=$(FUZZTIME)

demo: build ## The main command (for now: the offline tree of the example JobSet)
	$(BIN)/workmap tree -f examples/jobset-leader-workers.yaml

clean:
	rm -rf $(BIN)
