#!/usr/bin/env bash
# bench-mariadb.sh: tunebench next to sysbench 1.0 on one managed MariaDB.
#
# Builds tunebench, starts a throw-away managed MariaDB (tunebench server
# start --engine mariadb), then:
#   - point select: `sysbench oltp_point_select` and `tunebench run script`
#     with the same statement (SELECT c FROM sbtest1 WHERE id = ?, id
#     uniform over the table) on sysbench's own table, the same number of
#     client threads/connections, alternated RUNS times; tps and the client
#     process's CPU (user + system, from wait4's rusage, start-up included)
#     per transaction;
#   - load: `tunebench load tpcb --scale S` (S * 100,000 accounts, LOAD DATA
#     LOCAL INFILE) against `sysbench oltp_point_select prepare` of the same
#     number of rows (multi-row INSERTs, then its secondary index),
#     alternated RUNS times, wall time.
#
# Settings (environment): ROWS (1000000: the point-select table and the
# load's row count), THREADS (4), DURATION seconds (20), RUNS (3). The
# server and its data are removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
THREADS=${THREADS:-4}
DURATION=${DURATION:-20}
RUNS=${RUNS:-3}
for tool in sysbench mariadbd python3; do
	command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
	command -v "$tool" >/dev/null || { echo "bench-mariadb: $tool not found (apt-get install sysbench mariadb-server)" >&2; exit 1; }
done

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
echo "sysbench: $(sysbench --version)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" PORT="$port" ROWS="$ROWS" THREADS="$THREADS" DURATION="$DURATION" RUNS="$RUNS" python3 - <<'PY'
import os, re, statistics, subprocess, sys, time, json

tb, work, port = os.environ["TB"], os.environ["WORK"], os.environ["PORT"]
rows, threads, duration, runs = int(os.environ["ROWS"]), os.environ["THREADS"], os.environ["DURATION"], int(os.environ["RUNS"])
srv = os.path.join(work, "srv")
pw = open(os.path.join(srv, "tunebench.pass")).read().strip()
# sysbench takes the password on its command line; it is a throw-away
# server's, in a directory removed at the end.
sb = ["sysbench", "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + port, "--mysql-user=tunebench",
      "--mysql-password=" + pw, "--mysql-db=tunebench", "--tables=1", "--table-size=%d" % rows]
script = os.path.join(work, "point_select.sql")
with open(script, "w") as f:
    f.write("\\set id random(1, %d)\nSELECT c FROM sbtest1 WHERE id = :id;\n" % rows)

def rusage_run(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read().decode()
    err = p.stderr.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.monotonic() - t0
    if status != 0:
        sys.exit("bench-mariadb: %s failed (status %d):\n%s%s" % (cmd[0], status, out, err))
    return out, dt, ru.ru_utime + ru.ru_stime

print("\n== point select: sysbench's table of %d rows, %s threads, %s s per run" % (rows, threads, duration), flush=True)
rusage_run(sb + ["oltp_point_select", "prepare"])
cmds = {
    "sysbench": sb + ["oltp_point_select", "run", "--threads=" + threads, "--time=" + duration, "--rand-type=uniform", "--report-interval=0"],
    "tunebench": [tb, "run", "script", "--server-dir", srv, "-f", script, "-c", threads, "-T", duration + "s", "-P", "0",
                  "--results", os.path.join(work, "results.db"), "--json", os.path.join(work, "run.json")],
}
# The same with one driver thread per core (the default on PostgreSQL; a
# MariaDB on this machine gets one per 4 cores, at least one).
cmds["tunebench-jcpu"] = cmds["tunebench"] + ["--threads", str(os.cpu_count())]
for name, c in cmds.items():
    print("%-14s  %s" % (name, " ".join(c).replace(work, "$WORK").replace(pw, "$PASSWORD")))
# A short run of each first, not counted (the buffer pool warms).
for name, c in cmds.items():
    w = [x.replace("--time=" + duration, "--time=5") for x in c]
    w = [("5s" if x == duration + "s" else x) for x in w]
    rusage_run(w)
res = {}
for i in range(runs):
    for name, c in cmds.items():
        out, dt, cpu = rusage_run(c)
        if name == "sysbench":
            n = int(re.search(r"transactions:\s+(\d+)", out).group(1))
            tps = float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out).group(1))
        else:
            s = json.load(open(os.path.join(work, "run.json")))
            n, tps = s["transactions"], s["tps"]
        res.setdefault(name, []).append((tps, cpu / n * 1e6))
        print("run %d  %-14s  %9.1f tps  %6.1f us CPU per transaction" % (i + 1, name, tps, cpu / n * 1e6), flush=True)

def med(name, k):
    return statistics.median(r[k] for r in res[name])
s_tps, s_cpu = med("sysbench", 0), med("sysbench", 1)
print("\n== medians of %d runs" % runs)
print("sysbench        %9.1f tps  %6.1f us CPU per transaction" % (s_tps, s_cpu))
for name in ("tunebench", "tunebench-jcpu"):
    t_tps, t_cpu = med(name, 0), med(name, 1)
    print("%-14s  %9.1f tps  %6.1f us CPU per transaction   (%.2f x tps, %.2f x CPU per transaction)" % (name, t_tps, t_cpu, t_tps / s_tps, t_cpu / s_cpu))

scale = max(1, rows // 100000)
print("\n== load: %d rows (tpcb scale %d against sysbench prepare of %d rows)" % (scale * 100000, scale, scale * 100000), flush=True)
loads = {
    "sysbench": (sb[:-1] + ["--table-size=%d" % (scale * 100000), "oltp_point_select", "prepare"], sb + ["oltp_point_select", "cleanup"]),
    "tunebench": ([tb, "load", "tpcb", "--server-dir", srv, "--scale", str(scale), "--drop"], None),
}
for name, (c, _) in loads.items():
    print("%-9s  %s" % (name, " ".join(c).replace(work, "$WORK").replace(pw, "$PASSWORD")))
res = {}
for i in range(runs):
    for name, (c, before) in loads.items():
        if before:
            rusage_run(before)
        _, dt, _ = rusage_run(c)
        res.setdefault(name, []).append(dt)
        print("run %d  %-9s  %6.2f s" % (i + 1, name, dt), flush=True)
s, t = statistics.median(res["sysbench"]), statistics.median(res["tunebench"])
print("\n== medians of %d loads" % runs)
print("sysbench prepare   %6.2f s" % s)
print("tunebench load     %6.2f s   (%.2f x sysbench's time)" % (t, t / s))
PY
