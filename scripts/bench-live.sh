#!/usr/bin/env bash
# bench-live.sh: what the live view (--listen) costs the driver. tpcb
# select-only on one managed PostgreSQL server, alternated (off on, on off,
# ...): "off" without --listen, "on" with --listen and a reader that
# fetches /metrics (as Prometheus would) and /api/live (as an open live
# page would) every second, from a thread of this script's Python (no
# process started per request).
#
# It prints each run, then the medians of each variant's tps and driver CPU
# per 1,000 transactions, the ratio on/off and the pairs "on" won.
#
# Settings (environment): SCALE (10) CLIENTS (4) JOBS (cores, at most
# CLIENTS) DURATION seconds (20) RUNS (5) BUILTIN (select-only). Both
# variants keep the samplers (the live view serves their values). The
# server and its data are removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
NPROC=$(nproc)
JOBS=${JOBS:-$((NPROC < CLIENTS ? NPROC : CLIENTS))}
DURATION=${DURATION:-20}
RUNS=${RUNS:-5}
BUILTIN=${BUILTIN:-select-only}

BENCH_NAME=bench-live
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"

start_server --set shared_buffers=1GB --set max_wal_size=4GB --set checkpoint_timeout=15min
load_tpcb "$SCALE"

echo "== machine"
echo "cores (nproc): $NPROC; CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "kernel: $(uname -sr); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" CLIENTS="$CLIENTS" JOBS="$JOBS" DURATION="$DURATION" RUNS="$RUNS" BUILTIN="$BUILTIN" python3 - <<'PY'
import json, os, socket, statistics, subprocess, sys, threading, time, urllib.request

env = os.environ
work, dur, runs = env["WORK"], env["DURATION"], int(env["RUNS"])
srv = os.path.join(work, "srv")
summary = os.path.join(work, "run.json")
store = os.path.join(work, "results.db")

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p

def cmd(variant, port, d=None):
    c = [env["TB"], "run", "tpcb", "-b", env["BUILTIN"], "-c", env["CLIENTS"], "-j", env["JOBS"], "-T", (d or dur) + "s",
         "--server-dir", srv, "-P", "0", "--no-check", "--results", store, "--json", summary]
    if variant == "on":
        c += ["--listen", str(port)]
    return c

class Reader(threading.Thread):
    """Fetches /metrics and /api/live every second until stopped."""
    def __init__(self, port):
        super().__init__(daemon=True)
        self.base = "http://127.0.0.1:%d/" % port
        self.stop = threading.Event()
        self.ok = self.failed = 0
        self.metrics_bytes = 0
    def run(self):
        since, key = 0, ""
        while not self.stop.wait(1.0):
            try:
                with urllib.request.urlopen(self.base + "metrics", timeout=2) as r:
                    self.metrics_bytes = len(r.read())
                with urllib.request.urlopen(self.base + "api/live?run=%s&since=%d" % (key, since), timeout=2) as r:
                    page = json.loads(r.read())
                    since = page["seq"]
                    if page.get("run"):
                        key = page["run"]["key"]
                self.ok += 1
            except OSError:
                self.failed += 1  # before the server is up, after it stopped

def run(variant, d=None):
    port = free_port()
    reader = None
    if variant == "on":
        reader = Reader(port)
        reader.start()
    p = subprocess.run(cmd(variant, port, d), capture_output=True, text=True)
    if reader:
        reader.stop.set()
        reader.join()
    if p.returncode != 0:
        sys.exit("bench-live: %s failed (exit %d):\n%s%s" % (" ".join(cmd(variant, port, d)), p.returncode, p.stdout, p.stderr))
    with open(summary) as f:
        s = json.load(f)
    return s["tps"], s["driver"]["cpu_ms_per_1000_tx"], reader

print("\n== commands")
for v in ("off", "on"):
    print("%-3s  %s" % (v, " ".join(cmd(v, "PORT")).replace(work, "$WORK")))
print("on:  plus GET /metrics and GET /api/live?run=KEY&since=SEQ every second")
print("\n== warm-up (not counted)", flush=True)
for v in ("off", "on"):
    run(v, "5")

print("\n== runs: tps, driver CPU ms per 1,000 transactions", flush=True)
res = {}
for i in range(runs):
    order = ("off", "on") if i % 2 == 0 else ("on", "off")
    for v in order:
        tps, cpu, reader = run(v)
        res.setdefault(v, []).append((tps, cpu))
        extra = ""
        if reader:
            extra = "  (%d reads of /metrics + /api/live, %d refused; /metrics %d bytes)" % (reader.ok, reader.failed, reader.metrics_bytes)
        print("run %d  %-3s  %10.1f tps  %7.2f ms CPU / 1,000 tx%s" % (i + 1, v, tps, cpu, extra), flush=True)

off, on = res["off"], res["on"]
ot, nt = statistics.median(x[0] for x in off), statistics.median(x[0] for x in on)
oc, nc = statistics.median(x[1] for x in off), statistics.median(x[1] for x in on)
won = sum(1 for x, y in zip(off, on) if y[0] > x[0])
print("\n== medians of %d alternated runs x %s s" % (runs, dur))
print("%10s  %10s  %6s  %9s  %9s  %6s  %s" % ("off tps", "on tps", "on/off", "off CPU*", "on CPU*", "on/off", "pairs on won"))
print("%10.1f  %10.1f  %6.3f  %9.2f  %9.2f  %6.3f  %d of %d" % (ot, nt, nt / ot, oc, nc, nc / oc, won, runs))
print("ranges: off %.0f-%.0f tps, on %.0f-%.0f tps" % (min(x[0] for x in off), max(x[0] for x in off), min(x[0] for x in on), max(x[0] for x in on)))
print("* driver CPU ms per 1,000 transactions over the measurement window (--json driver.cpu_ms_per_1000_tx)")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
