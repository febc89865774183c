#!/usr/bin/env bash
# bench-mariadb-tpcc.sh: tunebench's tpcc next to go-tpc's MySQL tpcc on
# one managed MariaDB.
#
# Builds tunebench, installs go-tpc (GO_TPC_VERSION, from the Go module
# proxy) when it is not on the PATH, starts a throw-away managed MariaDB
# (tunebench server start --engine mariadb), then:
#   - load: `tunebench load tpcc --warehouses W` (LOAD DATA LOCAL INFILE)
#     against `go-tpc tpcc prepare --warehouses W --no-check` (multi-row
#     INSERTs, one thread per core; its own database), alternated RUNS
#     times, wall time (neither checks the data after the load);
#   - run: `go-tpc tpcc run` and `tunebench run tpcc` in both modes, the
#     same warehouses, THREADS connections (go-tpc's threads, tunebench's
#     virtual users), no keying or think times, DURATION seconds,
#     alternated RUNS times: New-Orders per minute (go-tpc's tpmC: the
#     New-Orders it completed per minute; tunebench's NOPM: the committed
#     New-Orders per minute) and the client process's CPU (user + system,
#     from wait4's rusage) per New-Order. Each tool runs on its own
#     database, reloaded by neither between runs (both grow a little).
#
# Settings (environment): WAREHOUSES (4), THREADS (4), DURATION seconds
# (20), RUNS (3), GO_TPC_VERSION (v1.0.7). The server and its data are
# removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
WAREHOUSES=${WAREHOUSES:-4}
THREADS=${THREADS:-4}
DURATION=${DURATION:-20}
RUNS=${RUNS:-3}
GO_TPC_VERSION=${GO_TPC_VERSION:-v1.0.7}
PATH=$PATH:/usr/sbin:$(go env GOPATH)/bin
for tool in mariadbd python3 go; do
	command -v "$tool" >/dev/null || { echo "bench-mariadb-tpcc: $tool not found (apt-get install mariadb-server python3 golang)" >&2; exit 1; }
done
if ! command -v go-tpc >/dev/null; then
	echo "== installing go-tpc $GO_TPC_VERSION"
	go install "github.com/pingcap/go-tpc/cmd/go-tpc@$GO_TPC_VERSION"
fi

make -s build
TB=$PWD/bin/tunebench
work=$(mktemp -d /var/tmp/tunebench-bench.XXXXXX)
chmod 0755 "$work"
cleanup() {
	"$TB" server stop --dir "$work/srv" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== starting a managed MariaDB in $work/srv"
"$TB" server start --engine mariadb --dir "$work/srv" >"$work/start.log" 2>&1 || { cat "$work/start.log" >&2; exit 1; }
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$work/srv/tunebench.json")

echo "== machine"
echo "cores (nproc): $(nproc)"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "kernel: $(uname -sr)"
echo "server: $(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$work/srv/tunebench.json")"
echo "go-tpc: $(go version -m "$(command -v go-tpc)" | awk '$1 == "mod" {print $3}')"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" PORT="$port" WAREHOUSES="$WAREHOUSES" THREADS="$THREADS" DURATION="$DURATION" RUNS="$RUNS" python3 - <<'PY'
import os, re, statistics, subprocess, sys, time, json

tb, work, port = os.environ["TB"], os.environ["WORK"], os.environ["PORT"]
wh, threads, duration, runs = os.environ["WAREHOUSES"], os.environ["THREADS"], os.environ["DURATION"], int(os.environ["RUNS"])
srv = os.path.join(work, "srv")
pw = open(os.path.join(srv, "tunebench.pass")).read().strip()
# go-tpc takes the password on its command line; it is a throw-away
# server's, in a directory removed at the end.
gt = ["go-tpc", "tpcc", "-H", "127.0.0.1", "-P", port, "-U", "tunebench", "-p", pw, "-D", "gotpc", "--warehouses", wh]
subprocess.run(["mariadb", "--defaults-file=" + os.path.join(srv, "client.cnf"), "-e", "CREATE DATABASE IF NOT EXISTS gotpc"], check=True)

def rusage_run(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.monotonic() - t0
    if status != 0:
        sys.exit("bench-mariadb-tpcc: %s failed (status %d):\n%s" % (cmd[0], status, out[-4000:]))
    return out, dt, ru.ru_utime + ru.ru_stime

def show(cmd):
    return " ".join(cmd).replace(work, "$WORK").replace(pw, "$PASSWORD")

print("\n== load: %s warehouses" % wh, flush=True)
loads = {
    "go-tpc prepare": gt + ["prepare", "-T", str(os.cpu_count()), "--dropdata", "--no-check"],
    "tunebench load": [tb, "load", "tpcc", "--server-dir", srv, "--warehouses", wh, "--drop"],
}
for name, c in loads.items():
    print("%-15s %s" % (name, show(c)))
ld = {}
for i in range(runs):
    for name, c in loads.items():
        out, dt, cpu = rusage_run(c)
        ld.setdefault(name, []).append((dt, cpu))
        print("run %d  %-15s  %6.1f s  (client CPU %5.1f s)" % (i + 1, name, dt, cpu), flush=True)

print("\n== run: %s warehouses, %s connections, %s s per run" % (wh, threads, duration), flush=True)
js = os.path.join(work, "run.json")
cmds = {
    "go-tpc": gt + ["run", "-T", threads, "--time", duration + "s", "--interval", "1000s"],
    "tunebench-sql": [tb, "run", "tpcc", "--server-dir", srv, "--mode", "sql", "--vusers", threads, "--rampup", "0s", "--duration", duration + "s",
                      "--no-check", "--results", os.path.join(work, "results.db"), "--json", js],
}
cmds["tunebench-procs"] = [("procs" if x == "sql" else x) for x in cmds["tunebench-sql"]]
for name, c in cmds.items():
    print("%-16s %s" % (name, show(c)))
# A short run of each first, not counted (the buffer pool warms).
for name, c in cmds.items():
    rusage_run([("5s" if x == duration + "s" else x) for x in c])
res = {}
for i in range(runs):
    for name, c in cmds.items():
        out, dt, cpu = rusage_run(c)
        if name == "go-tpc":
            nopm = float(re.search(r"tpmC: ([\d.]+)", out).group(1))
            n = nopm * float(duration) / 60
        else:
            s = json.load(open(js))
            nopm = s["nopm"]
            n = next(t["count"] for t in s["per_transaction"] if t["op"] == "new_order")
        res.setdefault(name, []).append((nopm, cpu / n * 1e6))
        print("run %d  %-16s  %9.0f New-Orders per minute  %6.0f us client CPU per New-Order" % (i + 1, name, nopm, cpu / n * 1e6), flush=True)

def med(d, name, k):
    return statistics.median(r[k] for r in d[name])
print("\n== medians of %d runs" % runs)
g_data = med(ld, "go-tpc prepare", 0)
t_data = med(ld, "tunebench load", 0)
print("load: go-tpc prepare %.1f s, tunebench %.1f s: %.2f x go-tpc's time" % (g_data, t_data, t_data / g_data))
g_nopm, g_cpu = med(res, "go-tpc", 0), med(res, "go-tpc", 1)
print("go-tpc           %9.0f New-Orders per minute  %6.0f us client CPU per New-Order" % (g_nopm, g_cpu))
for name in ("tunebench-sql", "tunebench-procs"):
    n, c = med(res, name, 0), med(res, name, 1)
    print("%-16s %9.0f New-Orders per minute  %6.0f us client CPU per New-Order   (%.2f x NOPM, %.2f x CPU per New-Order)" % (name, n, c, n / g_nopm, c / g_cpu))
PY
