#!/usr/bin/env bash
# bench-ab.sh: two tunebench binaries side by side on one managed PostgreSQL
# server, alternated (A B A B ...), to show that a change costs no driver
# performance. A is OLD (the binary before the change), B is the binary this
# tree builds (or NEW).
#
#   tpcb select-only   run tpcb -b select-only  (SCALE, CLIENTS, JOBS threads)
#   tpcb tpcb-like     run tpcb -b tpcb-like
#   tpcc procs         run tpcc --mode procs    (WAREHOUSES, VUSERS)
#   tpcc sql           run tpcc --mode sql
#   file-select-only   run script -f examples/scripts/select-only.sql (as tpcb)
#   file-tpcb-like     run script -f examples/scripts/tpcb-like.sql
#
# It prints each run, then per case the medians of each binary's throughput
# (tps, or NOPM for tpcc) and driver CPU per 1,000 transactions, and the
# ratio B/A of the medians with the pairs B won.
#
# Settings (environment): OLD (required: the other binary), NEW (default:
# bin/tunebench, built), SCALE (10) CLIENTS (4) JOBS (cores, at most CLIENTS)
# WAREHOUSES (4) VUSERS (4) DURATION seconds (30) RAMPUP seconds for tpcc
# (5) RUNS (5) CASES (default: select-only,tpcb-like,procs,sql; the file-*
# cases on request). The server and
# its data are removed on exit, whatever happens. Every run (and warm-up)
# starts on a fresh copy of the loaded database.
set -euo pipefail

cd "$(dirname "$0")/.."
: "${OLD:?give OLD=path/to/the/other/tunebench}"
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
NPROC=$(nproc)
JOBS=${JOBS:-$((NPROC < CLIENTS ? NPROC : CLIENTS))}
WAREHOUSES=${WAREHOUSES:-4}
VUSERS=${VUSERS:-4}
DURATION=${DURATION:-30}
RAMPUP=${RAMPUP:-5}
RUNS=${RUNS:-5}
CASES=${CASES:-select-only,tpcb-like,procs,sql}

BENCH_NAME=bench-ab
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"
NEW=${NEW:-$TB}

SETTINGS=(--set shared_buffers=1GB --set max_wal_size=4GB --set checkpoint_timeout=15min)
echo "== starting a managed server in $work/srv (${SETTINGS[*]})"
"$NEW" server start --dir "$work/srv" "${SETTINGS[@]}" >"$work/start.log" 2>&1 || { cat "$work/start.log" >&2; exit 1; }
eval "$("$NEW" server env --dir "$work/srv")"
# Each run starts from the same data: the loads go into templates, and the
# database a run uses is copied from its template before it (then CHECKPOINT),
# so neither binary runs on a database the other one grew.
createdb tpcb_ab_template
createdb tpcc_ab_template
echo "== loading tpcb scale $SCALE and tpcc $WAREHOUSES warehouses"
"$NEW" load tpcb --server-dir "$work/srv" -d tpcb_ab_template --scale "$SCALE" >"$work/load.log" 2>&1 || { cat "$work/load.log" >&2; exit 1; }
"$NEW" load tpcc --server-dir "$work/srv" -d tpcc_ab_template --warehouses "$WAREHOUSES" >"$work/load.log" 2>&1 || { cat "$work/load.log" >&2; exit 1; }

echo "== machine"
echo "cores (nproc): $NPROC; CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "kernel: $(uname -sr); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A (old): $OLD: $("$OLD" version 2>/dev/null | head -1)"
echo "B (new): $NEW: $("$NEW" version 2>/dev/null | head -1)"

A="$OLD" B="$NEW" WORK="$work" SCALE="$SCALE" CLIENTS="$CLIENTS" JOBS="$JOBS" VUSERS="$VUSERS" DURATION="$DURATION" \
RAMPUP="$RAMPUP" RUNS="$RUNS" CASES="$CASES" python3 - <<'PY'
import json, os, statistics, subprocess, sys

env = os.environ
work, dur, runs = env["WORK"], env["DURATION"], int(env["RUNS"])
srv = os.path.join(work, "srv")
summary = os.path.join(work, "run.json")

def cmd(tb, case):
    # A store per binary: an older binary refuses a store a newer one migrated.
    store = os.path.join(work, "results-%s.db" % ("A" if tb == env["A"] else "B"))
    common = ["--server-dir", srv, "-P", "0", "--no-check", "--no-samplers", "--results", store, "--json", summary]
    if case in ("select-only", "tpcb-like"):
        return [tb, "run", "tpcb", "-d", "tpcb", "-b", case, "-c", env["CLIENTS"], "-j", env["JOBS"], "-T", dur + "s"] + common
    if case.startswith("file-"):
        common.remove("--no-check")  # run script has no checks
        return [tb, "run", "script", "-d", "tpcb", "-f", os.path.join("examples", "scripts", case[len("file-"):] + ".sql"),
                "-c", env["CLIENTS"], "-j", env["JOBS"], "-T", dur + "s"] + common
    return [tb, "run", "tpcc", "-d", "tpcc", "--mode", case, "-u", env["VUSERS"], "-T", dur + "s", "--rampup", env["RAMPUP"] + "s"] + common

def fresh(case):
    db = "tpcb" if case in ("select-only", "tpcb-like") or case.startswith("file-") else "tpcc"
    subprocess.run(["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", "set client_min_messages = warning",
                    "-c", "drop database if exists %s" % db,
                    "-c", "create database %s template %s_ab_template strategy file_copy" % (db, db),
                    "-c", "checkpoint"], check=True)

def run(tb, case):
    fresh(case)
    p = subprocess.run(cmd(tb, case), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench-ab: %s failed (exit %d):\n%s%s" % (" ".join(cmd(tb, case)), p.returncode, p.stdout, p.stderr))
    with open(summary) as f:
        d = json.load(f)
    tput = d["nopm"] if case in ("procs", "sql") else d["tps"]
    return tput, d["driver"]["cpu_ms_per_1000_tx"]

cases = env["CASES"].split(",")
print("\n== commands")
for case in cases:
    print("%-11s  %s" % (case, " ".join(cmd("TB", case)).replace(work, "$WORK")))
print("\n== warm-up (not counted)", flush=True)
for case in cases:
    short = lambda c: [("5s" if a == dur + "s" else a) for a in c]
    for tb in (env["A"], env["B"]):
        fresh(case)
        subprocess.run(short(cmd(tb, case)), capture_output=True)

print("\n== runs: throughput (tps; NOPM for tpcc), driver CPU ms per 1,000 transactions", flush=True)
res = {}
for case in cases:
    for i in range(runs):
        order = (("A", env["A"]), ("B", env["B"])) if i % 2 == 0 else (("B", env["B"]), ("A", env["A"]))
        for name, tb in order:
            tput, cpu = run(tb, case)
            res.setdefault((case, name), []).append((tput, cpu))
            print("%-11s run %d  %s  %10.1f  %7.2f ms CPU / 1,000 tx" % (case, i + 1, name, tput, cpu), flush=True)

print("\n== medians of %d alternated runs x %s s (B/A: new/old)" % (runs, dur))
print("%-11s  %10s  %10s  %6s  %9s  %9s  %6s  %s" % ("case", "A", "B", "B/A", "A CPU*", "B CPU*", "B/A", "pairs B won"))
for case in cases:
    a, b = res[(case, "A")], res[(case, "B")]
    at, bt = statistics.median(x[0] for x in a), statistics.median(x[0] for x in b)
    ac, bc = statistics.median(x[1] for x in a), statistics.median(x[1] for x in b)
    won = sum(1 for x, y in zip(a, b) if y[0] > x[0])
    print("%-11s  %10.1f  %10.1f  %6.3f  %9.2f  %9.2f  %6.3f  %d of %d" % (case, at, bt, bt / at, ac, bc, bc / ac, won, runs))
print("* driver CPU ms per 1,000 transactions over the measurement window (--json driver.cpu_ms_per_1000_tx)")
PY
