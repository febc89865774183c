#!/usr/bin/env bash
# bench-tpcb.sh: tunebench next to pgbench on one managed PostgreSQL server.
#
# Builds tunebench, starts a throw-away managed server with fixed settings,
# loads the pgbench tables, then runs each case RUNS times per tool,
# alternating pgbench / tunebench (A B A B ...), and prints the medians of tps
# and of the client's CPU time per 1,000 transactions, with ratios (both
# tools serve the clients from JOBS threads, -j):
#
#   select-only   pgbench -S -M prepared      vs  tunebench run tpcb -b select-only
#   tpcb-like     pgbench -M prepared         vs  tunebench run tpcb -b tpcb-like
#   pipeline      pgbench -M prepared -f F    vs  tunebench run tpcb -b tpcb-like --pipeline
#                 (F: the tpcb-like statements between \startpipeline and \endpipeline)
#   file-tpcb-like    pgbench -M prepared -f examples/scripts/tpcb-like.sql
#                 vs  tunebench run script -f examples/scripts/tpcb-like.sql
#   file-select-only  the same with select-only.sql (custom script files, both
#                 tools interpreting them; pgbench is given -s for :scale)
#
# Client CPU: pgbench's is its whole process (getrusage of the child, start-up
# included, which is under 0.1% of a run); tunebench's is the process CPU over
# the measurement window (driver.cpu_s in its --json summary).
#
# Settings (environment): SCALE (10) CLIENTS (4) DURATION seconds (30)
# RUNS (3) JOBS threads of both tools (number of cores, at most CLIENTS)
# PIPELINE=0 skips the pipeline case; FILES=0 the script-file cases;
# CASES=select-only,tpcb-like runs only the cases named. The server and its data are removed on exit, whatever
# happens.
set -euo pipefail

cd "$(dirname "$0")/.."
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
DURATION=${DURATION:-30}
RUNS=${RUNS:-3}
NPROC=$(nproc)
JOBS=${JOBS:-$((NPROC < CLIENTS ? NPROC : CLIENTS))}
PIPELINE=${PIPELINE:-1}
FILES=${FILES:-1}

BENCH_NAME=bench-tpcb
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"

start_server --set shared_buffers=1GB --set max_wal_size=4GB
load_tpcb "$SCALE"

# pgbench's tpcb-like transaction (examples/scripts) in one pipeline.
{
	grep '^\\set' examples/scripts/tpcb-like.sql
	echo '\startpipeline'
	grep -v -e '^--' -e '^\\set' examples/scripts/tpcb-like.sql
	echo '\endpipeline'
} >"$work/tpcb-pipeline.sql"

echo "== machine"
echo "cores (nproc): $NPROC"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "kernel: $(uname -sr)"
echo "server: $(psql -XAtc 'SELECT version()')"
echo "pgbench: $(pgbench --version)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"
echo "server settings:"
psql -XAtc "SELECT '  ' || name || ' = ' || current_setting(name) FROM pg_settings
            WHERE name IN ('shared_buffers', 'max_wal_size', 'max_connections', 'fsync',
                           'synchronous_commit', 'full_page_writes', 'wal_level', 'checkpoint_timeout',
                           'wal_sync_method', 'huge_pages', 'jit')
            ORDER BY name"

TB="$TB" WORK="$work" SCALE="$SCALE" CLIENTS="$CLIENTS" DURATION="$DURATION" RUNS="$RUNS" JOBS="$JOBS" PIPELINE="$PIPELINE" FILES="$FILES" CASES="${CASES:-}" \
python3 - <<'PY'
import json, os, re, resource, statistics, subprocess, sys

tb, work = os.environ["TB"], os.environ["WORK"]
scale, clients, dur, runs, jobs = (os.environ[k] for k in ("SCALE", "CLIENTS", "DURATION", "RUNS", "JOBS"))
runs = int(runs)
srv = os.path.join(work, "srv")
results = os.path.join(work, "results.db")
summary = os.path.join(work, "run.json")

def pgbench_cmd(case):
    c = ["pgbench", "-n", "-c", clients, "-j", jobs, "-M", "prepared", "-T", dur]
    if case == "select-only":
        c += ["-S"]
    elif case == "pipeline":
        # A custom script gets :scale from -s (default 1: one branch row).
        c += ["-s", scale, "-f", os.path.join(work, "tpcb-pipeline.sql")]
    elif case.startswith("file-"):
        c += ["-s", scale, "-f", script_file(case)]
    return c

def script_file(case):
    return os.path.join("examples", "scripts", case[len("file-"):] + ".sql")

def tunebench_cmd(case):
    if case.startswith("file-"):
        return [tb, "run", "script", "--server-dir", srv, "-f", script_file(case),
                "-c", clients, "-j", jobs, "-T", dur + "s", "-P", "0", "--results", results, "--json", summary]
    c = [tb, "run", "tpcb", "--server-dir", srv, "-b", "tpcb-like" if case == "pipeline" else case,
         "-c", clients, "-j", jobs, "-T", dur + "s", "-P", "0", "--no-check", "--results", results, "--json", summary]
    if case == "pipeline":
        c += ["--pipeline"]
    return c

def run(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench-tpcb: %s failed (exit %d):\n%s%s" % (cmd[0], p.returncode, p.stdout, p.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout + p.stderr, cpu

def pgbench(case):
    out, cpu = run(pgbench_cmd(case))
    tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    tx = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    return tps, cpu * 1e6 / tx, ""

def tunebench(case):
    run(tunebench_cmd(case))
    with open(summary) as f:
        d = json.load(f)
    note = ""
    if d.get("follow_server"):
        note = "following the server, %d handovers" % d.get("handovers", 0)
    return d["tps"], d["driver"]["cpu_ms_per_1000_tx"], note

cases = ["select-only", "tpcb-like"] + (["pipeline"] if os.environ["PIPELINE"] != "0" else [])
cases += ["file-select-only", "file-tpcb-like"] if os.environ["FILES"] != "0" else []
if os.environ.get("CASES"):
    cases = [c for c in cases if c in os.environ["CASES"].split(",")]
print("\n== commands")
for case in cases:
    print("%-11s  %s" % (case, " ".join(pgbench_cmd(case)).replace(work, "$WORK")))
    print("%-11s  %s" % ("", " ".join(tunebench_cmd(case)).replace(work, "$WORK")))

print("\n== warm-up (not counted)", flush=True)
for case in ("select-only", "tpcb-like"):
    short = lambda c: [("10" if a == dur else "10s" if a == dur + "s" else a) for a in c]
    run(short(pgbench_cmd(case)))
    run(short(tunebench_cmd(case)))

print("\n== runs: tps, client CPU ms per 1,000 transactions", flush=True)
res = {}
for case in cases:
    for i in range(runs):
        for name, f in (("pgbench", pgbench), ("tunebench", tunebench)):
            tps, cpu, note = f(case)
            res.setdefault((case, name), []).append((tps, cpu))
            print("%-11s run %d  %-9s  %9.1f tps  %7.1f ms CPU / 1,000 tx%s" % (case, i + 1, name, tps, cpu, "  (" + note + ")" if note else ""), flush=True)

print("\n== medians of %d runs x %s s, scale %s, %s clients, pgbench -j %s" % (runs, dur, scale, clients, jobs))
print("%-11s  %11s  %11s  %6s  %14s  %14s  %6s" % ("case", "pgbench tps", "tunebench", "ratio", "pgbench CPU*", "tunebench CPU*", "ratio"))
for case in cases:
    p, t = res[(case, "pgbench")], res[(case, "tunebench")]
    ptps, ttps = statistics.median(x[0] for x in p), statistics.median(x[0] for x in t)
    pcpu, tcpu = statistics.median(x[1] for x in p), statistics.median(x[1] for x in t)
    print("%-11s  %11.0f  %11.0f  %6.2f  %14.1f  %14.1f  %6.2f" % (case, ptps, ttps, ttps / ptps, pcpu, tcpu, tcpu / pcpu))
print("* client CPU ms per 1,000 transactions (pgbench: whole process; tunebench: the")
print("  measurement window); ratios are tunebench / pgbench")

# How far apart the runs of one tool are, next to the difference between
# the tools: on a small or shared machine the run-to-run swings can be
# larger than that difference, and a median of a few runs then says little.
print("\n== spread: pairs won by tunebench (same round), and each tool's slowest and fastest run")
for case in cases:
    p, t = res[(case, "pgbench")], res[(case, "tunebench")]
    won = sum(1 for a, b in zip(p, t) if b[0] > a[0])
    def rng(xs):
        v = [x[0] for x in xs]
        return "%.0f-%.0f (%+.0f%% / %+.0f%% of its median)" % (min(v), max(v), 100 * (min(v) / statistics.median(v) - 1), 100 * (max(v) / statistics.median(v) - 1))
    print("%-11s  won %d of %d; pgbench %s; tunebench %s" % (case, won, len(p), rng(p), rng(t)))
PY

echo
echo "== consistency check of the last tunebench run"
"$TB" check tpcb --server-dir "$work/srv" 2>&1 | tail -n 3 || true
