#!/usr/bin/env bash
# bench-shards.sh: what splitting a run over shards costs. tpcb on one
# managed PostgreSQL server, alternated (one four, four one, ...): "one",
# a single process with CLIENTS clients; "four", SHARDS processes
# (--shard i/SHARDS, CLIENTS/SHARDS clients each) that meet at the
# database (--rendezvous) and start together. The sharded run's
# throughput is the sum of its shards' (each over its own window; the
# rendezvous makes the windows the same).
#
# It prints each run, then the medians, the ratio sharded/one and the pairs
# the sharded run won.
#
# Settings (environment): SCALE (10) CLIENTS (8) SHARDS (4) JOBS (threads of
# the single process: cores, at most CLIENTS; each shard gets its share)
# DURATION seconds (20) RUNS (5) BUILTIN (select-only). The server and its
# data are removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-8}
SHARDS=${SHARDS:-4}
NPROC=$(nproc)
JOBS=${JOBS:-$((NPROC < CLIENTS ? NPROC : CLIENTS))}
DURATION=${DURATION:-20}
RUNS=${RUNS:-5}
BUILTIN=${BUILTIN:-select-only}

BENCH_NAME=bench-shards
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"

start_server --set shared_buffers=1GB --set max_wal_size=4GB --set checkpoint_timeout=15min
load_tpcb "$SCALE"

echo "== machine"
echo "cores (nproc): $NPROC; CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "kernel: $(uname -sr); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" CLIENTS="$CLIENTS" SHARDS="$SHARDS" JOBS="$JOBS" DURATION="$DURATION" RUNS="$RUNS" BUILTIN="$BUILTIN" python3 - <<'PY'
import json, os, statistics, subprocess, sys

env = os.environ
work, dur, runs, shards = env["WORK"], env["DURATION"], int(env["RUNS"]), int(env["SHARDS"])
srv = os.path.join(work, "srv")
store = os.path.join(work, "results.db")
attempt = [0]

def cmd(shard, d, key):
    c = [env["TB"], "run", "tpcb", "-b", env["BUILTIN"], "-c", env["CLIENTS"], "-j", env["JOBS"], "-T", d + "s",
         "--server-dir", srv, "-P", "0", "--no-check", "--results", store]
    if shard is not None:
        c += ["--shard", "%d/%d" % (shard, shards), "--rendezvous", key]
    return c

def run(variant, d=None):
    d = d or dur
    attempt[0] += 1
    key = "bench-%d-%d" % (os.getpid(), attempt[0])
    procs = []
    for i in ([None] if variant == "one" else range(shards)):
        js = os.path.join(work, "run-%s.json" % ("one" if i is None else i))
        p = subprocess.Popen(cmd(i, d, key) + ["--json", js], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append((p, js))
    tps, starts = 0.0, []
    for p, js in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            sys.exit("bench-shards: %s failed (exit %d):\n%s" % (variant, p.returncode, out))
        with open(js) as f:
            s = json.load(f)
        tps += s["tps"]
        starts.append(s["started_at"])
    return tps, starts

print("\n== commands")
print("one   %s" % " ".join(cmd(None, dur, "")).replace(work, "$WORK"))
print("four  %s  (i = 0..%d, in parallel)" % (" ".join(cmd(0, dur, "KEY")).replace(work, "$WORK").replace("0/%d" % shards, "i/%d" % shards), shards - 1))
print("\n== warm-up (not counted)", flush=True)
for v in ("one", "sharded"):
    run(v, "5")

print("\n== runs: total tps", flush=True)
res = {}
for i in range(runs):
    order = ("one", "sharded") if i % 2 == 0 else ("sharded", "one")
    for v in order:
        tps, starts = run(v)
        res.setdefault(v, []).append(tps)
        extra = "" if v == "one" else "  (shards started %s)" % ", ".join(sorted(s[11:23] for s in starts))
        print("run %d  %-7s  %10.1f tps%s" % (i + 1, v, tps, extra), flush=True)

one, sh = res["one"], res["sharded"]
om, sm = statistics.median(one), statistics.median(sh)
won = sum(1 for x, y in zip(one, sh) if y > x)
print("\n== medians of %d alternated runs x %s s" % (runs, dur))
print("%10s  %12s  %8s  %s" % ("one tps", "sharded tps", "ratio", "pairs sharded won"))
print("%10.1f  %12.1f  %8.3f  %d of %d" % (om, sm, sm / om, won, runs))
print("ranges: one %.0f-%.0f tps, sharded %.0f-%.0f tps" % (min(one), max(one), min(sh), max(sh)))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
