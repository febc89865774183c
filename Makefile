# tunebench: two commands on a fresh Debian/Ubuntu machine with Go installed:
#   make quickstart   installs what is missing, builds, runs the main job
#   make test         the whole test suite
GO      ?= go
BIN     := bin/tunebench
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/tunebench/tunebench/internal/cli.Version=$(VERSION)

.PHONY: quickstart deps build test vet bench-tpcb bench-load-tpcb clean

quickstart: deps build
	./$(BIN) quickstart

deps:
	@scripts/ensure-deps.sh

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tunebench

vet:
	$(GO) vet ./...

test: build vet
	$(GO) test -count=1 -timeout 20m ./...

# Benchmarks (not tests): tunebench next to pgbench on the same managed server.
bench-tpcb: deps build
	scripts/bench-tpcb.sh

bench-load-tpcb: deps build
	scripts/bench-load-tpcb.sh

clean:
	rm -rf bin
