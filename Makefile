# strata — see README.md. `make test` is what CI runs.
SHELL := /bin/bash
GO        ?= go
FUZZTIME  ?= 30s
BENCHDIR  ?= $(shell mktemp -u /tmp/strata-bench.XXXXXX)
PKGS       = ./...
# staticcheck, pinned to 2026.2.2 (module version v0.8.2), a release that
# loads Go 1.26 code; `go run` fetches and builds it through the module proxy
# on a fresh machine (and caches it after).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# The version and commit "strata --version" prints when the binary carries no
# VCS stamp of the go command (GOFLAGS=-buildvcs=false, a git worktree).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   ?= -X github.com/stratalog/strata/tools.version=$(VERSION) -X github.com/stratalog/strata/tools.commit=$(COMMIT)

.PHONY: build ldflags test staticcheck vet fmt-check unit sim crash fuzz fuzz-short bench bench-peers run deps cluster soak soak-faults soak-sim

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o strata .

# ldflags prints the link flags of build (tools/version_test.go builds with them).
ldflags:
	@echo '$(LDFLAGS)'

# run: the main job: a single-node broker on 127.0.0.1:9092 with data in ./data.
run: build
	./strata broker

# cluster: a local cluster: ZooKeeper on 127.0.0.1:2181 and three brokers
# on 127.0.0.1:9092-9094 with ./data-1..3 (scripts/cluster.sh); Ctrl-C
# stops them all.
cluster: build
	@bash scripts/cluster.sh

deps:
	@bash scripts/deps.sh

test: deps fmt-check vet staticcheck unit sim crash fuzz-short

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

# unit runs the tests in a random order (-shuffle=on prints the seed; rerun
# a failure with -shuffle=SEED) under the race detector.
unit:
	$(GO) test -race -count=1 -shuffle=on -timeout 20m -skip '^TestCrashConsistency$$' $(PKGS)

# soak runs the long versions of the tests that have one; each adds itself
# as a prerequisite.
soak: soak-faults soak-sim

# soak-faults runs the fault scenarios of internal/faults (real ZooKeeper,
# three broker processes; `make test` runs each fault once) with
# FAULT_ROUNDS faults per scenario, verbosely: the measurements (failover
# after SIGKILL, stalls under SIGTERM) are printed at the end.
FAULT_ROUNDS ?= 5
soak-faults:
	@set -o pipefail; STRATA_FAULTS_ROUNDS=$(FAULT_ROUNDS) $(GO) test -race -count=1 -timeout 0 -run '^TestFaults$$' -v ./internal/faults/ | grep -v '^=== RUN'

# sim runs the deterministic cluster simulation (internal/sim) over SIM_SEEDS
# seeds without the race detector (the unit tests run a few under it). A
# failing seed prints its replay line (SIM_SEED=n ...) and the end of its
# trace; the summary line gives seeds/s and what the faults did.
SIM_SEEDS ?= 500
sim:
	@set -o pipefail; SIM_SEEDS=$(SIM_SEEDS) $(GO) test -count=1 -timeout 30m -run '^TestSimSweep$$' -v ./internal/sim/ | grep -v '^=== RUN'

# soak-sim runs the simulation long: SOAK_SEEDS seeds of SOAK_DURATION_MS simulated
# ms each, from a base that changes every run (SIM_SEED_BASE=n to pin it),
# reporting every failing seed (each replays with the printed SIM_SEED and
# SIM_DURATION_MS).
SOAK_SEEDS       ?= 5000
SOAK_DURATION_MS ?= 30000
soak-sim:
	@base=$${SIM_SEED_BASE:-$$(( $$(date +%s) % 1000000 * 10000 ))}; echo "soak: seeds $$((base+1))..$$((base+$(SOAK_SEEDS)))"; \
	SIM_SEED_BASE=$$base SIM_SEEDS=$(SOAK_SEEDS) SIM_DURATION_MS=$(SOAK_DURATION_MS) SIM_KEEP_GOING=1 \
		$(GO) test -count=1 -timeout 0 -run '^TestSimSweep$$' -v ./internal/sim/ | grep -v '^=== RUN'

# crash runs the crash-consistency harness verbosely so its count of explored
# crash states shows in the output.
crash:
	@bash scripts/crash.sh

# fuzz-short runs every fuzz target briefly so CI keeps them alive.
fuzz-short:
	@bash scripts/fuzz.sh 3s

# fuzz runs every target for FUZZTIME each and prints execs and crashers.
fuzz:
	@bash scripts/fuzz.sh $(FUZZTIME)

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./index ./record ./segment
	./strata bench log --dir $(BENCHDIR) --records 1000000 --record-size 100 --batch-records 1000

# bench-peers runs bench/peers (a nested module: its peers' dependencies stay out
# of go.mod): strata's log and broker beside peer engines, several runs, medians;
# writes BENCHMARKS.md and the PNG charts in bench/peers/charts.
bench-peers:
	cd bench/peers && $(GO) run . -out ../../BENCHMARKS.md -charts charts -runs $(or $(RUNS),3)
