# cpid: see README.md. `make demo` runs the main job on a bundled real
# fixture; `make test` runs the tests. Heavy work has its own targets.
GO      ?= go
BIN     := bin/cpid-tui
DEMO_DB ?= $(CURDIR)/demo.db
SCENARIO ?= basic
FUZZTIME ?= 30s

.PHONY: build test demo record experiments bench fuzz vet clean

build:
	$(GO) build -o $(BIN) ./cmd/cpid-tui

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# The default test run: never builds Kubernetes, uses committed fixtures.
test: vet
	$(GO) test -count=1 ./...

# Ingest the bundled real fixture into demo.db and show what is in it.
demo: build
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(BIN) ingest --db $(DEMO_DB) fixtures/basic/bundle
	@echo
	@echo "Stored in $(DEMO_DB). Try: sqlite3 $(DEMO_DB) 'select verb, resource, count(*) from audit_events group by 1, 2 order by 3 desc limit 10'"

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

# Run every fuzz target for FUZZTIME each.
fuzz:
	@for t in $$($(GO) test -list 'Fuzz.*' ./ingest/ | grep ^Fuzz); do \
		echo "== $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./ingest/ || exit 1; \
	done

clean:
	rm -rf bin $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
