# reaper — the two commands a newcomer needs are `make run` and `make test`.
GO        ?= go
TOOLS     := $(CURDIR)/.tools/bin
VERSITYGW := $(TOOLS)/versitygw
FAKEGCS   := $(TOOLS)/fake-gcs-server
AZURITE   := $(TOOLS)/azurite-blob
DYNALITE  := $(TOOLS)/dynalite-server
DEMO_DIR  ?= $(CURDIR)/var/demo
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
## GOGC: the Go compiler and linker spend about a fifth of a cold build collecting garbage at Go's
## default (100); 400 cut a cold build of arrow's Parquet writer from 124 s to 102 s on 2 cores, for
## 1.5 GB peak memory instead of 1.2. Set GOGC to choose another; the suites inherit it too (none of
## them measures memory).
GOGC      ?= 400
export GOGC
## GOFLAGS gains -tags=arrow_json_stdlib, arrow-go's own switch from goccy/go-json to encoding/json
## for arrow's JSON helpers: the ledger writes Parquet and never arrow JSON, and goccy's generated
## encoders took 31 s of CPU in each cold build (./bin/reaper's and the race build's). Every go
## command make runs gets it, so the builds still share their compiled packages.
export GOFLAGS := $(strip $(GOFLAGS) -tags=arrow_json_stdlib)
# GOBUILD is the one way a reaper binary is built: ./bin/reaper (the binary every test runs) and the
# image's binaries (make image) differ only in GOOS/GOARCH and -o. scripts/progress.sh turns go build
# -v's package names into a line every 100 packages, and one after 20 s without one, so a cold build
# (minutes: every module downloaded and compiled) is never silent.
GOBUILD    = CGO_ENABLED=0 scripts/progress.sh "go build" $(GO) build -v -trimpath -ldflags "$(LDFLAGS)"

.PHONY: run test unit lint build tools clean model

## run: seed a demo database root under ./var/demo and run one purge pass on it
run: build
	./bin/reaper demo --dir $(DEMO_DIR)

## test: every test, with the race detector, against memory, local disk, a real S3 server, the GCS and
## Azure emulators and the real LanceDB client (installs the test servers and the npm packages on first
## use). The Go builds (./bin/reaper, then the Go-built test servers) run beside the downloads and
## unpacking of the others, their lines as they come (no --output-sync: it held each install's
## "installing (about N min)" line back until its "done"); vet, the Go suites, the fuzz targets and
## deploy/ then run one after another
## (side by side on 2 cores they starve the lease tests' timers), each step announced with the time
## since the start. While go test runs, prebuild compiles the later steps' packages at the lowest
## CPU priority.
test:
	@start=$$(date +%s); at() { s=$$(( $$(date +%s) - start )); printf '[%d:%02d]' $$((s / 60)) $$((s % 60)); }; \
	step() { echo "make test: $$(at) $$1"; shift; $(MAKE) --no-print-directory "$$@" || { echo "make test: $$(at) FAILED in: $$*"; exit 1; }; }; \
	step "compiling ./bin/reaper, then versitygw and fake-gcs-server, beside installing what is missing of: Azurite, dynalite and the LanceDB client (npm), spin and gcc (sudo apt-get install), promtool, the Pushgateway and node_exporter (Debian's prometheus, prometheus-pushgateway and prometheus-node-exporter, downloaded with apt-get and unpacked into .tools/bin) (first time about 5 min on 2 cores; later seconds)" -j4 go-builds other-tools fmt interop-deps && \
	step "go vet with go test's race build (first time about 3 min: it compiles that build; later seconds)" vet && \
	{ scripts/background.sh $(MAKE) --no-print-directory prebuild >/dev/null 2>&1 & pb=$$!; trap 'kill -- -$$pb 2>/dev/null' EXIT; } && \
	step "go test -race, test/chaos first (about 5 min; a package unchanged since it passed prints (cached)), with the fuzz and deploy/ builds niced beside it" gotest && \
	{ kill -0 $$pb 2>/dev/null && echo "make test: $$(at) finishing the fuzz and deploy/ builds started beside go test (first time about 1 min)"; wait $$pb; true; } && \
	step "fuzzing each target for 10,000 inputs (about 15 s once built)" fuzz-test && \
	step "deploy/: the image, Kubernetes, Prometheus and Grafana checks (about 30 s once built)" deploy-check-only && \
	echo "make test: $$(at) all passed"

## TESTFLAGS: go test's result cache is on, so a later make test re-runs only the packages whose code,
## test files, environment, ./bin/reaper or test servers changed (a package whose tests passed is printed
## "(cached)"); TESTFLAGS=-count=1 re-runs everything.
TESTFLAGS ?=
## TEST_TMPDIR: where the Go suites' temporary files go (TMPDIR): a directory on /dev/shm when that is a
## tmpfs with room (scripts/test-tmpdir.sh says why: ext4 slows inode allocation after mass deletes,
## which the crash suites do thousands of times); TEST_TMPDIR= keeps $$TMPDIR.
TEST_TMPDIR ?= $(shell scripts/test-tmpdir.sh)
## gotest names test/chaos first: go test starts suites in the order it is given them, and chaos, the
## longest (about 3 min), then runs while the others build and run instead of after them. -vet=off:
## make test's vet step, just before, ran go vet's full set of checks (a superset of the ones go test
## runs) on the same packages with the same flags. -ldflags=-w: no DWARF in the test binaries (about a
## sixth of each race link; stack traces and race reports do not use it). GORACE atexit_sleep_ms=0:
## the race runtime otherwise sleeps 1 s as each test binary exits, holding one of go test's two
## slots idle; a race found during a test fails that test before the binary exits.
.PHONY: gotest fuzz-test deploy-check-only
gotest:
	@$(if $(TEST_TMPDIR),mkdir -p "$(TEST_TMPDIR)" && echo "make test: temporary files in $(TEST_TMPDIR) (tmpfs; TEST_TMPDIR= for \$$TMPDIR)")
	$(if $(TEST_TMPDIR),TMPDIR="$(TEST_TMPDIR)") \
	GORACE="$(strip atexit_sleep_ms=0 $(GORACE))" \
	REAPER_TEST_BIN=$(CURDIR)/bin/reaper REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 REAPER_REQUIRE_SPIN=1 \
	  REAPER_REQUIRE_MOUNTS=1 REAPER_FAKE_GCS=$(FAKEGCS) REAPER_REQUIRE_GCS=1 \
	  REAPER_AZURITE=$(AZURITE) REAPER_REQUIRE_AZURE=1 REAPER_DYNALITE=$(DYNALITE) REAPER_REQUIRE_DDB=1 \
	  $(GO) test -race -vet=off -ldflags=-w $(TESTFLAGS) -timeout 25m ./test/chaos ./...

fuzz-test:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

## prebuild: what make test's last two steps compile (the fuzz targets' instrumented test binaries,
## deploy/'s vet and test build), run by make test at the lowest priority beside go test
## (scripts/background.sh): the suites wait much of the time (on timers, child processes and the test
## servers), and a cold go test step left about an eighth of the 2 cores idle. At that priority it
## yields the CPU to any suite that wants it; the steps then find their packages in the build cache.
## Its failures are the steps' to report.
.PHONY: prebuild
prebuild:
	@for pkg in $(sort $(foreach t,$(FUZZ_TARGETS),$(firstword $(subst :, ,$(t))))); do \
	  $(FUZZ_GOTEST) -c -fuzz Fuzz -o /dev/null $$pkg; \
	done
	cd deploy && $(DEPLOY_GOVET)
	cd deploy && $(DEPLOY_GOTEST) -c -o /dev/null ./...

## make test fuzzes each target for a count of inputs, not a duration: Go 1.26's fuzz coordinator can
## fail a duration-bounded run with a bare "context deadline exceeded" when a loaded machine starves its
## workers at the deadline (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
TEST_FUZZTIME ?= 10000x

## unit: the tests without installing anything (S3 tests skip unless a server is found)
unit:
	$(GO) test -race ./...

## lint: gofmt and go vet must be clean
.PHONY: fmt vet
lint: fmt vet
fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
## vet builds with go test's flags (-race): the packages it compiles are then the ones go test reuses,
## where a plain go vet compiled every dependency a second time (about 3 of a cold run's minutes)
vet:
	$(GO) vet -race ./...

## build: a static binary in ./bin (the same command builds the image's binaries). An unchanged
## binary is left in place, not rewritten: go test's result cache keys on ./bin/reaper's mtime, and a
## fresh copy of the same bytes re-ran every suite that runs it.
build:
	@[ -x bin/reaper ] || echo "compiling ./bin/reaper: the first time downloads and compiles every module, about 3 min on 2 cores; later about 20 s"
	$(GOBUILD) -o bin/.reaper.new ./cmd/reaper
	@if cmp -s bin/.reaper.new bin/reaper; then rm bin/.reaper.new; else mv bin/.reaper.new bin/reaper; fi

## image: the release image with no base image (deploy/image): reaper for each of IMAGE_PLATFORMS, built
## like ./bin/reaper, in one OCI image index written to var/image/oci. IMAGE=<registry>/reaper:<tag>
## also pushes it (docker's credentials); no Docker engine is needed.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE           ?=
IMAGE_BINS       = $(foreach p,$(IMAGE_PLATFORMS),var/image/reaper-$(subst /,-,$(p)))
.PHONY: image FORCE
image: $(IMAGE_BINS)
	cd deploy && $(GO) run ./cmd/reaper-image --out ../var/image/oci --version $(VERSION) \
	  --revision "$$(git rev-parse HEAD 2>/dev/null)" --source-date-epoch "$$(git log -1 --format=%ct 2>/dev/null || echo 0)" \
	  $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=../var/image/reaper-$(subst /,-,$(p))) $(if $(IMAGE),--push $(IMAGE))
var/image/reaper-%: FORCE
	GOOS=$(word 1,$(subst -, ,$*)) GOARCH=$(word 2,$(subst -, ,$*)) $(GOBUILD) -o $@ ./cmd/reaper

.PHONY: go-tools other-tools go-builds
## tools: install the versitygw S3 and fake-gcs-server GCS test servers into .tools/bin, the Azurite
## Azure Blob and dynalite DynamoDB test servers (npm, into .tools), the spin model checker (apt), and promtool and the
## Pushgateway (Debian's packages unpacked into .tools/bin, no service started)
tools: go-tools other-tools
## go-tools: the Go-built test servers, built in tools/ (whose go.mod pins them and holds every module
## they share with reaper at reaper's version) with ./bin/reaper's flags (CGO_ENABLED=0, -trimpath),
## so they reuse the packages ./bin/reaper's build compiled
go-tools:
	scripts/install-versitygw.sh
	scripts/install-fake-gcs-server.sh
other-tools:
	scripts/install-azurite.sh
	scripts/install-dynalite.sh
	scripts/install-spin.sh
	scripts/install-promtools.sh
## go-builds: ./bin/reaper, then the Go-built test servers, one build at a time: each already uses every
## core, and one after another the standard library compiles once, where side by side each build
## compiled it for itself
go-builds:
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory go-tools

## model: the spin model checks of docs/PROTOCOL.md and of retention's record alone (model/; make test runs them too)
model:
	scripts/install-spin.sh
	REAPER_REQUIRE_SPIN=1 $(GO) test -count=1 -v ./model/

clean:
	rm -rf bin var

## bench: purge benchmark vs the raw floor (bench/floor), awscli, rclone and rm -rf on a local versitygw, and reaper on a local
## fake-gcs-server (emulator figures); writes BENCHMARKS.md (installs missing peers and test servers,
## builds reaper; BENCH_ARGS=--quick for a shorter run)
BENCH_ARGS ?=
.PHONY: bench
bench:
	$(GO) run ./bench $(BENCH_ARGS)

## interop: reaper against the real LanceDB client (npm @lancedb/lancedb) on a local root, on S3 and on Azurite
INTEROP := test/interop
.PHONY: interop interop-deps
interop: tools build interop-deps
	REAPER_TEST_BIN=$(CURDIR)/bin/reaper REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 \
	  REAPER_AZURITE=$(AZURITE) REAPER_REQUIRE_AZURE=1 REAPER_DYNALITE=$(DYNALITE) REAPER_REQUIRE_DDB=1 \
	  $(GO) test -race -count=1 -timeout 10m ./$(INTEROP)/...

## interop-deps: install the pinned LanceDB client into test/interop/node_modules (npm install, the committed lock)
interop-deps: $(INTEROP)/node_modules/.package-lock.json

# npm install, not npm ci (builds for other platforms are not served) and
# never --omit=optional (the native binary is an optional dependency).
$(INTEROP)/node_modules/.package-lock.json: $(INTEROP)/package.json $(INTEROP)/package-lock.json
	@scripts/check-node.sh
	@echo "installing the LanceDB npm client into $(INTEROP)/node_modules (about 230 MB, 1-2 min once)"
	cd $(INTEROP) && npm install --no-audit --no-fund
	@touch $@

## rules: write deploy/prometheus/reaper-rules.yml, the plain Prometheus rule file, from the
## PrometheusRule deploy/prometheus/prometheusrule.yaml (deploy's tests fail while it is stale)
.PHONY: rules
rules:
	cd deploy && $(GO) run ./cmd/reaper-rules

## deploy-check: deploy/ (the image, Kubernetes, Prometheus, Grafana) against ./bin/reaper and a real
## pass's metrics; deploy/ is its own Go module, so k8s, kustomize and Prometheus stay out of go.mod.
## It builds with ./bin/reaper's flags (CGO_ENABLED=0, -trimpath) to share the standard library's
## compiled packages with it; its go test skips vet, which go vet has just run.
.PHONY: deploy-check deploy-check-only
deploy-check: tools build
	@$(MAKE) --no-print-directory deploy-check-only

## DEPLOY_GOVET, DEPLOY_GOTEST: deploy/'s go commands, which make prebuild runs too: with other flags
## its builds would not be the ones deploy-check-only reuses.
DEPLOY_GOVET  = CGO_ENABLED=0 $(GO) vet -trimpath ./...
DEPLOY_GOTEST = CGO_ENABLED=0 $(GO) test -trimpath -vet=off
deploy-check-only:
	cd deploy && test -z "$$(gofmt -l .)" || { echo "gofmt needed in deploy/:"; gofmt -l .; exit 1; }
	cd deploy && $(DEPLOY_GOVET)
	cd deploy && REAPER_VERSITYGW=$(VERSITYGW) REAPER_PROMTOOL=$(TOOLS)/promtool REAPER_PUSHGATEWAY=$(TOOLS)/pushgateway REAPER_NODE_EXPORTER=$(TOOLS)/node_exporter $(DEPLOY_GOTEST) -count=1 -timeout 15m ./...

## chaos: the fault-injection, crash, race, replica and bad-input suites alone (the short versions
## `make test` runs too); REAPER_TEST_CHAOS_SEED=N replays a run (test/chaos/main_test.go lists the knobs)
## soak: the long chaos suites (REAPER_TEST_SOAK=1: 2000 local kills and 400 on each of S3, GCS and
## Azure, 12 fault seeds, 60 race and 20 replica rounds, a -race reaper binary), then every fuzz target
## for FUZZTIME (default 2m) each
## fuzz-short: every fuzz target for 10s (FUZZTIME=10s make fuzz)
FUZZTIME ?= 2m
FUZZ_TARGETS := ./internal/lifecycle:FuzzParseMarker ./internal/lifecycle:FuzzValidateName \
	./internal/objstore:FuzzParseLocation ./internal/objstore/s3/s3opt:FuzzParseOptions \
	./internal/objstore/gcs/gcsopt:FuzzParseOptions ./internal/lock:FuzzParseLease
## FUZZ_TAGS: -fuzz instruments every package its test binary links, the standard library included.
## Test files that bring the conformance harness (every backend, its SDK, arrow) carry
## `//go:build !fuzzonly`, so the fuzz build links the parsers, their package and testify: about 230
## packages, not 730 (internal/fuzzbuild_test.go keeps it so). Plain go test builds every file.
FUZZ_TAGS := fuzzonly
## FUZZ_GOTEST: the go test of every fuzz build, make fuzz's and make prebuild's alike
FUZZ_GOTEST = $(GO) test -tags $(FUZZ_TAGS)
.PHONY: chaos soak fuzz fuzz-short
chaos: tools build
	REAPER_TEST_BIN=$(CURDIR)/bin/reaper REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 \
	  REAPER_FAKE_GCS=$(FAKEGCS) REAPER_REQUIRE_GCS=1 REAPER_AZURITE=$(AZURITE) REAPER_REQUIRE_AZURE=1 \
	  REAPER_DYNALITE=$(DYNALITE) REAPER_REQUIRE_DDB=1 $(GO) test -race -count=1 -timeout 20m ./test/chaos/

soak: tools
	REAPER_TEST_SOAK=1 REAPER_TEST_CHAOS_RACE_BIN=1 REAPER_VERSITYGW=$(VERSITYGW) REAPER_REQUIRE_S3=1 \
	  REAPER_FAKE_GCS=$(FAKEGCS) REAPER_REQUIRE_GCS=1 REAPER_AZURITE=$(AZURITE) REAPER_REQUIRE_AZURE=1 \
	  REAPER_DYNALITE=$(DYNALITE) REAPER_REQUIRE_DDB=1 $(GO) test -race -count=1 -timeout 8h -v ./test/chaos/
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
	  $(FUZZ_GOTEST) -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

fuzz-short:
	$(MAKE) fuzz FUZZTIME=10s
