# workmap — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
BIN := bin
FUZZTIME ?= 60s
GENERATED := deploy/crds/workmap.dev_workloaddefinitions.yaml definitions/api/v1alpha1/zz_generated.deepcopy.go

.PHONY: all build test unit lint generate verify-generate bench fuzz demo clean

all: build

build: ## Build the binaries into bin/ (workmap is also installed as kubectl-workmap)
	$(GO) build -o $(BIN)/workmap ./cmd/workmap
	ln -sf workmap $(BIN)/kubectl-workmap

test: lint verify-generate unit ## Everything CI checks

unit:
	$(GO) test -count=1 ./...

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

generate: ## Regenerate deepcopy code and CRD YAML (controller-gen, run as a Go tool)
	$(GO) tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./definitions/api/... \
	  crd:crdVersions=v1 output:crd:dir=deploy/crds

verify-generate: ## Fail when `make generate` would change committed files
	@before=$$(sha256sum $(GENERATED)); \
	  $(MAKE) --no-print-directory generate >/dev/null; \
	  after=$$(sha256sum $(GENERATED)); \
	  if [ "$$before" != "$$after" ]; then echo "generated files were stale: run 'make generate' and commit"; diff <(echo "$$before") <(echo "$$after"); exit 1; fi

bench: ## Micro-benchmarks (ns/op, allocs/op)
	$(GO) test -run='^$$' -bench=. -benchmem ./definitions/...

fuzz: ## Run every fuzz target for FUZZTIME each
	$(GO) test ./definitions/paths -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME)
	$(GO) test ./definitions -run='^$$' -fuzz=FuzzDecodeDefinition -fuzztime=$(FUZZTIME)

demo: build ## The main command (for now: the offline tree of the example JobSet)
	$(BIN)/workmap tree -f examples/jobset-leader-workers.yaml

clean:
	rm -rf $(BIN)
