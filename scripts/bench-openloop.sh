#!/usr/bin/env bash
# bench-openloop.sh: open-loop precision, tunebench --rate next to pgbench -R
# on one managed PostgreSQL server (issue 17).
#
# Measures the closed-loop capacity of each case first (pgbench, CLIENTS
# clients, 10 s), then runs both tools at 25% and 50% of it, alternating
# RUNS times (pgbench first in odd pairs, tunebench first in even ones, so
# that neither always runs on the other's dead tuples), each run after a
# CHECKPOINT (so that no run starts inside another's checkpoint, with its
# full-page writes), and prints per run and as medians:
# latency p50 and p99 (from the scheduled start, both tools), schedule lag
# (pgbench: the average it prints; tunebench: p50 and average), the
# achieved rate against the target, and the client's CPU per 1,000
# transactions. pgbench's percentiles come from its per-transaction log (-l:
# latency and schedule lag in microseconds per transaction).
#
#   select-only   pgbench -n -S -M prepared -R R -c C -j J -l  vs  tunebench run tpcb -b select-only -R R -c C
#   tpcb-like     pgbench -n -M prepared -R R -c C -j J -l     vs  tunebench run tpcb -b tpcb-like -R R -c C
# (tunebench's default threads: one per core, at most one per client, as J.)
#
# Settings (environment): SCALE (10) CLIENTS (4) DURATION seconds (30) RUNS
# (3) JOBS (number of cores, at most CLIENTS) LOADS (25,50: percent of
# capacity) CASES (select-only,tpcb-like) TBTHREADS (tunebench's -j; 0: its
# default) TBARGS (more tunebench options, e.g. --no-samplers). The server
# and its data are removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-30}
RUNS=${RUNS:-3}
NPROC=$(nproc)
JOBS=${JOBS:-$((NPROC < CLIENTS ? NPROC : CLIENTS))}
LOADS=${LOADS:-25,50}
TBTHREADS=${TBTHREADS:-0}
TBARGS=${TBARGS:-}
CASES=${CASES:-select-only,tpcb-like}

BENCH_NAME=bench-openloop
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"

start_server --set shared_buffers=1GB --set max_wal_size=4GB
load_tpcb "$SCALE"

echo "== machine"
echo "cores (nproc): $NPROC; $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "kernel: $(uname -sr)"
echo "server: $(psql -XAtc 'SELECT version()')"
echo "pgbench: $(pgbench --version)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" TBTHREADS="$TBTHREADS" TBARGS="$TBARGS" CLIENTS="$CLIENTS" DURATION="$DURATION" RUNS="$RUNS" JOBS="$JOBS" LOADS="$LOADS" CASES="$CASES" \
python3 - <<'PY'
import glob, json, os, re, resource, statistics, subprocess, sys

tb, work = os.environ["TB"], os.environ["WORK"]
clients, dur, jobs = os.environ["CLIENTS"], os.environ["DURATION"], os.environ["JOBS"]
tbthreads = os.environ["TBTHREADS"]
tbargs = os.environ["TBARGS"].split()
runs = int(os.environ["RUNS"])
loads = [int(x) for x in os.environ["LOADS"].split(",")]
cases = os.environ["CASES"].split(",")
srv = os.path.join(work, "srv")
results = os.path.join(work, "results.db")
summary = os.path.join(work, "run.json")

def run(cmd, cwd=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench-openloop: %s failed (exit %d):\n%s%s" % (cmd[0], p.returncode, p.stdout, p.stderr))
    return p.stdout + p.stderr, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

def pgbench_cmd(case, rate, seconds, log):
    c = ["pgbench", "-n", "-M", "prepared", "-c", clients, "-j", jobs, "-T", str(seconds)]
    if rate:
        c += ["-R", str(rate)]
    if log:
        c += ["-l"]
    if case == "select-only":
        c += ["-S"]
    return c

def tunebench_cmd(case, rate):
    c = [tb, "run", "tpcb", "--server-dir", srv, "-b", case, "-c", clients, "-R", str(rate),
         "-T", dur + "s", "-P", "0", "--no-check", "--results", results, "--json", summary]
    if tbthreads != "0":
        c += ["-j", tbthreads]
    return c + tbargs

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def pgbench(case, rate):
    logdir = os.path.join(work, "pglog")
    os.makedirs(logdir, exist_ok=True)
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        os.remove(f)
    out, cpu = run(pgbench_cmd(case, rate, dur, True), cwd=logdir)
    lat, lag = [], []
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        for line in open(f):
            x = line.split()
            # client_id transaction_no time script_no time_epoch time_us [schedule_lag]
            if len(x) >= 7 and x[2] != "skipped":
                lat.append(int(x[2]) / 1000)
                lag.append(int(x[6]) / 1000)
    tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    return dict(tps=tps, p50=pct(lat, 50), p99=pct(lat, 99), avg=statistics.mean(lat),
                lag50=pct(lag, 50), lagavg=statistics.mean(lag), disp50=None, cpu=cpu * 1e6 / len(lat))

def tunebench(case, rate):
    run(tunebench_cmd(case, rate))
    d = json.load(open(summary))
    ol, l = d["open_loop"], d["latency_ms"]
    return dict(tps=ol["achieved_tps"], p50=l["p50"], p99=l["p99"], avg=l["avg"], lag50=ol["schedule_lag_ms"]["p50"],
                lagavg=ol["schedule_lag_ms"]["avg"], disp50=ol["dispatch_delay_ms"]["p50"], cpu=d["driver"]["cpu_ms_per_1000_tx"])

print("\n== capacity (closed loop, pgbench, 10 s) and warm-up", flush=True)
cap = {}
for case in cases:
    out, _ = run(pgbench_cmd(case, 0, 10, False))
    cap[case] = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    print("%-11s capacity %.0f tps" % (case, cap[case]), flush=True)

print("\n== commands (R: the rate)")
print("  " + " ".join(pgbench_cmd("select-only", "R", dur, True)))
print("  " + " ".join(tunebench_cmd("select-only", "R")).replace(work, "$WORK"))

print("\n== runs: latency p50/p99/avg ms from the scheduled start, schedule lag p50/avg ms, driver dispatch delay p50 ms, achieved tps, client CPU ms per 1,000 tx", flush=True)
res = {}
for case in cases:
    for load in loads:
        rate = int(cap[case] * load / 100)
        for i in range(runs):
            pair = (("pgbench", pgbench), ("tunebench", tunebench))
            for name, f in (pair if i % 2 == 0 else pair[::-1]):
                run(["psql", "-XAqc", "CHECKPOINT"])
                m = f(case, rate)
                res.setdefault((case, load, name), []).append(m)
                print("%-11s %2d%% %6d/s run %d %-9s  p50 %6.3f  p99 %6.3f  avg %6.3f  lag p50 %6.3f avg %6.3f  dispatch %s  %8.1f tps  CPU %5.1f" % (
                    case, load, rate, i + 1, name, m["p50"], m["p99"], m["avg"], m["lag50"], m["lagavg"],
                    "   -  " if m["disp50"] is None else "%6.3f" % m["disp50"], m["tps"], m["cpu"]), flush=True)

print("\n== medians of %d runs x %s s, %s clients, -j %s" % (runs, dur, clients, jobs))
print("%-11s %4s %7s  %-9s %7s %7s %7s %8s %8s %9s %9s %6s" % ("case", "load", "rate", "tool", "p50", "p99", "avg", "lag p50", "lag avg", "rate err", "CPU/1000", ""))
for case in cases:
    for load in loads:
        rate = int(cap[case] * load / 100)
        med = {}
        for name in ("pgbench", "tunebench"):
            ms = res[(case, load, name)]
            med[name] = {k: statistics.median(m[k] for m in ms) for k in ("p50", "p99", "avg", "lag50", "lagavg", "tps", "cpu")}
            m = med[name]
            print("%-11s %3d%% %7d  %-9s %7.3f %7.3f %7.3f %8.3f %8.3f %8.2f%% %9.1f" % (
                case, load, rate, name, m["p50"], m["p99"], m["avg"], m["lag50"], m["lagavg"], 100 * (m["tps"] / rate - 1), m["cpu"]))
        p, t = med["pgbench"], med["tunebench"]
        print("%-11s %4s %7s  %-9s %7.2f %7.2f %7.2f %8s %8s %9s %9.2f" % ("", "", "", "ratio t/p", t["p50"] / p["p50"], t["p99"] / p["p99"], t["avg"] / p["avg"], "", "", "", t["cpu"] / p["cpu"]))
print("latency and lag in ms; CPU: client CPU ms per 1,000 transactions (pgbench: whole process;")
print("tunebench: the measurement window); rate err: achieved / target - 1")
PY
