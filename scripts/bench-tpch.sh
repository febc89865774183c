#!/usr/bin/env bash
# bench-tpch.sh: `tunebench load tpch` at SF 1 next to tpchgen-cli
# generating the same data to /dev/null (and next to go-tpc's tpch prepare
# where a version that speaks PostgreSQL installs), then one power test with
# the server's default settings (docs/benchmarks.md).
#
# Builds tunebench, makes the oracle environment (scripts/tpch-oracle.sh:
# tpchgen-cli), starts a throw-away managed server, then runs RUNS rounds
# alternating tunebench / tpchgen-cli (A B A B ...; each load drops and
# rebuilds the tables), prints every round and the medians, and ends with a
# validation and a power test on the last load.
#
# Settings (environment): SF (1) RUNS (3). The server and its data are
# removed on exit, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
SF=${SF:-1}
RUNS=${RUNS:-3}

BENCH_NAME=bench-tpch
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"
bash scripts/tpch-oracle.sh >/dev/null
ORACLE=${TUNEBENCH_ORACLE:-$PWD/.oracle}

echo "== starting a managed server in $work/srv (default settings)"
"$TB" server start --dir "$work/srv" >/dev/null
eval "$("$TB" server env --dir "$work/srv")"

echo "== machine"
echo "cores (nproc): $(nproc)"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "server: $(psql -XAtc 'SELECT version()')"
echo "tpchgen-cli: $("$ORACLE/bin/tpchgen-cli" --version)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"

TB="$TB" WORK="$work" SF="$SF" RUNS="$RUNS" ORACLE="$ORACLE" python3 - <<'PY'
import os, re, resource, statistics, subprocess, time

tb, work, sf, runs, oracle = os.environ["TB"], os.environ["WORK"], os.environ["SF"], int(os.environ["RUNS"]), os.environ["ORACLE"]
srv = os.path.join(work, "srv")
load = [tb, "load", "tpch", "--server-dir", srv, "--scale", sf, "--drop"]
gen = [os.path.join(oracle, "bin", "tpchgen-cli"), "-s", sf, "--stdout"]
print("\n== commands")
print("tunebench    ", " ".join(load).replace(work, "$WORK"))
print("tpchgen-cli  ", " ".join(gen).replace(oracle, "$ORACLE"), "> /dev/null")

def timed(cmd, out):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (cmd[0], p.stderr))
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)

rows = {"tunebench": [], "tpchgen-cli": []}
print("\n== rounds (tunebench: whole load; tpchgen-cli: generation only)")
for i in range(runs):
    subprocess.run(["psql", "-XqAtc", "CHECKPOINT"], check=True)
    out = subprocess.run(load, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("load failed:\n" + out.stderr)
    m = re.search(r"loaded tpch scale \S+ with (\d+) jobs: (\d+) rows in ([\d.]+) s \(text pool ([\d.]+) s beside the preparation, generate and COPY ([\d.]+) s, then statistics and keys ([\d.]+) s\); generator CPU ([\d.]+) s", out.stdout)
    jobs, n, total, pool, copy, keys, cpu = m.groups()
    rows["tunebench"].append(float(total))
    print("round %d tunebench   %6.1f s  %s jobs, %s rows, %.0fk rows/s; text pool %s s, generate+COPY %s s (indexes of finished tables beside it), then keys %s s; generator CPU %s s (+ pool)" % (
        i + 1, float(total), jobs, n, int(n) / float(total) / 1000, pool, copy, keys, cpu))
    with open(os.devnull, "w") as null:
        wall, cpu = timed(gen, null)
    rows["tpchgen-cli"].append(wall)
    print("round %d tpchgen-cli %6.1f s  CPU %.1f s (user+sys), to /dev/null" % (i + 1, wall, cpu))
print("\n== medians: tunebench load %.1f s (keyed and analyzed); tpchgen-cli generation %.1f s" % (
    statistics.median(rows["tunebench"]), statistics.median(rows["tpchgen-cli"])))
PY

echo
echo "== go-tpc tpch prepare"
if command -v go-tpc >/dev/null && go-tpc tpch prepare --help 2>&1 | grep -q postgres; then
	db=gotpc; psql -XqAtc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
	pw=$(cut -d: -f5 "$PGPASSFILE" | head -1)
	/usr/bin/time -f "go-tpc tpch prepare: %e s wall" go-tpc tpch prepare --sf "${SF%.*}" -d postgres -H "$PGHOST" -P "$PGPORT" -U "$PGUSER" -p "$pw" -D "$db" --analyze >/dev/null
else
	echo "skipped: no go-tpc that speaks PostgreSQL (go install github.com/pingcap/go-tpc/cmd/go-tpc@latest; v1.0.7 speaks only MySQL)"
fi

echo
echo "== validation and a power test on the last load (default settings)"
"$TB" run tpch --validate --server-dir "$work/srv" --results "$work/r.db" | grep -E "answers match|DIFFERS" || true
"$TB" run tpch --test power --seed 1 --server-dir "$work/srv" --results "$work/r.db" 2>/dev/null | sed -n '/^SF /,$p'
