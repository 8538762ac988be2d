# kmx: the two commands that matter are `make demo` and `make test`.
# Everything either needs is installed by name from the Go module proxy or
# Debian's packages; nothing is downloaded from anywhere else.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(CURDIR)/.tools/bin
KMX := $(BIN)/kmx

# Pinned tool versions (generated code depends on them: see `make proto`).
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.5.1
STATICCHECK_VERSION := v0.8.2

# TEST_TAGS: the Go tests run as a test build. kmxtest compiles in
# the live GitHub read's test-only endpoint override (sidecar/internal/ghread,
# endpoint_kmxtest.go); no release build (build, package) ever sets it.
TEST_TAGS := kmxtest

export PATH := $(TOOLS):$(PATH)

.PHONY: all build demo test test-fast test-go test-ext-unit test-e2e package install-extension node_modules lint tidy-check protocol-check vet vet-cross fmt-check staticcheck proto protocol tools mcp-tools test-mcp bench bench-compare fuzz fuzz-reply fuzz-reply-ref clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(KMX) ./sidecar/cmd/kmx

## demo: build kmx and test the demo agent files on the fake model (embedded, journaled).
demo: build
	@bash scripts/demo.sh $(KMX)

## test: everything CI checks, the real-VS-Code test included. Installs what it needs by name.
test: tools lint test-go test-ext-unit test-e2e

## test-fast: everything but the real-VS-Code test, for the inner loop.
test-fast: lint test-go test-ext-unit

## test-go: every Go test as a test build, then ghread's release-build tests
## (no override; they also build kmx as package.sh does and look inside it).
## -timeout 30m: a clean clone on a loaded CI machine builds kmx cold
## several times (release flags bypass the build cache); 10 m is go's default.
test-go:
	$(GO) test -count=1 -timeout 30m -tags $(TEST_TAGS) ./...
	$(GO) test -count=1 -timeout 30m ./sidecar/internal/ghread/...

lint: fmt-check tidy-check protocol-check vet vet-cross staticcheck

## protocol-check: the generated TypeScript contract, package.json's commands and settings and docs/protocol.md's tables are what the Go contract makes them (make protocol regenerates them).
protocol-check:
	$(GO) test -count=1 -run 'TestKMXProtocolIsCurrent|TestPackageJSONIsCurrent|TestProtocolDocIsCurrent|TestLSPDispatchIsCurrent|TestEveryCommandAndSettingIsDeclared' ./sidecar/internal/protocolgen

## tidy-check: go.mod and go.sum are what `go mod tidy` makes them (direct modules not marked indirect).
tidy-check:
	$(GO) mod tidy -diff

fmt-check:
	@out=$$(gofmt -l sidecar); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags $(TEST_TAGS) ./...

## vet-cross: the sidecar builds and vets for every platform the extension ships.
vet-cross:
	GOOS=windows GOARCH=amd64 $(GO) vet ./...
	GOOS=windows GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...

staticcheck: $(TOOLS)/staticcheck
	$(TOOLS)/staticcheck ./...
	$(TOOLS)/staticcheck -tags $(TEST_TAGS) ./...

## proto: regenerate the committed gRPC code from shared/proto.
proto: tools
	@bash scripts/genproto.sh sidecar/internal/sessionspb

node_modules: package.json package-lock.json
	npm ci --loglevel=error
	@touch node_modules

## test-ext-unit: type-check the extension and run its unit tests (node --test).
test-ext-unit: node_modules
	npm run -s typecheck
	npm run -s test:unit

## test-e2e: the extension in a real VS Code (code-server + Chromium); screenshots in out/e2e/.
test-e2e: node_modules
	bash scripts/e2e-test.sh

## package: the sidecar for linux, darwin and windows on x64 and arm64, one .vsix per target in dist/.
## TARGETS=current builds only this machine's (TARGETS="linux-x64 darwin-arm64" names some).
TARGETS ?=
package: node_modules
	bash scripts/package.sh $(TARGETS)

## install-extension: build this machine's .vsix and install it into your VS Code (`code` on PATH).
install-extension: node_modules
	@command -v code >/dev/null || { echo "install-extension: the 'code' command is not on PATH; in VS Code run 'Shell Command: Install code command in PATH', or install dist/*.vsix with Extensions: Install from VSIX..."; exit 1; }
	code --install-extension "$$(bash scripts/package.sh current | tail -n 1)" --force

## protocol: regenerate what crosses the language boundary from the Go contract (sidecar/internal/lsp): shared/protocol/kmx-protocol.ts, the language server's dispatch table (sidecar/internal/lsp/methods_gen.go), package.json's contributes.commands and contributes.configuration, docs/protocol.md's generated tables.
protocol:
	$(GO) run ./sidecar/cmd/kmx-protocolgen

## mcp-tools: install Node 24, the MCP inspector and the conformance suite into the test cache.
mcp-tools:
	bash scripts/mcp-tools.sh

test-mcp: mcp-tools
	$(GO) test -count=1 -run 'TestInspectorCLI|TestConformance' ./sidecar/internal/mcpserver
	$(GO) test -count=1 -tags $(TEST_TAGS) -run 'TestConformanceClient' ./sidecar/internal/ghread

tools: $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/staticcheck /usr/bin/protoc

$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

/usr/bin/protoc:
	@if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq protobuf-compiler; \
	else echo "protoc is missing: run 'sudo apt-get install protobuf-compiler'"; exit 1; fi

## bench: the performance targets, as Go benchmarks (figures go to docs/benchmarks.md).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./sidecar/...

## bench-compare: whole-process throughput beside the floor program (and Waza with WAZA=path); see docs/benchmarks.md.
bench-compare:
	bash scripts/bench-compare.sh

## fuzz: run the parser fuzz target (FUZZTIME=5m for the full run).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./sidecar/internal/agentfile

## fuzz-reply: the strict reply decoder's own checks; fuzz-reply-ref: the same
## decoder against the Decoder-based reference it replaced (same results, same
## error text; see docs/benchmarks.md "Compatible route").
fuzz-reply:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeReply$$' -fuzztime $(FUZZTIME) ./sidecar/internal/route

fuzz-reply-ref:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeReplyMatchesReference$$' -fuzztime $(FUZZTIME) ./sidecar/internal/route

clean:
	rm -rf $(BIN)
