# ccmkit development targets. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

BIN := $(CURDIR)/.bin
export PATH := $(BIN):$(PATH)
MOCKGEN_VERSION := $(shell go list -m -f '{{.Version}}' go.uber.org/mock)
GOLANGCI_LINT_VERSION := v2.15.0
HELM_VERSION := v4.3.1
MOCKS := $(shell git ls-files '*/cloudapimock/*.go' 2>/dev/null)

.PHONY: tracked-check test demo demo-inmemory controlplane e2e e2e-beside peers fmt-check vet api api-check lint mocks-check versions-check unit compat vendor-check generate docs bench bench-fake benchmarks fuzz

## demo: the cloud-controller-manager against a real kube-apiserver and etcd over the fake cloud
## of e2e/demo/cloud.yaml (builds the control plane first; ARGS='-keep' keeps it running).
demo: controlplane
	cd e2e && go run ./demo $(ARGS)

## demo-inmemory: the upstream node controllers on client-go's fake clientset; no build, ~10 s.
demo-inmemory:
	go run ./examples/demo

## controlplane: build kube-apiserver and etcd into .cache/controlplane (once; ~10 min on 2 cores, ~3 after the e2e build).
controlplane:
	@bash hack/controlplane.sh

## test: everything CI checks: tracked files, formatting, vet, the exported API against api/ccmkit.txt,
## lint, generated mocks, race-enabled unit tests (at the Kubernetes minor go.mod requires),
## vendoring into consumer modules, the e2e suite against a real control plane, then the
## other supported Kubernetes minors (docs/versioning.md).
test: tracked-check fmt-check vet api-check lint mocks-check versions-check unit vendor-check e2e-beside

## tracked-check: the repository tracks no compiled executable, no file with the executable
## bit and no file over 1 MiB that hack/trackedfiles.sh does not list.
tracked-check:
	@echo "==> tracked files"
	@bash hack/trackedfiles.sh

fmt-check:
	@echo "==> gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## vet: go build (compiles every package, also the main packages no test compiles) in the
## library's module, in e2e, in hack/benchplot (a module of its own: gonum/plot), in
## examples/hcloud (a module of its own: hcloud-go, at e2e's versions of every module both
## build, so after e2e it compiles only hcloud-go and its own packages), and go vet in the
## library's module. bench/peers is built and tested by `make peers`.
## The nested modules are vetted by `make lint` (golangci-lint's govet runs go vet's
## analyzers on them, test files included): a go vet of its own there analyzed each
## module's whole dependency graph a second time.
vet:
	@echo "==> go build, go vet"
	go build ./...
	go vet ./...
	cd e2e && go build ./...
	cd hack/benchplot && go build -o /dev/null ./...
	cd examples/hcloud && go build -o /dev/null ./...

## peers: go build and the short tests in bench/peers (a module of its own: the AWS cloud
## provider and the AWS SDK, and examples/hcloud's adapter and mock, at e2e's versions of the
## rest, so after e2e it compiles only those): the AWS column's request counting and the
## whole benchmark at a small size with the Hetzner-shaped column.
peers:
	@echo "==> go build and go test -short in bench/peers"
	cd bench/peers && go build ./... && go test -short -count=1 ./...

## api: write api/ccmkit.txt, the description of the exported API of the public packages
## (docs/versioning.md), from the code; commit it with the change that changed the API.
api:
	go run ./hack/apicheck -w api/ccmkit.txt

## api-check: fail, listing each change and whether it breaks callers or implementers,
## when the exported API differs from api/ccmkit.txt (hack/apicheck/doc.go). It reads the
## export data that `make vet`'s go build left in the build cache: a few seconds after it.
api-check:
	@echo "==> exported API matches api/ccmkit.txt"
	@go run ./hack/apicheck api/ccmkit.txt

$(BIN)/golangci-lint:
	@echo "==> installing golangci-lint $(GOLANGCI_LINT_VERSION) (the first time takes about 3 minutes on 2 cores)"
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(BIN)/helm:
	@echo "==> installing helm $(HELM_VERSION) (deploy's test renders the chart with it; the first time takes a few minutes)"
	GOBIN=$(BIN) go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

## lint: golangci-lint with .golangci.yml. bench/peers (the benchmark's peer columns, over
## the AWS SDK) is built and tested by `make peers` and not linted here: it is not part of the library,
## and its lint's cost on top of the cold run was not measured.
lint: $(BIN)/golangci-lint
	@echo "==> golangci-lint"
	$(BIN)/golangci-lint run ./...
	cd e2e && $(BIN)/golangci-lint run ./...
	cd hack/benchplot && $(BIN)/golangci-lint run ./...
	cd examples/hcloud && $(BIN)/golangci-lint run ./...

$(BIN)/mockgen: go.mod
	@echo "==> installing mockgen $(MOCKGEN_VERSION) (the version go.mod pins)"
	GOBIN=$(BIN) go install go.uber.org/mock/mockgen@$(MOCKGEN_VERSION)
	@touch $@

## generate: regenerate the gomock mocks.
generate: $(BIN)/mockgen
	go generate ./...

## docs: rewrite the generated parts of docs/reference/ (the configuration, annotation and
## metrics references), of examples/hcloud/README.md (its section and variables) and the
## Helm chart's admission policy from the code; `make unit` fails when they are stale
## (internal/docgen).
docs:
	CCMKIT_UPDATE_DOCS=1 go test -count=1 -run '^TestDocs' ./provider ./fake ./loadbalancer ./deploy
	cd examples/hcloud && CCMKIT_UPDATE_DOCS=1 go test -count=1 -run '^TestDocs' ./adapter

mocks-check: $(BIN)/mockgen
	@echo "==> mocks are current"
	@before=$$(cat $(MOCKS) | sha256sum); go generate ./...; after=$$(cat $(MOCKS) | sha256sum); \
	if [ "$$before" != "$$after" ]; then echo "generated mocks were stale and have been regenerated: review and commit them"; exit 1; fi

## versions-check: modules built by both e2e and e2e/tools, examples/hcloud or
## bench/peers are at the same versions, so the control-plane build and the
## examples/hcloud and bench/peers builds reuse what the e2e build compiled
## (hack/sharedversions.sh).
versions-check:
	@echo "==> shared module versions of e2e, e2e/tools, examples/hcloud and bench/peers"
	@bash hack/sharedversions.sh

## unit: every package's tests under -race, except those that link the CCM command's
## k8s.io/cloud-provider/app (deploy's manifest checks, examples/restcloud's check of what
## the adapter's command links, examples/ccm's teardown, controllers' wiring, and lbclass's
## InitFunc tests, a file built with !race): under -race they would compile app's whole
## kube apiserver library tree a second time (cold: 540 s vs 411 s), and what they wire
## (lbclass, sweeper, loadbalancer) runs under -race in its own package. They run without
## -race after, lbclass's tests all again. -vet=off here and in e2e because both
## depend on `make vet`, whose full go vet is a superset of the checks go test runs; go
## test's own vet pass would analyze every dependency again (95 s for deploy alone after
## `make vet`, cold).
## hack/benchplot (gonum/plot) and examples/hcloud (hcloud-go), modules of their own, are
## tested last, without -race: examples/hcloud builds at e2e's versions (Kubernetes
## v0.37), not the library's floor, so under -race the whole Kubernetes client tree would
## compile once more, with the race detector, for a mock behind one mutex and an adapter
## without goroutines of its own (the ccmkit packages they use run under -race above);
## without it, it reuses what `make vet` compiled for e2e.
unit: vet $(BIN)/helm
	@echo "==> go test -race (every package with tests but the four that link the CCM's app), go test of those four and lbclass"
	pkgs=$$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... | grep -vxE 'github.com/ccmkit/ccmkit/(deploy|examples/restcloud|examples/ccm|controllers)'); \
	go test -race -vet=off -count=1 -tags admissioncost $$pkgs
	go test -vet=off -count=1 ./deploy ./examples/restcloud ./examples/ccm ./controllers ./lbclass
	cd hack/benchplot && go test -vet=off -count=1 ./...
	cd examples/hcloud && go test -vet=off -count=1 ./...

## compat: build and test the library against the newest patch of each supported Kubernetes
## minor above the floor go.mod requires, and the next minor's newest pre-release (an
## allowed failure) under the Go it requires (GOTOOLCHAIN=go1.27.3 for that target alone,
## fetched from the module proxy), in scratch copies (hack/compat.sh).
## COMPAT_TARGETS='0.35 0.36 0.37 0.38-pre' picks the targets (0.35, the floor, is what
## `make unit` tests under -race).
COMPAT_TARGETS ?= 0.36 0.37 0.38-pre
compat:
	@echo "==> compat: Kubernetes minors $(COMPAT_TARGETS)"
	@COMPAT_TARGETS='$(COMPAT_TARGETS)' bash hack/compat.sh

## vendor-check: `go mod vendor` in two consumer modules (one on cloudapi + fake, built from
## its vendor/; one a CCM on provider, every package resolved from its vendor/ without
## compiling the 1,119 again), their module graphs against docs/versioning.md's table
## (hack/vendorcheck.sh; `bash hack/vendorcheck.sh -w` rewrites the table).
vendor-check:
	@echo "==> vendoring into consumer modules"
	@bash hack/vendorcheck.sh

## e2e: the e2e suite and the demo against kube-apiserver and etcd (see e2e/doc.go). Not
## under -race: the upstream service controller has a data race of its own that the race
## detector reports in the in-process cloud-controller-manager.
e2e: vet controlplane $(BIN)/helm
	@echo "==> e2e: go test ./... in e2e/"
	$(E2E)

E2E = cd e2e && go test -vet=off -count=1 -timeout 20m ./...

## e2e-beside: e2e, with compat and peers run beside it at the lowest CPU priority (nice
## 19): e2e mostly waits on its control plane and its clocks (about a third of two cores
## busy over its ten minutes), so they use the CPU it leaves idle instead of running
## after it. Their output follows e2e's; any of them failing fails the target.
e2e-beside: vet controlplane $(BIN)/helm
	@echo "==> e2e, with compat and the bench/peers build and tests beside it (their output follows)"
	@side=$$(mktemp -d); \
	( nice -n 19 $(MAKE) --no-print-directory compat peers >$$side/log 2>&1; echo $$? >$$side/rc ) & \
	rc=0; ( $(E2E) ) || rc=$$?; wait; \
	cat $$side/log; src=$$(cat $$side/rc); rm -rf $$side; \
	echo "==> e2e exit $$rc; compat and peers exit $$src"; [ $$rc -eq 0 ] && [ $$src -eq 0 ]

## bench: ccmkit against a pass-through baseline provider and the AWS cloud provider's own
## code, and ccmkit over the Hetzner API mock (bench/peers, a module of its own) under the
## upstream controllers at 5,000 Nodes and 1,000 Services (the AWS provider waits 100 ms
## of real time per instance lookup: over an hour; ARGS='-nodes 1000 -services 200' takes a
## quarter of one, ARGS='-peers ccmkit+hcloud' leaves the AWS column out); ARGS='-json FILE'
## also writes JSON.
## ARGS=-sweep runs ccmkit and the baseline (not the peers) at 1,000, 5,000 and 20,000 Nodes with N/5 Services instead, the
## baseline up to 5,000 (-sweep-baseline-nodes): the cost curve, about 45 minutes on 2 busy
## cores; it writes $(SWEEP_DIR)/sweep.json and draws its plots there with hack/benchplot
## (SWEEP_DIR, not -sweep-dir, moves them).
SWEEP_DIR := docs/benchmarks
bench:
	cd bench/peers && go run . -sweep-dir $(abspath $(SWEEP_DIR)) $(ARGS)
	$(if $(findstring -sweep,$(ARGS)),cd hack/benchplot && go run . -in $(abspath $(SWEEP_DIR))/sweep.json)

## bench-fake: the fake cloud's cost per call at 5,000 instances.
bench-fake:
	go test -run '^$$' -bench . -benchmem ./fake

## fuzz: run each fuzz target for FUZZTIME (go test's -fuzztime: a duration, or Nx runs).
## Not part of `make test`: go test runs each target's seed corpus (and testdata/fuzz)
## as a normal test anyway. A find is written to the package's testdata/fuzz; commit it
## with the fix as a regression seed. New interesting inputs are minimized for at most 5 s
## (go's default, 60 s, took most of a short run). One line per target.
FUZZTIME ?= 30s
FUZZ = go test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s -fuzz
fuzz:
	$(FUZZ) '^FuzzReadConfig$$' ./provider
	$(FUZZ) '^FuzzClusterID$$' ./provider
	$(FUZZ) '^FuzzParse$$' ./providerid
	$(FUZZ) '^FuzzFormat$$' ./providerid
	$(FUZZ) '^FuzzParseAnnotations$$' ./loadbalancer
	$(FUZZ) '^FuzzNames$$' ./loadbalancer
	$(FUZZ) '^FuzzAll$$' ./internal/paging
	$(FUZZ) '^FuzzListPageTokens$$' ./internal/instancecache

## benchmarks: regenerate docs/benchmarks.md from a real run (several minutes).
benchmarks:
	bash hack/benchmarks.sh
