#!/usr/bin/env bash
# Installs what tunebench needs and the machine lacks: the PostgreSQL server
# (initdb, postgres, pg_ctl) and client (pgbench, psql). As root on
# Debian/Ubuntu it uses apt-get; otherwise it prints the command to run.
set -euo pipefail

have_server() {
  command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ] && return 0
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
have_client() { command -v pgbench >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1; }

if ! command -v go >/dev/null 2>&1; then
  echo "Go is required (the one prerequisite): see https://go.dev/doc/install" >&2
  exit 1
fi

pkgs=()
have_server || pkgs+=(postgresql)
have_client || pkgs+=(postgresql-client)
[ ${#pkgs[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${pkgs[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${pkgs[@]}" >/dev/null
elif command -v apt-get >/dev/null 2>&1; then
  echo "tunebench needs PostgreSQL. Run:  sudo apt-get install -y ${pkgs[*]}" >&2
  exit 1
else
  echo "tunebench needs the PostgreSQL server and client (initdb, postgres, pg_ctl, pgbench)." >&2
  echo "Install them with your package manager (e.g. dnf install postgresql-server postgresql-contrib)," >&2
  echo "or pass --pg-bin DIR to tunebench." >&2
  exit 1
fi
