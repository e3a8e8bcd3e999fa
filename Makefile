# tradewire: `make test` is the one command that says the tree is good.

GO       ?= go
GOFMT    ?= gofmt
FUZZTIME ?= 10s

.PHONY: test prereqs fmt-check vet bench fuzz build examples demo api

## test: the prerequisites checked, gofmt check, go vet, and every test under
## the race detector: the examples run (examples/) and the README's and docs'
## snippets checked (docs/). The Redis-backed packages need a redis-server:
## with TRADEWIRE_TEST_REDIS_URL unset, one is started on a free loopback port
## for the run and stopped after. CI=true makes a test that cannot find
## redis-server, python3 or curl fail instead of skip: make test never passes
## by skipping.
test: prereqs fmt-check vet
	CI=true bash internal/redistest/with-redis.sh bash internal/pgtest/with-postgres.sh $(GO) test -race ./...

## prereqs: stop at once, naming what make test needs and is missing, and how
## to install it.
prereqs:
	@missing=""; apt=""; \
	if ! command -v $(GO) >/dev/null; then \
		missing="$$missing go"; \
		echo "make test: go not found: install Go 1.26 or later (https://go.dev/doc/install)" >&2; \
	fi; \
	if [ -z "$$TRADEWIRE_TEST_REDIS_URL" ] && ! command -v redis-server >/dev/null; then \
		missing="$$missing redis-server"; apt="$$apt redis-server"; \
		echo "make test: redis-server not found: the Redis-backed tests run against a real one" >&2; \
		echo "  (or set TRADEWIRE_TEST_REDIS_URL=redis://HOST:PORT/0, a Redis with appendonly yes, appendfsync always)" >&2; \
	fi; \
	if [ -z "$$TRADEWIRE_TEST_POSTGRES_URL" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then \
		missing="$$missing postgresql"; apt="$$apt postgresql"; \
		echo "make test: PostgreSQL (initdb, pg_ctl) not found: the PostgreSQL-backed tests run against a real primary and standby" >&2; \
		echo "  (or set TRADEWIRE_TEST_POSTGRES_URL=postgres://USER:PASSWORD@HOST:PORT,HOST:PORT/DB?target_session_attrs=read-write)" >&2; \
	fi; \
	if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then \
		missing="$$missing python3"; apt="$$apt python3"; \
		echo "make test: python3 3.8 or later not found: the vendor's Python samples run against the simulated venue" >&2; \
	fi; \
	if ! command -v curl >/dev/null; then \
		missing="$$missing curl"; apt="$$apt curl"; \
		echo "make test: curl not found: the README's sandbox example is run" >&2; \
	fi; \
	if [ -n "$$apt" ]; then echo "Install on Debian/Ubuntu: sudo apt-get install$$apt" >&2; fi; \
	if [ -n "$$missing" ]; then exit 1; fi

## fmt-check: fail, listing them, if any Go file is not gofmt-clean.
## Files git ignores (scratch files) are skipped when git is available.
fmt-check:
	@files=$$( { git ls-files -co --exclude-standard -- '*.go' 2>/dev/null || find . -name '*.go' -not -path './vendor/*'; } \
		| while read -r f; do [ -f "$$f" ] && echo "$$f"; done | xargs -r $(GOFMT) -l ); \
	if [ -n "$$files" ]; then \
		echo "gofmt: these files need formatting (run: gofmt -w FILE):" >&2; \
		echo "$$files" >&2; \
		exit 1; \
	fi

vet:
	$(GO) vet ./...

## bench: every benchmark, with allocations (a redis-server and a
## PostgreSQL primary with its standby started for the fleet's).
bench:
	bash internal/redistest/with-redis.sh bash internal/pgtest/with-postgres.sh $(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: a short run (FUZZTIME each) of every fuzz target, found per package.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		targets=$$($(GO) test -list '^Fuzz' "$$pkg") || exit 1; \
		for fn in $$(printf '%s\n' "$$targets" | grep '^Fuzz' || true); do \
			echo "== fuzz $$pkg $$fn ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done

## api: the exported identifiers per package (what a user of the module can name).
api:
	$(GO) run ./internal/apicount

build:
	$(GO) build -o bin/tradewire ./cmd/tradewire

## examples: run the example programs on the simulated venue (make test runs
## them too, as the tests of examples/): a bot, a fee job, a simulation
## test, a bot's metrics and traces.
examples:
	$(GO) run ./examples/bot
	$(GO) run ./examples/feejob
	$(GO) run ./examples/telemetry
	$(GO) test -count=1 -v ./examples/simtest

## demo: a main job on the embedded simulated venue, over HTTPS + HTTP/2 on
## loopback (go run ./cmd/tradewire demo --wire http: plain HTTP); no
## credentials needed.
demo:
	$(GO) run ./cmd/tradewire demo

## sim: the full simulation matrix, per seed: every fault mix for a simulated
## day at a realistic load, one saturated run at the rate budget's limit, and
## the placement scenarios (broker.Client placing with restarts, on a venue
## that creates a second order for a reused client_order_id) and every
## hostile mode, and the throttle scenarios (per-class, fluctuating venue
## rate limits, the fixed bucket against the adaptive limiter, an outage).
## Prints the figures of every run, the placement figures, the hostile
## ledger, the throttle figures and the simulated/wall ratios; fails if an invariant
## breaks. SIM_SEEDS, SIM_DURATION (realistic runs), SIM_SATURATED and
## SIM_HOSTILE shrink or grow it. It runs over TLS + HTTP/2 on loopback, as
## the real venue is served; SIM_WIRE=http runs it over plain HTTP/1.1 on
## loopback, SIM_WIRE=memory in memory (the fastest). SIM_TIMEOUT bounds it.
## It prints its peak resident memory (VmHWM) last; TRADEWIRE_SIM_MEMTRACE=FILE
## samples its memory and the runs in flight into FILE once a second.
## First it runs the placement explorer (broker's TestExplore) over
## EXPLORE_SCHEDULES seeds, printing how many it ran per mode and the seed of
## its failures (replay one: go test -run 'TestExplore$' ./broker/ -explore.seed=N).
EXPLORE_SCHEDULES ?= 20000
SIM_SEEDS     ?= 5
SIM_DURATION  ?= 24h
SIM_SATURATED ?= 2h
SIM_HOSTILE   ?= 1h
SIM_WIRE      ?= tls
SIM_TIMEOUT   ?= 180m
.PHONY: sim
sim:
	TRADEWIRE_EXPLORE_SCHEDULES=$(EXPLORE_SCHEDULES) bash internal/redistest/with-redis.sh \
		$(GO) test -v -count=1 -timeout $(SIM_TIMEOUT) -run '^TestExplore$$' ./broker/
	TRADEWIRE_SIM_FULL=1 TRADEWIRE_SIM_SEEDS=$(SIM_SEEDS) TRADEWIRE_SIM_DURATION=$(SIM_DURATION) \
		TRADEWIRE_SIM_SATURATED=$(SIM_SATURATED) TRADEWIRE_SIM_HOSTILE=$(SIM_HOSTILE) TRADEWIRE_SIM_WIRE=$(SIM_WIRE) \
		$(GO) test -v -count=1 -timeout $(SIM_TIMEOUT) -run '^TestMatrix$$' ./simulation/
