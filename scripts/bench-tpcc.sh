#!/usr/bin/env bash
# bench-tpcc.sh: the TPC-C-like load and throughput benchmarks of
# docs/benchmarks.md on one managed PostgreSQL server.
#
# Builds tunebench, starts a throw-away managed server with the settings the
# issue fixes (shared_buffers 2GB, max_wal_size 8GB, checkpoint_timeout 15min),
# then
#   1. loads each of LOAD_WAREHOUSES warehouses RUNS times (--drop) and prints
#      the median wall time, rows/s and the process's own CPU seconds;
#   2. loads RUN_WAREHOUSES warehouses and runs every mode in MODES at every
#      count in VUSERS (RAMPUP ramp-up, DURATION measured), printing NOPM, TPM,
#      New-Order p95 and the driver's CPU ms per 1,000 New-Orders.
#
# Settings (environment): LOAD_WAREHOUSES ("4 10") RUNS (3) RUN_WAREHOUSES (4)
# VUSERS ("1 2 4 8") MODES ("procs sql") RAMPUP (1m) DURATION (2m).
set -euo pipefail

cd "$(dirname "$0")/.."
LOAD_WAREHOUSES=${LOAD_WAREHOUSES:-4 10}
RUNS=${RUNS:-3}
RUN_WAREHOUSES=${RUN_WAREHOUSES:-4}
VUSERS=${VUSERS:-1 2 4 8}
MODES=${MODES:-procs sql}
RAMPUP=${RAMPUP:-1m}
DURATION=${DURATION:-2m}

BENCH_NAME=bench-tpcc
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"

SETTINGS=(--set shared_buffers=2GB --set max_wal_size=8GB --set checkpoint_timeout=15min)
echo "== starting a managed server in $work/srv (${SETTINGS[*]})"
"$TB" server start --dir "$work/srv" "${SETTINGS[@]}" >/dev/null

echo "== machine"
echo "cores (nproc): $(nproc)"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "kernel: $(uname -sr)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" RUNS="$RUNS" LOADW="$LOAD_WAREHOUSES" RUNW="$RUN_WAREHOUSES" VUSERS="$VUSERS" MODES="$MODES" \
RAMPUP="$RAMPUP" DURATION="$DURATION" python3 - <<'PY'
import json, os, re, statistics, subprocess, sys, time

tb, work = os.environ["TB"], os.environ["WORK"]
srv = ["--server-dir", os.path.join(work, "srv"), "--results", os.path.join(work, "results.db")]

def cpu_of_children():
    t = os.times()
    return t.children_user + t.children_system

def load(w):
    c = [tb, "load", "tpcc", "--warehouses", str(w), "--drop", srv[0], srv[1]]
    c0, t0 = cpu_of_children(), time.monotonic()
    p = subprocess.run(c, capture_output=True, text=True)
    dt, cpu = time.monotonic() - t0, cpu_of_children() - c0
    if p.returncode != 0:
        sys.exit("bench-tpcc: load failed (exit %d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    m = re.search(r"([\d,]+) rows", p.stdout + p.stderr)
    rows = int(m.group(1).replace(",", "")) if m else 0
    return dt, cpu, rows

print("\n== load: `tunebench load tpcc --warehouses W --drop`, %s runs each" % os.environ["RUNS"], flush=True)
for w in os.environ["LOADW"].split():
    res = []
    for i in range(int(os.environ["RUNS"])):
        dt, cpu, rows = load(w)
        res.append((dt, cpu, rows))
        print("W=%-3s run %d  %6.2f s  %9.0f rows/s  tunebench CPU %5.2f s" % (w, i + 1, dt, rows / dt if rows else 0, cpu), flush=True)
    med = statistics.median(r[0] for r in res)
    print("W=%-3s median %6.2f s, CPU median %5.2f s" % (w, med, statistics.median(r[1] for r in res)), flush=True)

w = os.environ["RUNW"]
print("\n== throughput: %s warehouses, ramp-up %s, %s measured" % (w, os.environ["RAMPUP"], os.environ["DURATION"]), flush=True)
load(w)
print("%-6s %6s %10s %10s %10s %12s %8s" % ("mode", "vusers", "NOPM", "TPM", "NO p95 ms", "CPU ms/1kNO", "check"), flush=True)
for mode in os.environ["MODES"].split():
    for vu in os.environ["VUSERS"].split():
        js = os.path.join(work, "run.json")
        c = [tb, "run", "tpcc", "--mode", mode, "--vusers", vu, "--rampup", os.environ["RAMPUP"], "--duration", os.environ["DURATION"],
             "--progress", "0", "--json", js] + srv
        p = subprocess.run(c, capture_output=True, text=True)
        if p.returncode != 0:
            print("run failed (exit %d):\n%s%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]), flush=True)
            continue
        s = json.load(open(js))
        no = next((t for t in s["per_transaction"] if t["op"] == "new_order"), {})
        n = no.get("count", 0)
        cpu = 1e6 * s["driver"]["cpu_s"] / n if n else 0
        print("%-6s %6s %10.0f %10.0f %10.3f %12.1f %8s" % (mode, vu, s["nopm"], s["tpm"], no.get("p95_ms", 0), cpu,
              "ok" if s.get("nopm_check", {}).get("passed") else "FAIL"), flush=True)
print("\nload average after: %s" % open("/proc/loadavg").read().split()[:3])
PY
