# cpid: see README.md. `make demo` runs the main job on a bundled real
# fixture; `make test` runs the tests. Heavy work has its own targets.
GO      ?= go
BIN     := bin/cpid-tui
DEMO_DB ?= $(CURDIR)/demo.db
SCENARIO ?= basic
FUZZTIME ?= 30s

.PHONY: build install docs test demo record experiments bench bench-10m fuzz fuzz-brief vet lint cross clean verify-report \
	verify-export release-snapshot verify-release image verify-deploy verify-webhook-kill

build:
	$(GO) build -o $(BIN) ./cmd/cpid-tui

# Install cpid-tui into $(PREFIX)/bin with kubectl-cpid beside it (a
# symbolic link), which makes it the kubectl plugin `kubectl cpid`, and
# kubectl_complete-cpid, which kubectl (1.26 and later) runs to complete
# `kubectl cpid ...` in a shell. make install PREFIX=$$HOME/.local
PREFIX ?= /usr/local
install: build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/cpid-tui
	ln -sf cpid-tui $(DESTDIR)$(PREFIX)/bin/kubectl-cpid
	printf '#!/bin/sh\n# kubectl runs this to complete `kubectl cpid ...` (kubectl 1.26+).\nexec kubectl-cpid __complete "$$@"\n' > $(DESTDIR)$(PREFIX)/bin/kubectl_complete-cpid
	chmod 0755 $(DESTDIR)$(PREFIX)/bin/kubectl_complete-cpid

# docs/CLI.md from the command tree (cobra's doc generator); TestCLIDocs,
# in make test, fails when it is not current.
docs:
	$(GO) run ./cmd/cpid-tui gen-docs > docs/CLI.md

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# The default test run: never builds Kubernetes, uses committed fixtures.
# The race detector needs cgo and a C compiler (go env CC): without them
# the -race steps are skipped, saying so, and the run without cgo is the
# whole run already.
test: vet
	$(GO) test -count=1 -timeout 30m ./...
	# Modules of their own, which ./... leaves out: the controller-runtime
	# adapter and the example operator (docs/OPERATORS.md).
	cd instrument/controllerruntime && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd examples/webapp-operator && $(GO) vet ./... && $(GO) build -o /dev/null .
	@cc=$$($(GO) env CC); if [ "$$($(GO) env CGO_ENABLED)" != 1 ] || ! command -v $${cc%% *} >/dev/null; then \
		echo "make test: -race steps skipped: they need cgo and a C compiler (CGO_ENABLED=$$($(GO) env CGO_ENABLED), go env CC: $$cc)"; \
	else \
		set -ex; \
		: the concurrent opens and writes of SQLite, and the chunk buffers that; \
		: ingest reuses once their batches are written, the two packages at once; \
		$(GO) test -race -count=1 -run 'Concurrent|ChunkBuffers' ./sqlite/ ./ingest/; \
		: the bulk load of a binary built without cgo, the pure-Go SQLite; \
		CGO_ENABLED=0 $(GO) test -count=1 -run 'Bulk' ./sqlite/; \
	fi

# staticcheck, the version CI runs. A finding that is wrong for this code
# is ignored on its line (//lint:ignore CHECK reason), never tree-wide.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(STATICCHECK) ./...

# The module built and vetted for each platform a release ships, without
# cgo (the pure-Go SQLite; vet skips the files of the C bulk path, which
# need the platform's C compiler).
CROSS ?= darwin/arm64 darwin/amd64 linux/arm64 linux/amd64
cross:
	@for p in $(CROSS); do \
		echo "== $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build ./... && \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet ./... || exit 1; \
	done

# Ingest and reconstruct the bundled real fixture into demo.db, then open
# the terminal UI on it (q quits, ? shows the keys).
demo: build
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(BIN) ingest -q --db $(DEMO_DB) fixtures/basic/bundle
	$(BIN) reconstruct --db $(DEMO_DB)
	@if [ -t 0 ] && [ -t 1 ]; then $(BIN) browse --db $(DEMO_DB); else \
		echo "Not a terminal: run $(BIN) browse --db $(DEMO_DB) in one, or $(BIN) query changes --db $(DEMO_DB)"; fi

# cpid-tui report's HTML in a real headless Chromium (Debian's, installed
# when missing), the network cut off: the report of every real fixture's
# first and largest change at a desktop's and a phone's width
# (tools/browser). make verify-report REPORT_SHOTS=docs rewrites the
# screenshots of docs/REPORT.md.
REPORT_SHOTS ?=
verify-report: build
	@command -v chromium >/dev/null || { echo "installing: chromium"; export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
	cd tools/browser && CPID_TUI=$(CURDIR)/$(BIN) CHROMIUM=$$(command -v chromium) \
		REPORT_SHOTS=$(if $(REPORT_SHOTS),$(abspath $(REPORT_SHOTS))) $(GO) test -count=1 -v .

# cpid-tui export against real receivers: an OpenTelemetry Collector (OTLP
# receiver, file exporter) and Jaeger v2, built from upstream Go modules by
# tools/receivers (a module of its own) into RECEIVERS_BIN (about 10
# minutes the first time, then cached until its go.sum changes), started on
# loopback ports; every real fixture's changes pushed with --otlp-endpoint
# and compared span by span, parents and links (docs/EXPORT.md shows the
# output).
RECEIVERS_BIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cpid/receivers-bin
verify-export:
	RECEIVERS_BIN=$(RECEIVERS_BIN) tools/receivers/build.sh
	CPID_RECEIVERS=$(RECEIVERS_BIN) $(GO) test -count=1 -v -run '^TestExportReceivers$$' ./cmd/cpid-tui

# Versioned archives for linux and darwin on amd64 and arm64, their
# checksums and the krew manifest generated from them, into dist/
# (tools/release; docs/RELEASE.md). VERSION defaults to git describe.
release-snapshot:
	tools/release/snapshot.sh

# The archives of release-snapshot checked: checksums, each binary's
# platform and stamped version, and a krew built from its Go module
# installing the plugin from the generated manifest and archive.
verify-release:
	tools/release/verify.sh

# The audit webhook's kill run (docs/LIVE.md): a real control plane whose
# kube-apiserver posts to cpid-tui serve, killed twice (about 3 minutes);
# what the apiserver gave up on is lost, nothing serve acknowledged is.
verify-webhook-kill:
	rm -rf /tmp/cpid-webhook-kill
	WEBHOOK_KILL=2 flock /tmp/cpid-realcp.lock fixtures/recorder/record.sh webhook /tmp/cpid-webhook-kill
	CPID_WEBHOOK_KILL_RUN=/tmp/cpid-webhook-kill $(GO) test -count=1 -v -run '^TestWebhookKillRun$$' ./cmd/cpid-tui

# The container image of serve as an OCI tarball, built without a Docker
# daemon (deploy/image; docs/DEPLOY.md).
image:
	deploy/image/build.sh

# deploy/ (kustomize) applied with --dry-run=server to a real kube-apiserver
# (the recorder's binaries), and the image's user, entrypoint and labels
# read back.
verify-deploy:
	deploy/verify.sh

# Record a fixture from a real control plane (builds Kubernetes on first use,
# about 10 minutes): make record SCENARIO=basic
record:
	fixtures/recorder/record.sh $(SCENARIO) fixtures/$(SCENARIO)

# The CPID paper's section 5 experiments on a real control plane (about 30
# minutes; builds Kubernetes on first use); writes docs/EXPERIMENTS.md.
experiments:
	fixtures/experiments.sh

# Benchmarks; writes docs/BENCHMARKS.md.
bench: build
	fixtures/bench.sh

# Ten million synthetic events (about 20 GB decoded, several GB on disk):
# ingest, reconstruct, the queries and the TUI keys on SQLite and
# PostgreSQL (PG_EVENTS of them), then incremental runs of 10,000 more
# events against the same alone (cmd/incbench, INC_RUNS); writes its
# section of docs/BENCHMARKS.md, which make bench keeps. Not part of make
# bench.
bench-10m: build
	fixtures/bench10m.sh

# Run every fuzz target for FUZZTIME each.
fuzz:
	@for p in ./ingest/ ./ingest/jsonscan/ ./reconstruct/ ./export/; do \
		for t in $$($(GO) test -list 'Fuzz.*' $$p | grep ^Fuzz); do \
			echo "== $$p $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
		done; \
	done

# The redaction and audit-decoder fuzz targets, and the shared JSON reader
# against encoding/json (alone and as reconstruct reads bodies), briefly
# (CI runs this). The budgets count executions (about 15 s each on the
# project's machine; BRIEF overrides them all): with a duration, Go 1.26's
# fuzz coordinator can report its own deadline as the target's failure,
# "context deadline exceeded" with no failing input (golang/go#75804, fixed
# in Go 1.27), which failed CI once. A new input is minimized for 5 s at
# most, not 60: the minimizing stalled the count for a minute.
fuzz-brief:
	$(GO) test -run '^$$' -fuzz '^FuzzRedact$$' -fuzztime $(or $(BRIEF),100000x) -fuzzminimizetime 5s ./ingest/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAudit$$' -fuzztime $(or $(BRIEF),5000x) -fuzzminimizetime 5s ./ingest/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(BRIEF),300000x) -fuzzminimizetime 5s ./ingest/jsonscan/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBody$$' -fuzztime $(or $(BRIEF),500000x) -fuzzminimizetime 5s ./reconstruct/

clean:
	rm -rf bin dist $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
