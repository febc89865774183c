#!/usr/bin/env bash
# Installs what tunebench needs and the machine lacks: the PostgreSQL server
# (initdb, postgres, pg_ctl) and client (pgbench, psql), and, optionally,
# xfsprogs and btrfs-progs. As root on Debian/Ubuntu it uses apt-get;
# otherwise it prints the command to run.
#
#   scripts/ensure-deps.sh          what tunebench needs (make quickstart)
#   scripts/ensure-deps.sh --test   and what the test suite needs (make test):
#                                   fio, the filesystem and loop device
#                                   tools (xfsprogs and btrfs-progs too), ip,
#                                   setpriv, prometheus-node-exporter,
#                                   prometheus (with promtool), chromium,
#                                   podman and runc, wine and MinGW (amd64);
#                                   then the TPC-H answer oracle
#                                   (scripts/tpch-oracle.sh). Where they
#                                   cannot be installed (not root), it says
#                                   which tests will skip, and goes on.
set -euo pipefail

test_deps=0
case "${1:-}" in
  --test) test_deps=1 ;;
  "") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

have_server() {
  command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ] && return 0
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
have_client() { command -v pgbench >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1; }

if ! command -v go >/dev/null 2>&1; then
  echo "Go is required (the one prerequisite): see https://go.dev/doc/install" >&2
  exit 1
fi

# Optional: the xfs and btrfs tools, for storage layouts on those
# filesystems and for their features in the environment snapshot. Installed
# along with the rest when apt-get can; otherwise named, never required.
# (They live in sbin, which an unprivileged PATH may lack.)
have_tool() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

pkgs=()
have_server || pkgs+=(postgresql)
have_client || pkgs+=(postgresql-client)
opt=()
# A managed MariaDB (server start --engine mariadb) and sysbench, its peer
# in make bench-mariadb: installed with the rest when apt-get can.
have_tool mariadbd || opt+=(mariadb-server)
have_tool sysbench || opt+=(sysbench)
tpkgs=() # the test suite's (--test)
if [ "$test_deps" = 1 ]; then
  # The storage tests run fio; the disk-full tests mount an ext4 image on a
  # loop device; the storage-stack tests make xfs and btrfs filesystems
  # (and the environment snapshot reads their format with xfs_info); the
  # remote-target tests start a server in a network namespace of their own
  # (ip netns, a veth pair) and run it there as postgres (setpriv). The
  # --listen tests have Debian's prometheus scrape a run (their own
  # prometheus process on a loopback port; the package's service is not
  # used), lint the exposition with promtool and open the live page in
  # headless chromium.
  have_tool fio || tpkgs+=(fio)
  have_tool mkfs.ext4 || tpkgs+=(e2fsprogs)
  have_tool losetup || tpkgs+=(mount)
  have_tool mkfs.xfs || tpkgs+=(xfsprogs)
  have_tool mkfs.btrfs || tpkgs+=(btrfs-progs)
  have_tool ip || tpkgs+=(iproute2)
  have_tool setpriv || tpkgs+=(util-linux)
  # The host-metrics tests scrape a node_exporter they start in the
  # server's network namespace.
  have_tool prometheus-node-exporter || tpkgs+=(prometheus-node-exporter)
  have_tool promtool || tpkgs+=(prometheus)
  have_tool chromium || tpkgs+=(chromium)
  # The Windows client's smoke test runs tunebench.exe under Wine (amd64
  # only); Debian 12's Wine lacks the bcryptprimitives.dll Go programs
  # load, so the test builds a small one with MinGW.
  # The sharded-run test builds the image (deploy/Containerfile) and runs
  # shards in containers: podman with runc (crun fails on hybrid cgroups).
  # The MariaDB target's tests start their own managed MariaDB in a
  # temporary directory on a free loopback port (the package's own service
  # is not used).
  have_tool mariadbd || tpkgs+=(mariadb-server)
  have_tool mariadb-install-db || tpkgs+=(mariadb-server)
  have_tool podman || tpkgs+=(podman)
  have_tool runc || tpkgs+=(runc)
  if [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then
    have_tool wine || tpkgs+=(wine wine64)
    have_tool x86_64-w64-mingw32-gcc || tpkgs+=(gcc-mingw-w64-x86-64-win32)
  fi
else
  have_tool mkfs.xfs || opt+=(xfsprogs)
  have_tool mkfs.btrfs || opt+=(btrfs-progs)
fi
oracle() {
  [ "$test_deps" = 1 ] || return 0
  # The answers tests recompute TPC-H answers with it; without it they are
  # skipped (unless TUNEBENCH_REQUIRE_ORACLE=1, as .ci/run sets), so a
  # machine that cannot download it still runs the rest of the suite.
  if ! bash "$(dirname "$0")/tpch-oracle.sh"; then
    if [ "${TUNEBENCH_REQUIRE_ORACLE:-}" = 1 ]; then
      exit 1
    fi
    echo "the TPC-H answer oracle could not be installed: its tests will be skipped" >&2
  fi
}
if [ ${#pkgs[@]} -eq 0 ] && [ ${#opt[@]} -eq 0 ] && [ ${#tpkgs[@]} -eq 0 ]; then
  oracle
  exit 0
fi

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${pkgs[*]} ${tpkgs[*]} ${opt[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The packages' own services (a system MariaDB on port 3306) are not
  # started: tunebench runs the servers it manages itself.
  norc=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && norc=1
  fi
  rc=0
  apt-get install -y -qq "${pkgs[@]}" "${tpkgs[@]}" "${opt[@]}" >/dev/null || rc=$?
  [ "$norc" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || exit "$rc"
  oracle
  exit 0
fi
if [ ${#opt[@]} -gt 0 ]; then
  echo "optional (xfs and btrfs storage layouts, a managed MariaDB, sysbench): install ${opt[*]}" >&2
fi
if [ ${#tpkgs[@]} -gt 0 ]; then
  # Not installed here (not root, or no apt-get): the tests that need them
  # skip themselves when not root, and fail when root.
  echo "the tests that use ${tpkgs[*]} will be skipped (not root) or fail (root): install them first (Debian/Ubuntu: apt-get install -y ${tpkgs[*]}) and run make test as root" >&2
fi
if [ ${#pkgs[@]} -eq 0 ]; then
  oracle
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  echo "tunebench needs PostgreSQL. Run:  sudo apt-get install -y ${pkgs[*]}" >&2
  exit 1
else
  echo "tunebench needs the PostgreSQL server and client (initdb, postgres, pg_ctl, pgbench)." >&2
  echo "Install them with your package manager (e.g. dnf install postgresql-server postgresql-contrib)," >&2
  echo "or pass --pg-bin DIR to tunebench." >&2
  exit 1
fi
