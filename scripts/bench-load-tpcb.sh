#!/usr/bin/env bash
# bench-load-tpcb.sh: `tunebench load tpcb` next to `pgbench -i` on one
# managed PostgreSQL server.
#
# Builds tunebench, starts a throw-away managed server with fixed settings,
# then loads scale SCALE RUNS times with each tool, alternating pgbench /
# tunebench (A B A B ...; each load drops and rebuilds the tables), and prints
# the median wall time of each and their ratio. Both build the same tables
# the same way: client-side generated rows sent with COPY, VACUUM, then the
# primary keys.
#
# Settings (environment): SCALE (50) RUNS (3). The server and its data are
# removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
SCALE=${SCALE:-50}
RUNS=${RUNS:-3}

BENCH_NAME=bench-load-tpcb
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"

SETTINGS=(--set shared_buffers=1GB --set max_wal_size=4GB)
echo "== starting a managed server in $work/srv (${SETTINGS[*]})"
"$TB" server start --dir "$work/srv" "${SETTINGS[@]}" >/dev/null
eval "$("$TB" server env --dir "$work/srv")"

echo "== machine"
echo "cores (nproc): $(nproc)"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "kernel: $(uname -sr)"
echo "server: $(psql -XAtc 'SELECT version()')"
echo "pgbench: $(pgbench --version)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" SCALE="$SCALE" RUNS="$RUNS" python3 - <<'PY'
import os, statistics, subprocess, sys, time

tb, work, scale, runs = os.environ["TB"], os.environ["WORK"], os.environ["SCALE"], int(os.environ["RUNS"])
cmds = {
    "pgbench": ["pgbench", "-i", "-q", "-s", scale],
    "tunebench": [tb, "load", "tpcb", "--server-dir", os.path.join(work, "srv"), "--scale", scale, "--drop"],
}
print("\n== commands")
for name, c in cmds.items():
    print("%-9s  %s" % (name, " ".join(c).replace(work, "$WORK")))

# One load of each first, not counted: a new server creates (and zero-fills)
# its WAL segment files during the first loads and recycles them after its
# first checkpoints, which made whichever tool ran first look slower. Before
# every load (not timed) a CHECKPOINT writes out what the previous one left
# dirty, so no load pays for its predecessor's data.
def checkpoint():
    subprocess.run(["psql", "-XqAtc", "CHECKPOINT"], check=True)

print("\n== warm-up: one load each (not counted)", flush=True)
for name, c in cmds.items():
    checkpoint()
    p = subprocess.run(c, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench-load-tpcb: %s failed (exit %d):\n%s%s" % (name, p.returncode, p.stdout, p.stderr))

checkpoint()
print("\n== runs: wall time, seconds", flush=True)
res = {}
for i in range(runs):
    for name, c in cmds.items():
        checkpoint()
        t0 = time.monotonic()
        p = subprocess.run(c, capture_output=True, text=True)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit("bench-load-tpcb: %s failed (exit %d):\n%s%s" % (name, p.returncode, p.stdout, p.stderr))
        res.setdefault(name, []).append(dt)
        print("run %d  %-9s  %6.2f s" % (i + 1, name, dt), flush=True)

p, t = statistics.median(res["pgbench"]), statistics.median(res["tunebench"])
print("\n== medians of %d runs, scale %s" % (runs, scale))
print("pgbench -i   %6.2f s" % p)
print("tunebench    %6.2f s   (%.2f x pgbench's time)" % (t, t / p))
PY
