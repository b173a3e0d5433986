# reaper — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
TOOLS     := $(CURDIR)/.tools/bin
VERSITYGW := $(TOOLS)/versitygw
DEMO_DIR  ?= $(CURDIR)/var/demo
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)

.PHONY: run test unit lint build tools clean model

## run: seed a demo database root under ./var/demo and run one purge pass on it
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/reaper demo --dir $(DEMO_DIR)

## test: every test, with the race detector, against memory, local disk, a real S3 server and the
## real LanceDB client (installs versitygw and the npm packages on first use)
test: tools lint build interop-deps
	REAPER_TEST_BIN=$(CURDIR)/bin/reaper REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 REAPER_REQUIRE_SPIN=1 \
	  $(GO) test -race -count=1 -timeout 25m ./...
	$(MAKE) fuzz FUZZTIME=5s
	$(MAKE) deploy-check

## unit: the tests without installing anything (S3 tests skip unless a server is found)
unit:
	$(GO) test -race ./...

## lint: gofmt and go vet must be clean
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## build: a static binary in ./bin (the same flags deploy/Dockerfile uses)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/reaper ./cmd/reaper

## tools: install the versitygw S3 test server into .tools/bin, the spin model checker (apt), and promtool and
## the Pushgateway (Debian's packages unpacked into .tools/bin, no service started)
tools:
	scripts/install-versitygw.sh
	scripts/install-spin.sh
	scripts/install-promtools.sh

## model: the spin model check of docs/PROTOCOL.md alone (model/; make test runs it too)
model:
	scripts/install-spin.sh
	REAPER_REQUIRE_SPIN=1 $(GO) test -count=1 -v ./model/

clean:
	rm -rf bin var

## bench: purge benchmark vs awscli, rclone and rm -rf on a local versitygw; writes BENCHMARKS.md
## (installs missing peers and versitygw, builds reaper; BENCH_ARGS=--quick for a shorter run)
BENCH_ARGS ?=
.PHONY: bench
bench:
	$(GO) run ./bench $(BENCH_ARGS)

## interop: reaper against the real LanceDB client (npm @lancedb/lancedb) on a local root and on S3
INTEROP := test/interop
.PHONY: interop interop-deps
interop: tools build interop-deps
	REAPER_TEST_BIN=$(CURDIR)/bin/reaper REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 $(GO) test -race -count=1 -timeout 10m ./$(INTEROP)/...

## interop-deps: install the pinned LanceDB client into test/interop/node_modules (npm install, the committed lock)
interop-deps: $(INTEROP)/node_modules/.package-lock.json

# npm install, not npm ci (builds for other platforms are not served) and
# never --omit=optional (the native binary is an optional dependency).
$(INTEROP)/node_modules/.package-lock.json: $(INTEROP)/package.json $(INTEROP)/package-lock.json
	cd $(INTEROP) && npm install --no-audit --no-fund
	@touch $@

## deploy-check: deploy/ (Dockerfile, Kubernetes, Prometheus, Grafana) against ./bin/reaper and a real
## pass's metrics; deploy/ is its own Go module, so k8s, kustomize and Prometheus stay out of go.mod
.PHONY: deploy-check
deploy-check: tools build
	cd deploy && test -z "$$(gofmt -l .)" || { echo "gofmt needed in deploy/:"; gofmt -l .; exit 1; }
	cd deploy && $(GO) vet ./...
	cd deploy && REAPER_VERSITYGW=$(VERSITYGW) REAPER_PROMTOOL=$(TOOLS)/promtool REAPER_PUSHGATEWAY=$(TOOLS)/pushgateway $(GO) test -count=1 -timeout 15m ./...

## chaos: the fault-injection, crash, race, replica and bad-input suites alone (the short versions
## `make test` runs too); REAPER_TEST_CHAOS_SEED=N replays a run (test/chaos/main_test.go lists the knobs)
## soak: the long chaos suites (REAPER_TEST_SOAK=1: 2000 local and 400 S3 kills, 12 fault seeds, 60 race
## and 20 replica rounds, a -race reaper binary), then every fuzz target for FUZZTIME (default 2m) each
## fuzz-short: every fuzz target for 10s (FUZZTIME=10s make fuzz)
FUZZTIME ?= 2m
FUZZ_TARGETS := ./internal/lifecycle:FuzzParseMarker ./internal/lifecycle:FuzzValidateName \
	./internal/objstore:FuzzParseLocation ./internal/objstore/s3:FuzzParseOptions ./internal/lock:FuzzParseLease
.PHONY: chaos soak fuzz fuzz-short
chaos: tools build
	REAPER_TEST_BIN=$(CURDIR)/bin/reaper REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 \
	  $(GO) test -race -count=1 -timeout 20m ./test/chaos/

soak: tools
	REAPER_TEST_SOAK=1 REAPER_TEST_CHAOS_RACE_BIN=1 REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 \
	  $(GO) test -race -count=1 -timeout 8h -v ./test/chaos/
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

fuzz-short:
	$(MAKE) fuzz FUZZTIME=10s
