#!/usr/bin/env bash
# Installs what tunebench needs and the machine lacks: the PostgreSQL server
# (initdb, postgres, pg_ctl) and client (pgbench, psql), and, optionally,
# xfsprogs and btrfs-progs. As root on Debian/Ubuntu it uses apt-get;
# otherwise it prints the command to run.
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

# Optional: the xfs and btrfs tools, for storage layouts on those
# filesystems and for their features in the environment snapshot. Installed
# along with the rest when apt-get can; otherwise named, never required.
# (They live in sbin, which an unprivileged PATH may lack.)
have_tool() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

pkgs=()
have_server || pkgs+=(postgresql)
have_client || pkgs+=(postgresql-client)
opt=()
have_tool mkfs.xfs || opt+=(xfsprogs)
have_tool mkfs.btrfs || opt+=(btrfs-progs)
[ ${#pkgs[@]} -eq 0 ] && [ ${#opt[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${pkgs[*]} ${opt[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${pkgs[@]}" "${opt[@]}" >/dev/null
  exit 0
fi
if [ ${#opt[@]} -gt 0 ]; then
  echo "optional, for xfs and btrfs storage layouts: install ${opt[*]}" >&2
fi
[ ${#pkgs[@]} -eq 0 ] && exit 0
if command -v apt-get >/dev/null 2>&1; then
  echo "tunebench needs PostgreSQL. Run:  sudo apt-get install -y ${pkgs[*]}" >&2
  exit 1
else
  echo "tunebench needs the PostgreSQL server and client (initdb, postgres, pg_ctl, pgbench)." >&2
  echo "Install them with your package manager (e.g. dnf install postgresql-server postgresql-contrib)," >&2
  echo "or pass --pg-bin DIR to tunebench." >&2
  exit 1
fi
