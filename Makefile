# Logbook. `make run` builds bin/logbook and serves on 127.0.0.1:8080 over
# data/logbook.db (ARGS='--flag …' passes flags); `make test` runs the whole
# suite (CI runs exactly that through .ci/run).

GO ?= go
PKGS := ./...

.PHONY: run build generate test test-go test-api-race test-postgres test-python test-typescript test-ui scale vecbench pgvecbench chromium soak check check-generated fmt vet lint lint-openapi deps tools bench profile gobench crash fuzz sim pg-failover clean

# The binary is bin/logbook; its source is cmd/server. bin/embedserver is the
# stand-in embedding endpoint that docs/guides/embeddings.md starts.
run: build
	bin/logbook $(ARGS)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o bin/logbook ./cmd/server
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/embedserver ./cmd/embedserver

# The whole suite, with the race detector: unit, API (spec-validated), in-process
# run(), and the short kill -9 crash test. It refuses to pass on unformatted code,
# vet findings, a go.mod that tidy would change or a lint finding in openapi.yaml,
# so CI catches those too. Its parts run side by side (output kept per
# part): a race run keeps about one of this machine's two cores busy on its
# own, so the others fit beside it. Without PostgreSQL (LOGBOOK_PG_BIN, PATH
# or /usr/lib/postgresql/NN/bin) its tests skip, each saying so; without
# pgvector in that PostgreSQL, so do the pgvector search's (Debian 12 does not
# package it: docs/scale.md, "pgvector", says where they run).
test: deps fmt vet tools chromium lint-openapi check-generated
	$(MAKE) --no-print-directory -j5 --output-sync=target test-go test-api-race test-postgres test-python test-typescript

# The Go packages with the race detector, then without it the tests the
# detector slows too much to run whole (the largest message, legal objects
# escaped six times over, a stream's longest line and the bounded block
# history, which move megabytes; the fault simulations and the 500-deep fork
# chain, which the race pass runs shorter; the WAL's 20 s soak, whose appends
# the detector slows ~50×).
test-go:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -v '/internal/api$$')
	cd client && $(GO) test -race -count=1 -timeout 10m ./...
	$(GO) test -count=1 -run 'TestLargestMessageRoundTrips|TestLegalObjectsFitAtDefaults|TestStreamLineLimit|TestBlockHistoryIsBounded|TestSimulation|TestForkChainsReadTheirWholeHistory' ./internal/api/
	$(GO) test -count=1 -run '^TestWALStaysBounded$$' ./internal/repo/sqlite/

# The API package with the race detector: the longest of the race runs (its
# tests run one at a time, and the detector slows them ~6×), so its tests run
# in two processes at once, split by name; between them, every test, example
# and fuzz seed of the package.
API_RACE_HALF := ^Test[A-Oa-o]
test-api-race:
	$(GO) test -race -count=1 -timeout 20m -run '$(API_RACE_HALF)' ./internal/api/ & half=$$!; \
	$(GO) test -race -count=1 -timeout 20m -skip '$(API_RACE_HALF)' ./internal/api/; rest=$$?; \
	wait $$half && exit $$rest

# The whole API suite again on PostgreSQL, a throwaway cluster of its own.
test-postgres:
	LOGBOOK_TEST_BACKEND=postgres $(GO) test -count=1 ./internal/api/

# The Python client (clients/python) against a real server that its tests build
# from this tree and start on a free loopback port. Standard library only.
test-python:
	cd clients/python && python3 -m unittest discover -v

# The TypeScript client (clients/typescript) the same way, with node --test;
# then, under vitest (their own runner), LangGraph's checkpointer validation
# suite against LogbookSaver and a real StateGraph, each on SQLite and on a
# throwaway PostgreSQL cluster (skipped, saying why, without PostgreSQL). Its
# pinned dev tools (tsc, openapi-typescript, the Agents SDK, LangGraph, vitest)
# come from its package-lock.json: npm ci runs only when node_modules is
# missing or older.
TS_CLIENT := clients/typescript
test-typescript: $(TS_CLIENT)/node_modules/.package-lock.json
	cd $(TS_CLIENT) && npm test && npx vitest run

$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json $(TS_CLIENT)/package.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund
	@touch $@

check: lint test

# The Go client's generated layer (client/api/api.gen.go) must be what
# oapi-codegen (a tool in go.mod) makes from openapi.yaml now: regenerate into a
# temporary file and compare. After changing openapi.yaml: make generate.
check-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	sed "s|^output: .*|output: $$tmp/api.gen.go|" client/api/oapi-codegen.yaml > "$$tmp/config.yaml" && \
	$(GO) tool oapi-codegen -config "$$tmp/config.yaml" openapi.yaml && \
	if ! cmp -s "$$tmp/api.gen.go" client/api/api.gen.go; then \
		diff -u client/api/api.gen.go "$$tmp/api.gen.go" | head -40; \
		echo "client/api/api.gen.go is not what openapi.yaml generates now: run make generate"; exit 1; \
	fi

# Everything generated from openapi.yaml: the Go client's layer, the
# TypeScript client's types, and the clients' parity table (clients/PARITY.md).
generate: $(TS_CLIENT)/node_modules/.package-lock.json
	cd client && $(GO) generate ./...
	cd $(TS_CLIENT) && npm run generate
	$(GO) generate ./tools/parity

# The guides' test (internal/api/guides_test.go) runs README.md's and
# docs/guides' commands with bash, curl and jq.
# CI starts from a clean machine: install what is missing (apt-get, as root).
tools:
	@missing=""; for t in curl jq; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing for the guides' test"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The dashboard's browser test (internal/ui) drives Debian's chromium, headless;
# install it when it is missing (apt-get, as root or with sudo). Where it cannot
# be installed the test skips, saying so.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium for the dashboard's browser test"; \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		{ $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } || \
			echo "could not install chromium: the dashboard's browser test will skip"; \
	}

# The dashboard (/ui) in headless Chromium, long form: the walk through every
# page that make test runs, plus paging through many sessions and a session of
# 5200 messages. Screenshots go to $(UI_SCREENSHOTS).
UI_SCREENSHOTS ?= $(CURDIR)/bin/ui-screenshots
test-ui: chromium
	LOGBOOK_UI_LONG=1 LOGBOOK_UI_SCREENSHOTS=$(UI_SCREENSHOTS) $(GO) test -count=1 -v -run '^TestDashboard(Actions)?$$' ./internal/ui/

# go.mod and go.sum are what `go mod tidy` makes, and modernc.org/libc is the
# version modernc.org/sqlite pins: its authors ask for that exact version, since
# the transpiled SQLite depends on libc's internals.
deps:
	@$(GO) mod tidy -diff || { echo "go mod tidy would change go.mod/go.sum (run it and commit)"; exit 1; }
	@cd client && $(GO) mod tidy -diff || { echo "go mod tidy would change client/go.mod/go.sum (run it in client/ and commit)"; exit 1; }
	@sqlite=$$($(GO) list -m -f '{{.Path}}@{{.Version}}' modernc.org/sqlite); \
	want=$$($(GO) mod graph | awk -v s="$$sqlite" '$$1 == s && $$2 ~ /^modernc.org\/libc@/ {print $$2}'); \
	have=$$($(GO) list -m -f '{{.Path}}@{{.Version}}' modernc.org/libc); \
	if [ "$$want" != "$$have" ]; then echo "modernc.org/libc is $$have; modernc.org/sqlite pins $$want"; exit 1; fi

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	cd client && $(GO) vet ./...

# staticcheck is a tool of this module; it checks the client module's
# packages (client/go.mod) by their paths, which this module replaces with
# client/.
lint:
	$(GO) tool staticcheck $(PKGS) github.com/logbook/logbook/client/...

# openapi.yaml, linted by Redocly CLI (rules in redocly.yaml) at no warning and
# no error. The CLI is pinned in tools/openapi/package-lock.json; npm ci installs
# it only when node_modules is missing or the lockfile is newer than the install.
OPENAPI_TOOLS := tools/openapi
lint-openapi: $(OPENAPI_TOOLS)/node_modules/.package-lock.json
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx --no --prefix $(OPENAPI_TOOLS) redocly lint --max-problems 100 openapi.yaml

$(OPENAPI_TOOLS)/node_modules/.package-lock.json: $(OPENAPI_TOOLS)/package-lock.json $(OPENAPI_TOOLS)/package.json
	npm ci --prefix $(OPENAPI_TOOLS) --no-audit --no-fund
	@touch $@

# The load tool: Logbook against a naive server and PocketBase (built from
# source by scripts/pocketbase.sh), batches against direct SQLite, pages, and one
# tenant's big messages beside another's. Figures go to docs/benchmarks.md.
bench: build
	bash scripts/pocketbase.sh bin/pocketbase
	$(GO) run ./cmd/loadtest -server bin/logbook -pocketbase bin/pocketbase

# CPU profiles of the server under the load tool's appends, streams, batches and pages,
# written to profiles/ (go tool pprof -http=: profiles/appends.pprof to browse).
profile: build
	@mkdir -p profiles
	$(GO) run ./cmd/loadtest -server bin/logbook -only appends -rounds 1 -server-flag=--cpu-profile=$(CURDIR)/profiles/appends.pprof
	$(GO) run ./cmd/loadtest -server bin/logbook -only stream -stream-rounds 1 -server-flag=--cpu-profile=$(CURDIR)/profiles/stream.pprof
	$(GO) run ./cmd/loadtest -server bin/logbook -only batch -batch-rounds 1 -server-flag=--cpu-profile=$(CURDIR)/profiles/batch.pprof
	$(GO) run ./cmd/loadtest -server bin/logbook -only paging -server-flag=--cpu-profile=$(CURDIR)/profiles/paging.pprof
	@for p in appends stream batch paging; do echo "== $$p"; $(GO) tool pprof -top -nodecount=25 bin/logbook profiles/$$p.pprof 2>/dev/null | tail -n +6; done

# PostgreSQL with a synchronous standby: kill the primary under load, promote the
# standby, count the acknowledged appends lost (docs/scale.md).
pg-failover:
	$(GO) test -count=1 -v -run 'TestFailoverToSynchronousStandbyLosesNothing' ./internal/repo/postgres/

# The tenant's data against the time of its reads: fills 10k and 1M messages
# of a realistic shape through the API (SCALE_FLAGS=-large: also 10M, ~25 GB
# of disk and ~40 minutes; -backend postgres: PostgreSQL) and prints each read
# and operation beside its 10k figure as a ratio (docs/benchmarks.md, Scale).
# Not part of make test. SCALE_DIR is where the databases go (deleted after).
SCALE_FLAGS ?=
SCALE_DIR ?= $(CURDIR)/bin
scale: build
	@mkdir -p $(SCALE_DIR)
	$(GO) run ./cmd/scale -server bin/logbook -dir $(SCALE_DIR) $(SCALE_FLAGS)

# Go micro-benchmarks of the store (append paths, page reads, table layout).
gobench:
	$(GO) test -run '^$$' -bench . -skip VectorSearch -benchmem ./internal/repo/sqlite/

# Vector search at 10k and 100k passages of 768 numbers, one core: the cache
# against the ways it replaced (docs/benchmarks.md, Vector search). Builds a
# ~350 MB SQLite file; several minutes.
vecbench:
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench TopK -benchtime 200x ./internal/repo/vecindex/
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench VectorSearch -benchtime 20x -timeout 30m ./internal/repo/sqlite/
	$(GO) test -run '^$$' -bench WorkerEmbedsPassages -benchtime 2000x ./internal/embed/

# pgvector's HNSW search on PostgreSQL at 100k × 768 (random and clustered
# vectors): build time, p50/p99 and recall@10 against exact search. It needs a
# PostgreSQL with pgvector (LOGBOOK_PG_BIN: docs/scale.md, "pgvector") and
# skips, saying so, without one.
pgvecbench:
	$(GO) test -run '^$$' -bench PGVectorSearch -benchtime 1x -timeout 60m ./internal/repo/postgres/

# The WAL's soak test, long form: 32 goroutines appending through the store
# for SOAK (10 minutes) under the default --wal-max-bytes, the -wal file's size
# sampled every 2 ms; it logs the high-water mark, the appends' p50/p99/max and
# the checkpoints (docs/operations.md, "The WAL"). make test runs 20 s of it.
SOAK ?= 10m
soak:
	LOGBOOK_SOAK=$(SOAK) $(GO) test -count=1 -v -timeout 0 -run '^TestWALStaysBounded$$' ./internal/repo/sqlite/

# The long form of the crash test: many kill -9 cycles under load.
crash:
	LOGBOOK_CRASH_CYCLES=25 LOGBOOK_CRASH_PHASE=2s $(GO) test -count=1 -run TestCrash -v ./cmd/server/

# Each fuzz target for FUZZTIME (CI runs their seed corpora in make test).
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRequestBodies$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/api/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCursor$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/repo/
	$(GO) test -run '^$$' -fuzz '^FuzzFTSQuery$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/repo/sqlite/
	$(GO) test -run '^$$' -fuzz '^FuzzMergePatch$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/model/

# A long fault-injection simulation; LOGBOOK_SIM_SEED=N replays a run.
SIMOPS ?= 50000
sim:
	LOGBOOK_SIM_OPS=$(SIMOPS) $(GO) test -count=1 -run TestSimulationWithFaults -v ./internal/api/

clean:
	rm -rf bin
