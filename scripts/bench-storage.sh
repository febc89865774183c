#!/usr/bin/env bash
# bench-storage.sh: `tunebench storage` next to the same fio job files run by
# hand, and an fsblog run next to what the blogbench model predicts.
#
# Storage: for each of the five standard tests, RUNS times, alternating
# (A B, then B A, ...):
#   A  tunebench storage --tests T --direct ...      (its job file is taken
#      from the stored summary)
#   B  fio --output-format=json JOB                  (that job file, by hand,
#      with its directory pointed at a fresh by-hand data directory, so fio
#      lays the files out first, as it does for tunebench)
# and prints the medians of MB/s, IOPS and p99 completion latency for both,
# with the ratio tunebench / fio. tunebench only runs fio and reads its JSON,
# so the two must agree within the noise of the disk.
#
# fsblog: one run with blogbench's defaults (tree kept until the script
# ends), then what the readers read per visit against what one visit of each
# blog of the final tree reads, and the bytes against the mean file sizes.
#
# Settings (environment): DIR directory to test (default: the temporary work
# directory), SIZE (256M) JOBS (2) BS (8k) RUNTIME seconds per test (10)
# RUNS (5) DIRECT (1; 0 for buffered I/O), FSBLOG_ITER (10) FSBLOG_INTERVAL
# (3s). Everything is created under a temporary directory and removed on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE=${SIZE:-256M}
JOBS=${JOBS:-2}
BS=${BS:-8k}
RUNTIME=${RUNTIME:-10}
RUNS=${RUNS:-5}
DIRECT=${DIRECT:-1}
FSBLOG_ITER=${FSBLOG_ITER:-10}
FSBLOG_INTERVAL=${FSBLOG_INTERVAL:-3s}

BENCH_NAME=bench-storage
# shellcheck source=scripts/bench-common.sh
. "$PWD/scripts/bench-common.sh"
command -v fio >/dev/null || { echo "$BENCH_NAME: fio not found (apt-get install fio)" >&2; exit 1; }
DIR=${DIR:-$work/data}
mkdir -p "$DIR"

echo "== machine"
echo "cores (nproc): $(nproc)"
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "kernel: $(uname -sr)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "fio: $(fio --version)"
echo "tunebench: $("$TB" version 2>/dev/null | head -1)"
echo "directory: $DIR on $(df -PT "$DIR" | awk 'NR==2 {print $2 " (" $1 ")"}'), mount options $(findmnt -no OPTIONS -T "$DIR" 2>/dev/null || echo '?')"

TB="$TB" WORK="$work" DIR="$DIR" SIZE="$SIZE" JOBS="$JOBS" BS="$BS" RUNTIME="$RUNTIME" RUNS="$RUNS" DIRECT="$DIRECT" \
FSBLOG_ITER="$FSBLOG_ITER" FSBLOG_INTERVAL="$FSBLOG_INTERVAL" python3 - <<'PY'
import json, os, re, statistics, subprocess, sys

tb, work, d = os.environ["TB"], os.environ["WORK"], os.environ["DIR"]
size, jobs, bs, rt, runs = os.environ["SIZE"], os.environ["JOBS"], os.environ["BS"], os.environ["RUNTIME"], int(os.environ["RUNS"])
direct = os.environ["DIRECT"] != "0"
results = os.path.join(work, "results.db")
summary = os.path.join(work, "storage.json")
byhand = os.path.join(work, "byhand")
os.makedirs(byhand, exist_ok=True)
tests = ["seq-read", "seq-write", "rand-read", "rand-write", "rw-mix"]

def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench-storage: %s failed (exit %d):\n%s%s" % (cmd[0], p.returncode, p.stdout, p.stderr))
    return p.stdout

def tb_cmd(test):
    c = [tb, "storage", "--dir", d, "--size", size, "--jobs", jobs, "--block-size", bs, "--runtime", rt + "s",
         "--tests", test, "--results", results, "--json", summary]
    return c + (["--direct"] if direct else [])

def figures(dirs):
    out = {}
    for k in ("read", "write"):
        x = dirs.get(k)
        if x:
            out[k] = (x["mb_s"], x["iops"], x["clat_ms"]["p99"])
    return out

jobfiles = {}
def tunebench(test):
    run(tb_cmd(test))
    with open(summary) as f:
        t = json.load(f)["tests"][0]
    jobfiles[test] = t["job_file"]
    return figures(t)

def fio(test):
    # The job file tunebench ran, pointed at the by-hand directory (fio lays
    # the files out there before the first run, as it did for tunebench).
    # A fresh directory each time: fio lays the files out first, as it did
    # for tunebench (not measured by either).
    subprocess.run(["rm", "-rf", byhand], check=True)
    os.makedirs(byhand)
    jf = re.sub(r"(?m)^directory=.*$", "directory=" + byhand, jobfiles[test])
    path = os.path.join(work, test + ".fio")
    with open(path, "w") as f:
        f.write(jf)
    out = os.path.join(work, test + ".json")
    run(["fio", "--output-format=json", "--output=" + out, path])
    with open(out) as f:
        t = f.read()
    j = json.loads(t[t.index("{"):])["jobs"][0]
    res = {}
    for k in ("read", "write"):
        x = j[k]
        if x["total_ios"]:
            res[k] = {"mb_s": x["bw_bytes"] / 1e6, "iops": x["iops"], "clat_ms": {"p99": x["clat_ns"]["percentile"]["99.000000"] / 1e6}}
    return figures(res)

print("\n== storage: %s, %s jobs, %s blocks, %s s per test, %s, %d runs per tool, alternating" %
      (size, jobs, bs, rt, "direct I/O" if direct else "buffered", runs), flush=True)
print("   A: " + " ".join(tb_cmd("TEST")).replace(work, "$WORK"))
print("   B: fio --output-format=json TEST.fio  (the job file of A, directory=$WORK/byhand, made afresh)")
res = {}
for i in range(runs):
    for test in tests:
        order = (("tunebench", tunebench), ("fio", fio))
        if i % 2:
            order = order[::-1]  # A B, then B A: neither always goes first
        for name, f in order:
            if name == "fio" and test not in jobfiles:
                tunebench(test)  # B needs A's job file once (not counted)
            r = f(test)
            res.setdefault((test, name), []).append(r)
            print("%-10s run %d  %-9s  %s" % (test, i + 1, name, "  ".join(
                "%s %8.1f MB/s %8.0f IOPS p99 %7.3f ms" % (k, *v) for k, v in sorted(r.items()))), flush=True)

print("\n== medians of %d runs; ratio = tunebench / fio of the medians; paired = median and range of" % runs)
print("   the ratios of the two runs next to each other in time (the disk's own drift cancels there)")
print("%-10s %-5s  %8s %8s %6s  %8s %8s %6s %17s  %9s %9s %6s" %
      ("test", "dir", "tb MB/s", "fio MB/s", "ratio", "tb IOPS", "fio IOPS", "ratio", "paired IOPS", "tb p99ms", "fio p99ms", "ratio"))
for test in tests:
    for k in ("read", "write"):
        a = [r[k] for r in res[(test, "tunebench")] if k in r]
        b = [r[k] for r in res[(test, "fio")] if k in r]
        if not a:
            continue
        m = lambda xs, i: statistics.median(x[i] for x in xs)
        pr = [x[1] / y[1] for x, y in zip(a, b)]
        print("%-10s %-5s  %8.1f %8.1f %6.2f  %8.0f %8.0f %6.2f %5.2f (%.2f-%.2f)  %9.3f %9.3f %6.2f" % (
            test, k, m(a, 0), m(b, 0), m(a, 0) / m(b, 0), m(a, 1), m(b, 1), m(a, 1) / m(b, 1),
            statistics.median(pr), min(pr), max(pr), m(a, 2), m(b, 2), m(a, 2) / m(b, 2)))
print("\njob file of rand-read as run:\n" + jobfiles["rand-read"].replace(work, "$WORK"))

# fsblog, with --keep so the finished tree can be compared with what the
# readers read.
it, iv = os.environ["FSBLOG_ITER"], os.environ["FSBLOG_INTERVAL"]
fj = os.path.join(work, "fsblog.json")
cmd = [tb, "fsblog", "--dir", d, "--iterations", it, "--interval", iv, "--keep", "--results", results, "--json", fj]
print("== fsblog: " + " ".join(cmd).replace(work, "$WORK"), flush=True)
print(run(cmd))
with open(fj) as f:
    s = json.load(f)
t = s["totals"]
visits = max(1, t["blog_reads"])

# What one visit of each blog of the final tree reads (docs/storage.md): the
# articles 1..A present without a gap, each picture K <= A+1 present, and,
# half of the time, the comments 1..C present without a gap.
def walk(names, prefix, suffix):
    n = 0
    while "%s%d%s" % (prefix, n + 1, suffix) in names:
        n += 1
    return n
tree = s["tree"]
arts = pics = comms = 0
blogs = [b for b in os.listdir(tree) if b.startswith("blog-")]
for b in blogs:
    names = set(os.listdir(os.path.join(tree, b)))
    a = walk(names, "article-", ".xml")
    arts += a
    pics += sum(1 for k in range(1, a + 2) if "picture-%d.jpg" % k in names)
    comms += walk(names, "comment-", ".xml")
nb = max(1, len(blogs))
print("== fsblog against the model (per visit; the model is one visit of each blog of the final tree)")
print("articles read per visit:  %6.2f   model %6.2f" % (t["article_reads"] / visits, arts / nb))
print("pictures read per visit:  %6.2f   model %6.2f" % (t["picture_reads"] / visits, pics / nb))
print("comments read per visit:  %6.2f   model %6.2f (half of the visits read comments)" % (t["comment_reads"] / visits, comms / nb / 2))
print("(writer-made blogs alone: 50.50 articles and %.2f pictures per visit. Visits happen while the tree grows and\n"
      " commenters keep adding comments, so the final tree has more comments than the average visit saw)" %
      (sum(min(p, a + 1) for a in range(1, 101) for p in range(1, 101)) / 10000))
sizes = {"article": 16895.5, "picture": 36863.5, "comment": 6143.5}  # means of the uniform sizes
for what in ("written", "read"):
    key = "writes" if what == "written" else "reads"
    want = sum(t["%s_%s" % (k, key)] * v for k, v in sizes.items())
    print("bytes %s: %.0f MB (model from the operation counts and mean sizes: %.0f MB)" % (what, t["bytes_" + what] / 1e6, want / 1e6))
PY
