# seismo build and test entry points. "make test" is what CI runs.

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X main.version=$(VERSION) -X main.revision=$(REVISION)
# Extra arguments for "make run", e.g. make run ARGS='--config configs/seismo.yml'
ARGS     ?=

.PHONY: all build test lint fmt-check vet bench bench-peer run demo load drills fuzz clean

all: build

## build: compile bin/seismo with the version and revision stamped in, as
## a static binary (CGO_ENABLED=0: no libc, so it runs in a scratch
## container, and about 3 MB less resident memory than linked to libc)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/seismo ./cmd/seismo

## test: gofmt check, go vet, and every test with the race detector.
## The end-to-end demo test runs too when DEMO_E2E=1 (CI sets it);
## it replays three outages in real time, hence the long timeout.
test: lint
	$(GO) test -race -timeout 30m ./...

## lint: gofmt check and go vet
lint: fmt-check vet

fmt-check:
	@files="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi

vet:
	$(GO) vet ./...

## bench: every benchmark, briefly (the machine is shared)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 200ms ./...

## bench-peer: seismo beside Prometheus and victoria-metrics+vmalert on the
## same synthetic targets, as ratios (docs/performance.md). Takes minutes per
## series count; SERIES, PEERS, WARM, MEASURE, WINDOW, OUT are passed on.
bench-peer:
	bench/peer/run.sh

## run: build, then run the agent (embedded default config unless ARGS says otherwise)
run: build
	./bin/seismo run $(ARGS)

## demo: build, then replay the three outages against a real demo service
demo: build
	./bin/seismo demo

## load: drive /api/v1/query at 10x the API slots while the agent evaluates
## 10k series, and report /-/healthy p99, missed evaluations and RSS
## (scripts/load.sh; LOAD_DURATION, LOAD_SERIES, ... tune it)
load:
	scripts/load.sh

## drills: the chaos drills at full size against bin/seismo (several
## minutes): kill -9, full and read-only data dir, receiver faults,
## Alertmanager restart, bad scrape targets, clock jumps, SIGHUP storms.
## Each prints what it did and what was lost. "make test" runs them small.
drills:
	./scripts/drills.sh

## fuzz: run each fuzzer in turn for FUZZTIME (one process: the machine
## may be shared); the seed corpora under testdata/fuzz run in "make test".
FUZZTIME ?= 1m
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
