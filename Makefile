# ccmkit development targets. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

BIN := $(CURDIR)/.bin
export PATH := $(BIN):$(PATH)
MOCKGEN_VERSION := $(shell go list -m -f '{{.Version}}' go.uber.org/mock)
GOLANGCI_LINT_VERSION := v2.15.0
MOCKS := $(shell git ls-files '*/cloudapimock/*.go' 2>/dev/null)

.PHONY: test demo fmt-check vet lint mocks-check unit generate bench-fake benchmarks

## demo: the upstream node controllers against the ccmkit provider on the embedded fake cloud.
demo:
	go run ./examples/demo

## test: everything CI checks: formatting, vet, lint, generated mocks, race-enabled tests.
test: fmt-check vet lint mocks-check unit

fmt-check:
	@echo "==> gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@echo "==> go vet"
	go vet ./...

$(BIN)/golangci-lint:
	@echo "==> installing golangci-lint $(GOLANGCI_LINT_VERSION) (the first time takes a minute or two)"
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

## lint: golangci-lint with .golangci.yml.
lint: $(BIN)/golangci-lint
	@echo "==> golangci-lint"
	$(BIN)/golangci-lint run ./...

$(BIN)/mockgen: go.mod
	@echo "==> installing mockgen $(MOCKGEN_VERSION) (the version go.mod pins)"
	GOBIN=$(BIN) go install go.uber.org/mock/mockgen@$(MOCKGEN_VERSION)
	@touch $@

## generate: regenerate the gomock mocks.
generate: $(BIN)/mockgen
	go generate ./...

mocks-check: $(BIN)/mockgen
	@echo "==> mocks are current"
	@before=$$(cat $(MOCKS) | sha256sum); go generate ./...; after=$$(cat $(MOCKS) | sha256sum); \
	if [ "$$before" != "$$after" ]; then echo "generated mocks were stale and have been regenerated: review and commit them"; exit 1; fi

unit:
	@echo "==> go test -race ./..."
	go test -race -count=1 ./...

## bench-fake: the fake cloud's cost per call at 5,000 instances.
bench-fake:
	go test -run '^$$' -bench . -benchmem ./fake

## benchmarks: regenerate docs/benchmarks.md from a real run (several minutes).
benchmarks:
	bash hack/benchmarks.sh
