# Sourced by the bench-*.sh scripts (from the repository root, with
# BENCH_NAME set): finds pgbench, checks the tools, builds tunebench ($TB),
# makes the temporary work directory ($work) and removes it and its managed
# server on exit.
# Debian keeps pgbench out of PATH unless postgresql-client-common links it.
if ! command -v pgbench >/dev/null; then
	for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pgbench" ] && PATH=$d:$PATH; done
fi
for tool in pgbench psql python3; do
	command -v "$tool" >/dev/null || { echo "$BENCH_NAME: $tool not found (make deps installs it)" >&2; exit 1; }
done

make -s build
TB=$PWD/bin/tunebench

work=$(mktemp -d /tmp/tunebench-bench.XXXXXX)
chmod 0755 "$work" # the server may run as another user: it must reach its directory
cleanup() {
	"$TB" server stop --dir "$work/srv" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server OPTION...: starts the managed server in $work/srv with the
# options (--set name=value ...) and takes its libpq environment; its
# start-up output is shown if it fails.
start_server() {
	echo "== starting a managed server in $work/srv ($*)"
	"$TB" server start --dir "$work/srv" "$@" >"$work/start.log" 2>&1 || { cat "$work/start.log" >&2; exit 1; }
	eval "$("$TB" server env --dir "$work/srv")"
}

# load_tpcb SCALE: loads the tpcb tables at that scale into the server.
load_tpcb() {
	echo "== loading scale $1"
	"$TB" load tpcb --server-dir "$work/srv" --scale "$1" >"$work/load.log" 2>&1 || { cat "$work/load.log" >&2; exit 1; }
}
