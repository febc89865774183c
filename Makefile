# tunebench: two commands on a fresh Debian/Ubuntu machine with Go installed:
#   make quickstart   installs what is missing, builds, runs the main job
#   make test         the whole test suite
GO      ?= go
BIN     := bin/tunebench
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/tunebench/tunebench/internal/cli.Version=$(VERSION)

.PHONY: quickstart deps test-deps build test vet lint cross dist image bench-tpcb bench-load-tpcb bench-tpcc bench-tpch bench-load-scaling clean

quickstart: deps build
	./$(BIN) quickstart --out build/quickstart

deps:
	@scripts/ensure-deps.sh

# What the test suite needs besides what deps installs (fio, the
# filesystem tools, ...: see the script), installed when missing; quick
# when nothing is.
test-deps:
	@scripts/ensure-deps.sh --test

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tunebench

vet:
	$(GO) vet ./...

# The platforms of a release: Linux servers and clients, macOS and Windows
# clients (README: Windows and macOS).
PLATFORMS := linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64

# Every release platform builds (make test runs it: a build that breaks on
# one fails the suite).
cross:
	@for p in $(PLATFORMS); do \
	  echo "build $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/tunebench || exit 1; \
	done
	@echo "vet darwin/arm64 (the tests too: go test ./... builds on a Mac)"
	@GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...

# The container image (deploy/Containerfile: FROM scratch, the static
# binary) with podman or docker, tagged tunebench:VERSION and
# tunebench:latest.
IMAGE_TOOL ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
image:
	@[ -n "$(IMAGE_TOOL)" ] || { echo "make image needs podman or docker (apt-get install podman)" >&2; exit 6; }
	rm -rf build/image && mkdir -p build/image/rootfs/tmp build/image/rootfs/results build/image/rootfs/etc/ssl/certs
	chmod 1777 build/image/rootfs/tmp && chmod 0777 build/image/rootfs/results
	# The CA certificates, for sslmode=verify-full against a server with a
	# public certificate (sslrootcert= names your own CA's).
	cp /etc/ssl/certs/ca-certificates.crt build/image/rootfs/etc/ssl/certs/ || { echo "make image needs the ca-certificates package" >&2; exit 6; }
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS) -s -w" -o build/image/rootfs/tunebench ./cmd/tunebench
	$(IMAGE_TOOL) build -f deploy/Containerfile -t tunebench:$(VERSION) -t tunebench:latest build/image
	@echo "image: tunebench:$(VERSION) (run: $(notdir $(IMAGE_TOOL)) run --rm --network host tunebench:$(VERSION) version)"

# Release binaries in dist/: tunebench-VERSION-OS-ARCH (.exe on Windows),
# static (no cgo), the version stamped in, and their SHA256SUMS.
dist:
	rm -rf dist && mkdir -p dist
	@for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  out=dist/tunebench-$(VERSION)-$$os-$$arch$$ext; echo "build $$out"; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS) -s -w" -o $$out ./cmd/tunebench || exit 1; \
	done
	cd dist && sha256sum tunebench-* > SHA256SUMS
	@echo "dist/: $$(ls dist | wc -l) files; verify with: cd dist && sha256sum -c SHA256SUMS"

# golangci-lint, pinned in go.mod (tool directive) and built by `go tool`;
# configuration and the temporary exclusions in .golangci.yml.
lint:
	$(GO) tool golangci-lint run ./...

# The integration tests mostly wait (on PostgreSQL, fsync, fio): four at a
# time in a package keep two cores busy where two at a time leave them
# idle. Four packages at a time as well was measured slower per package and
# too loaded for the open-loop stall test to drain its backlog.
test: test-deps build vet lint cross
	$(GO) test -count=1 -parallel 4 -timeout 20m ./...

# Benchmarks (not tests): tunebench next to pgbench on the same managed server.
bench-tpcb: deps build
	scripts/bench-tpcb.sh

bench-load-tpcb: deps build
	scripts/bench-load-tpcb.sh

# Benchmark (not a test): tunebench next to sysbench 1.0 on one managed
# MariaDB: point select and load (docs/benchmarks.md).
.PHONY: bench-mariadb
bench-mariadb: deps build
	scripts/bench-mariadb.sh

# MariaDB tpcc: tunebench against go-tpc (installed by the script from the
# Go module proxy when missing), load and run (docs/benchmarks.md).
.PHONY: bench-mariadb-tpcc
bench-mariadb-tpcc: deps build
	scripts/bench-mariadb-tpcc.sh

# Benchmark (not a test): this tree's binary against another one (OLD=path,
# e.g. the binary before a change), alternated on one managed server:
# tpcb select-only and tpcb-like, tpcc procs and sql (docs/benchmarks.md).
.PHONY: bench-ab
bench-ab: deps build
	scripts/bench-ab.sh

# Benchmark (not a test): open-loop precision, tunebench --rate next to
# pgbench -R at 25% and 50% of capacity (docs/benchmarks.md).
.PHONY: bench-openloop
bench-openloop: deps build
	scripts/bench-openloop.sh

# Benchmark (not a test): what the live view costs the driver, tpcb
# select-only with and without --listen plus a reader of /metrics and
# /api/live every second, alternated (docs/benchmarks.md).
.PHONY: bench-live
bench-live: deps build
	scripts/bench-live.sh

# Benchmark (not a test): one process of CLIENTS clients against SHARDS
# shards of it (--shard, --rendezvous), alternated on one managed server.
.PHONY: bench-shards
bench-shards: deps build
	scripts/bench-shards.sh

# Benchmark (not a test): `results merge` of 8 shards of a one-hour run
# with 1-second intervals, read from their stores and stored merged
# (docs/benchmarks.md).
.PHONY: bench-merge
bench-merge: deps
	go test ./internal/merge -run '^$$' -bench Merge8Shards1h -benchtime 1x -count 3

# Benchmark (not a test): TPC-C-like load speed and NOPM per mode and
# virtual users on a managed server (docs/benchmarks.md).
bench-tpcc: deps build
	scripts/bench-tpcc.sh

# Benchmark (not a test): TPC-H-like load of SF 1 next to tpchgen-cli
# generating the same data, then validation and a power test
# (docs/benchmarks.md).
bench-tpch: deps build
	scripts/bench-tpch.sh

# Benchmark (not a test): the TPC-H-like load of SF 1 with the managed
# server in a hardware envelope of 1 CPU and of 2 CPUs, alternated, with
# the default --jobs (docs/benchmarks.md). SF=0.1 RUNS=1 for a quick look.
bench-load-scaling: deps
	TUNEBENCH_LOAD_SCALING=1 go test -count=1 -timeout 60m -run '^TestLoadScaling$$' -v ./internal/workload/tpch/ | grep -E '^(run|medians)'

clean:
	rm -rf bin dist

# The HTML report of a synthetic experiment rendered in headless Chromium
# (network disabled): checks every chart is in the rendered page and keeps
# build/report/report.html and build/report/report.png (build artifacts,
# not committed). Needs the chromium package.
.PHONY: report-screenshot
report-screenshot:
	TUNEBENCH_REPORT_ARTIFACTS=$(CURDIR)/build/report $(GO) test -count=1 -run TestReportRendersInChromium ./internal/report/
	@echo "report: build/report/report.html, screenshot: build/report/report.png"

# The live page (--listen) of a short tpcb run in headless Chromium, while
# Debian's prometheus scrapes it: keeps build/live/live.png (a build
# artifact, not committed). Needs PostgreSQL, chromium and prometheus.
.PHONY: live-screenshot
live-screenshot:
	TUNEBENCH_LIVE_ARTIFACTS=$(CURDIR)/build/live $(GO) test -count=1 -run TestListenPrometheusAndPage ./internal/cli/
	@echo "live page screenshot: build/live/live.png"

# Benchmark (not a test): tunebench storage next to the same fio job files
# run by hand, and an fsblog run against the blogbench model. Needs fio.
.PHONY: bench-storage
bench-storage: deps build
	scripts/bench-storage.sh
