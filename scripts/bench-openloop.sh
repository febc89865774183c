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
# transactions: as each tool gives it (pgbench: its whole process, from
# getrusage; tunebench: its measurement window), and in a steady-state window
# that is the same for both (/proc/PID/stat read 5 s after the process
# started and 5 s before its duration ends, over its achieved rate). Last,
# the paired ratios tunebench/pgbench of that CPU and of p99: the geometric
# mean of the pairs with a 95% interval. pgbench's percentiles come from its
# per-transaction log (-l: latency and schedule lag in microseconds per
# transaction), of a random sample of about LOGSAMPLES transactions a run
# (--sampling-rate; writing the log is part of pgbench's CPU).
#
#   select-only   pgbench -n -S -M prepared -R R -c C -j J -l  vs  tunebench run tpcb -b select-only -R R -c C
#   tpcb-like     pgbench -n -M prepared -R R -c C -j J -l     vs  tunebench run tpcb -b tpcb-like -R R -c C
# (tunebench's default threads: one per core, at most one per client, as J.)
#
# Settings (environment): SCALE (10) CLIENTS (4) DURATION seconds (30) RUNS
# (3) JOBS (number of cores, at most CLIENTS) LOADS (25,50: percent of
# capacity) CASES (select-only,tpcb-like) TBTHREADS (tunebench's -j; 0: its
# default) TBARGS (more tunebench options, e.g. --no-samplers) LOGSAMPLES
# (20000: pgbench logs about this many transactions a run, --sampling-rate;
# a huge value logs them all). The server
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
LOGSAMPLES=${LOGSAMPLES:-20000}

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

TB="$TB" WORK="$work" LOGSAMPLES="$LOGSAMPLES" TBTHREADS="$TBTHREADS" TBARGS="$TBARGS" CLIENTS="$CLIENTS" DURATION="$DURATION" RUNS="$RUNS" JOBS="$JOBS" LOADS="$LOADS" CASES="$CASES" \
python3 - <<'PY'
import glob, json, math, os, re, resource, statistics, subprocess, sys, tempfile, time

tb, work = os.environ["TB"], os.environ["WORK"]
clients, dur, jobs = os.environ["CLIENTS"], os.environ["DURATION"], os.environ["JOBS"]
tbthreads = os.environ["TBTHREADS"]
tbargs = os.environ["TBARGS"].split()
runs = int(os.environ["RUNS"])
logsamples = int(os.environ["LOGSAMPLES"])
loads = [int(x) for x in os.environ["LOADS"].split(",")]
cases = os.environ["CASES"].split(",")
srv = os.path.join(work, "srv")
results = os.path.join(work, "results.db")
summary = os.path.join(work, "run.json")

TICK = os.sysconf("SC_CLK_TCK")

def proc_cpu(pid):
    # user + system CPU seconds of a live process, its ended threads included
    # (/proc/PID/stat fields 14 and 15, in clock ticks)
    try:
        with open("/proc/%d/stat" % pid) as f:
            x = f.read().rsplit(")", 1)[1].split()
        return (int(x[11]) + int(x[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None

def run(cmd, cwd=None, window=None):
    # window (a, b): also the CPU the process used between a and b seconds
    # after its start, per second of the time between the two reads (None
    # if it ended before b). The output goes to a file: nothing reads a
    # pipe while the window waits.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as outf:
        p = subprocess.Popen(cmd, stdout=outf, stderr=subprocess.STDOUT, text=True, cwd=cwd)
        win = None
        if window:
            time.sleep(max(0, t0 + window[0] - time.monotonic()))
            c0, w0 = proc_cpu(p.pid), time.monotonic()
            time.sleep(max(0, t0 + window[1] - time.monotonic()))
            c1, w1 = proc_cpu(p.pid), time.monotonic()
            if c0 is not None and c1 is not None and p.poll() is None:
                win = (c1 - c0) / (w1 - w0)
        p.wait()
        outf.seek(0)
        out = outf.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench-openloop: %s failed (exit %d):\n%s" % (cmd[0], p.returncode, out))
    return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), win

# The steady-state CPU window of every measured run, the same for both tools:
# from WIN_SKIP seconds after the process started to WIN_SKIP before its
# duration ends (startup, connections and the end of the run left out;
# tunebench's start-up to its first transaction takes about 0.2 s here).
if float(dur) < 12:
    sys.exit("bench-openloop: DURATION must be at least 12 s (the CPU window leaves out 2 s at each end)")
WIN_SKIP = min(5.0, float(dur) / 6)
WINDOW = (WIN_SKIP, float(dur) - WIN_SKIP)

def wincpu(win, tps):
    # CPU ms per 1,000 transactions in the window (win: CPU seconds per
    # second), at the run's achieved rate
    if win is None:
        return float("nan")
    return win * 1e6 / tps

# pgbench's percentiles come from its per-transaction log, and writing it is
# part of its CPU (in select-only at 7,450/s, 45.3 against 41.0 us per
# transaction without -l). It logs a random sample of the transactions,
# enough for the percentiles (LOGSAMPLES, about 20,000 a run, all of them at
# low rates): its cheapest way to give them.
def sampling(rate):
    if rate in ("R", 0):
        return 1.0
    return min(1.0, logsamples / (float(rate) * float(dur)))

def pgbench_cmd(case, rate, seconds, log):
    c = ["pgbench", "-n", "-M", "prepared", "-c", clients, "-j", jobs, "-T", str(seconds)]
    if rate:
        c += ["-R", str(rate)]
    if log:
        c += ["-l"]
        if rate == "R":
            c += ["[--sampling-rate S]"]
        elif sampling(rate) < 1:
            c += ["--sampling-rate", "%.4f" % sampling(rate)]
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
    out, cpu, win = run(pgbench_cmd(case, rate, dur, True), cwd=logdir, window=WINDOW)
    lat, lag = [], []
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        for line in open(f):
            x = line.split()
            # client_id transaction_no time script_no time_epoch time_us [schedule_lag]
            if len(x) >= 7 and x[2] != "skipped":
                lat.append(int(x[2]) / 1000)
                lag.append(int(x[6]) / 1000)
    tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    done = int(re.search(r"^number of transactions actually processed: ([0-9]+)", out, re.M).group(1))
    return dict(tps=tps, p50=pct(lat, 50), p99=pct(lat, 99), avg=statistics.mean(lat),
                lag50=pct(lag, 50), lagavg=statistics.mean(lag), disp50=None, cpu=cpu * 1e6 / done,
                wcpu=wincpu(win, tps))

def tunebench(case, rate):
    _, _, win = run(tunebench_cmd(case, rate), window=WINDOW)
    d = json.load(open(summary))
    ol, l = d["open_loop"], d["latency_ms"]
    return dict(tps=ol["achieved_tps"], p50=l["p50"], p99=l["p99"], avg=l["avg"], lag50=ol["schedule_lag_ms"]["p50"],
                lagavg=ol["schedule_lag_ms"]["avg"], disp50=ol["dispatch_delay_ms"]["p50"], cpu=d["driver"]["cpu_ms_per_1000_tx"],
                wcpu=wincpu(win, ol["achieved_tps"]))

print("\n== capacity (closed loop, pgbench, 10 s) and warm-up", flush=True)
cap = {}
for case in cases:
    out, _, _ = run(pgbench_cmd(case, 0, 10, False))
    cap[case] = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
    print("%-11s capacity %.0f tps" % (case, cap[case]), flush=True)

print("\n== commands (R: the rate)")
print("  " + " ".join(pgbench_cmd("select-only", "R", dur, True)))
print("  " + " ".join(tunebench_cmd("select-only", "R")).replace(work, "$WORK"))

print("\n== runs: latency p50/p99/avg ms from the scheduled start, schedule lag p50/avg ms, driver dispatch delay p50 ms, achieved tps, client CPU ms per 1,000 tx (the tool's own measure; and in the steady-state window, the same for both)", flush=True)
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
                print("%-11s %2d%% %6d/s run %d %-9s  p50 %6.3f  p99 %6.3f  avg %6.3f  lag p50 %6.3f avg %6.3f  dispatch %s  %8.1f tps  CPU %5.1f window %5.1f" % (
                    case, load, rate, i + 1, name, m["p50"], m["p99"], m["avg"], m["lag50"], m["lagavg"],
                    "   -  " if m["disp50"] is None else "%6.3f" % m["disp50"], m["tps"], m["cpu"], m["wcpu"]), flush=True)

print("\n== medians of %d runs x %s s, %s clients, -j %s; pgbench's percentiles from about %d logged transactions a run" % (runs, dur, clients, jobs, logsamples))
print("%-11s %4s %7s  %-9s %7s %7s %7s %8s %8s %9s %9s %6s" % ("case", "load", "rate", "tool", "p50", "p99", "avg", "lag p50", "lag avg", "rate err", "CPU/1000", "window"))
for case in cases:
    for load in loads:
        rate = int(cap[case] * load / 100)
        med = {}
        for name in ("pgbench", "tunebench"):
            ms = res[(case, load, name)]
            med[name] = {k: statistics.median(m[k] for m in ms) for k in ("p50", "p99", "avg", "lag50", "lagavg", "tps", "cpu", "wcpu")}
            m = med[name]
            print("%-11s %3d%% %7d  %-9s %7.3f %7.3f %7.3f %8.3f %8.3f %8.2f%% %9.1f %9.1f" % (
                case, load, rate, name, m["p50"], m["p99"], m["avg"], m["lag50"], m["lagavg"], 100 * (m["tps"] / rate - 1), m["cpu"], m["wcpu"]))
        p, t = med["pgbench"], med["tunebench"]
        print("%-11s %4s %7s  %-9s %7.2f %7.2f %7.2f %8s %8s %9s %9.2f %9.2f" % ("", "", "", "ratio t/p", t["p50"] / p["p50"], t["p99"] / p["p99"], t["avg"] / p["avg"], "", "", "", t["cpu"] / p["cpu"], t["wcpu"] / p["wcpu"]))
print("latency and lag in ms; CPU/1000: client CPU ms per 1,000 transactions as each tool's run gives it")
print("(pgbench: its whole process; tunebench: its measurement window); window: the same for both, from")
print("/proc/PID/stat between %.0f s after the start and %.0f s before the end, over the achieved rate;" % (WINDOW[0], WIN_SKIP))
print("rate err: achieved / target - 1")

# Paired: the runs of a pair ran one after the other on the same server, so
# their ratio leaves out what drifts between pairs (the server, the machine).
# Geometric mean of the per-pair ratios, with a 95% interval (Student's t on
# the logarithms).
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]
def paired(key, case, load):
    xs = [math.log(t[key] / p[key]) for p, t in zip(res[(case, load, "pgbench")], res[(case, load, "tunebench")])
          if p[key] > 0 and t[key] > 0]  # a missing window is NaN: left out
    if not xs:
        return "   -"
    m = statistics.mean(xs)
    if len(xs) < 2:
        return "%5.3f (1 pair)" % math.exp(m)
    h = T95[min(len(xs) - 2, len(T95) - 1)] * statistics.stdev(xs) / math.sqrt(len(xs))
    lower = sum(1 for x in xs if x < 0)
    return "%5.3f [%5.3f, %5.3f], tunebench lower in %d of %d" % (math.exp(m), math.exp(m - h), math.exp(m + h), lower, len(xs))

print("\n== paired ratios tunebench/pgbench: geometric mean of the pairs [95% interval]")
for case in cases:
    for load in loads:
        print("%-11s %3d%%  CPU window %s" % (case, load, paired("wcpu", case, load)))
        print("%-11s %3d%%  p99        %s" % ("", load, paired("p99", case, load)))
PY
