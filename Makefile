# Scion build. `make test` is what CI runs (see .ci/run).
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN            := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
CONTROLLER_TOOLS_VERSION := v0.23.0
K8S_ASSETS     := $(BIN)/k8s
GO_TEST_FLAGS  ?= -race
export GOTOOLCHAIN := local
# Podman's settings for function images on machines like the CI's
# (hack/podman/containers.conf), unless the caller gives its own.
export CONTAINERS_CONF ?= $(CURDIR)/hack/podman/containers.conf

.PHONY: all
all: generate build

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(CONTROLLER_GEN):
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and CRD manifests.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false paths=./api/... output:crd:artifacts:config=config/crd/bases
	@# Revision numbers (int or string, the one such type) are at most 16 characters: controller-gen
	@# cannot bound an int-or-string, and without a bound the API server's CEL cost estimate of
	@# their rule, times spec.upstreams' 20 entries, is over its budget.
	sed -i 's/^\( *\)x-kubernetes-int-or-string: true$$/\1maxLength: 16\n&/' config/crd/bases/config.porch.kpt.dev_*.yaml
	go run ./hack/storagecrd
	$(CONTROLLER_GEN) rbac:roleName=scion-manager paths=./internal/... output:rbac:artifacts:config=config/rbac

.PHONY: verify-generate
verify-generate: generate ## Fail when generated files are stale.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config)" || { git status --porcelain -- api config; echo "generated files are not committed"; exit 1; }

.PHONY: build
build: ## Build bin/scion.
	go build -o $(BIN)/scion ./cmd/scion

# install puts scion in GOBIN, else ~/.local/bin.
INSTALL_DIR ?= $(or $(shell go env GOBIN),$(HOME)/.local/bin)

.PHONY: install
install: ## Install scion into GOBIN, else ~/.local/bin (INSTALL_DIR=... to choose).
	mkdir -p $(INSTALL_DIR)
	GOBIN=$(INSTALL_DIR) go install ./cmd/scion
	@echo "installed $(INSTALL_DIR)/scion"
	@case ":$$PATH:" in *":$(INSTALL_DIR):"*) ;; *) echo "note: $(INSTALL_DIR) is not on your PATH: export PATH=\"$(INSTALL_DIR):\$$PATH\"";; esac

# NODE=1 (the default as root) runs cluster-06 of make demo on a real
# node with Flux (go run ./hack/node start), so that its bad release
# crash-loops for real; NODE=0 simulates its deployer.
NODE ?= $(if $(filter 0,$(shell id -u)),1,0)
DEMO_NODE := $(CURDIR)/.scion/node

.PHONY: demo
demo: control-plane build registry $(if $(filter 1,$(NODE)),node flux) ## Start a local control plane, load the fleet in a box and walk through Scion (idempotent); as root, cluster-06 runs on a real node with Flux (NODE=0: simulated).
ifeq ($(NODE),1)
	go build -o $(BIN)/scion-node ./hack/node
	KUBEBUILDER_ASSETS=$(K8S_ASSETS) $(BIN)/scion-node start -dir $(DEMO_NODE) -git $(CURDIR)/.scion/dev/git
	$(BIN)/scion dev demo --target-cluster $(DEMO_NODE)/target.json
else
	$(BIN)/scion dev demo
endif

.PHONY: dev-down
dev-down: build ## Stop the local control plane (its state is kept; scion dev up --fresh starts over) and the demo's node.
	$(BIN)/scion dev down
	if [ -x $(BIN)/scion-node ]; then $(BIN)/scion-node stop -dir $(DEMO_NODE); fi

.PHONY: docs
docs: ## Regenerate docs/reference: the CLI reference and a page per CRD.
	go test ./internal/cli -run TestCLIReference -update
	go test ./config/crd -run TestReference -update

.PHONY: bench-deps
bench-deps: control-plane ## Dependencies at scale: N deployment repositories (N=100) each getting a 5-package graph installed from nothing.
	SCION_BENCH_REPOS=$(or $(N),100) KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -run '^$$' -bench '^BenchmarkDependencies$$' -benchtime 1x -timeout 60m ./test/dependencies/

.PHONY: bench-deploy
bench-deploy: control-plane flux ## Deploy latency: from an upstream publication to the new version running (Flux's Kustomizations Ready at the new revision) in N clusters' worth of targets (N=100): a set's fan-out, a rollout judged by Flux (a canary, then the rest), Flux's GitRepositories polling every INTERVAL (10s).
	SCION_BENCH_TARGETS=$(or $(N),100) SCION_BENCH_FLUX_INTERVAL=$(or $(INTERVAL),10s) KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -run '^$$' -bench '^BenchmarkDeployLatency$$' -benchtime 1x -timeout 60m ./test/flux/

.PHONY: bench-scale
bench-scale: control-plane registry build ## The scale scenario: N PackageVariants (N=1000) over N/10 repositories, create and upstream bump, one table of figures; Scion's API server runs as bin/scion apiserver in a process of its own, as installed; SET=1 makes them with one PackageVariantSet; PROFILE=/tmp/x writes CPU and heap profiles of both phases, the heap profile at the peak (x-peak-heap.pprof), and the kube-apiserver's CPU profile of their first 40 s; GIT_OBJECT_CACHE=MiB sizes the git object cache; INTERACTIVE=1 (implies SET=1) has people edit 50 variants and approve 50 drafts during the bump; STORE=oci keeps the catalog and the clusters in a local OCI registry instead of git, over plain HTTP without authentication as the git server is, OCI_AUTH=htpasswd with TLS and htpasswd, OCI_AUTH=tokens with TLS and bearer tokens from a token service as hosted registries have it.
	SCION_BENCH_VARIANTS=$(or $(N),1000) SCION_BENCH_STORE=$(STORE) SCION_BENCH_REGISTRY_AUTH=$(OCI_AUTH) SCION_BENCH_SET=$(SET) SCION_BENCH_INTERACTIVE=$(INTERACTIVE) SCION_BENCH_PROFILE=$(PROFILE) SCION_BENCH_GIT_OBJECT_CACHE=$(GIT_OBJECT_CACHE) SCION_APISERVER_BINARY=$(CURDIR)/bin/scion KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -run '^$$' -bench '^BenchmarkPackageVariants$$' -benchtime 1x -timeout 90m ./internal/controller/packagevariant/

.PHONY: bench-api
bench-api: control-plane ## Porch's API with N PackageRevisions stored (N=20000) and no fleet: p50/p99 of kubectl get, a whole list, get, scion rpkg get, and the heap of the API server's copy.
	SCION_BENCH_REVISIONS=$(or $(N),20000) KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -run '^$$' -bench '^BenchmarkPorchAPI$$' -benchtime 1x -timeout 60m ./internal/apiserver/

.PHONY: browser
browser: ## Install Debian's Chromium for the console's browser tests, unless there is one.
	hack/install-chromium.sh

.PHONY: registry
registry: ## Install Debian's docker-registry for the OCI registry tests, unless there is one.
	hack/install-registry.sh

.PHONY: sshd
sshd: ## Install Debian's openssh-server for the git-over-ssh tests (its service stays off), unless sshd is there.
	hack/install-sshd.sh

.PHONY: podman
podman: ## Install Debian's podman and runc, which run function images (test/functions), unless they are there.
	hack/install-podman.sh

.PHONY: catalog-functions
catalog-functions: ## Build the kpt catalog's functions Scion has builtins for, from their own modules, into bin/catalog (test/functions compares them with the builtins).
	hack/catalog-functions.sh $(BIN)/catalog

.PHONY: flux
flux: ## Build Flux's source-controller and kustomize-controller (v1.9.6) from their own modules into bin/flux, with their CRDs (test/flux deploys what Scion publishes with them).
	hack/flux.sh $(BIN)/flux

.PHONY: control-plane
control-plane: ## Build etcd, kube-apiserver and kube-controller-manager into bin/k8s.
	hack/build-control-plane.sh $(K8S_ASSETS)

.PHONY: lint
lint: ## gofmt and go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	go vet ./...

.PHONY: test
test: control-plane node browser registry sshd podman catalog-functions flux verify-generate lint ## Run every test against a real API server, real git, a real browser, a real OCI registry and real function images, then the cluster test (make test-cluster).
	rc=0; KUBE_CACHE_MUTATION_DETECTOR=true KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test $(GO_TEST_FLAGS) -count=1 $$(go list ./... | grep -v '/test/cluster$$') || rc=$$?; \
	  go run ./hack/node sweep || rc=1; \
	  if [ $$rc = 0 ]; then $(MAKE) --no-print-directory test-cluster || rc=$$?; fi; exit $$rc

.PHONY: node
node: ## Build kube-scheduler, the kubelet, kube-proxy and kubectl into bin/k8s and install Debian's containerd, runc, CNI plugins and docker-registry: what the test node runs.
	hack/build-control-plane.sh --node $(K8S_ASSETS)
	hack/install-node.sh

.PHONY: test-cluster
test-cluster: control-plane node flux ## Scion as Pods on a real node (containerd, runc, kubelet, kube-proxy): its image, kubectl apply -k, an upgrade from the previous commit, failover, approvals through kubectl and the console in the cluster, function Pods, Flux deploying what Scion publishes and a crash-looping release rolled back on Flux's word. Tears the node down even when it fails.
	rc=0; KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -count=1 -timeout 40m -v ./test/cluster/ || rc=$$?; \
	  go run ./hack/node sweep || rc=1; exit $$rc

# image builds Scion's image without a daemon or a base image and pushes
# it: make image REGISTRY=registry.example.com[/path] [TAG=v0.1.0] [INSECURE=1].
TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: image
image: ## Build Scion's image without a daemon and push it: REGISTRY=host[:port][/path] (TAG=..., INSECURE=1 for plain HTTP).
	@test -n "$(REGISTRY)" || { echo "make image needs REGISTRY=host[:port][/path], for example make image REGISTRY=registry.example.com"; exit 1; }
	go run ./hack/image push --image $(REGISTRY)/scion:$(TAG) --version $(TAG) $(if $(INSECURE),--insecure)

.PHONY: bench-failover
bench-failover: control-plane ## Failover: two `scion controller` replicas per shard with leader election, N PackageVariants (N=1000) made by a set per shard; the leader of one shard killed a third of the way through an upstream bump; SHARDS=3 runs three shards.
	SCION_BENCH_VARIANTS=$(or $(N),1000) SCION_BENCH_SHARDS=$(SHARDS) KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -run '^$$' -bench '^BenchmarkFailover$$' -benchtime 1x -timeout 90m ./internal/manager/

.PHONY: bench
bench: control-plane ## Run the benchmarks.
	KUBEBUILDER_ASSETS=$(K8S_ASSETS) go test -run '^$$' -bench . -benchmem $$(go list ./... | grep -v '/test/cluster$$')
