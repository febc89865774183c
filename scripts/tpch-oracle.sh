#!/usr/bin/env bash
# Creates the TPC-H answer oracle: a Python virtual environment with DuckDB,
# its TPC-H extension and tpchgen-cli (TPC dbgen's data, byte for byte), used
# by scripts/tpch-answers.py and by the tests of internal/workload/tpch/answers
# that recompute the stored answers.
#
#   scripts/tpch-oracle.sh          create or complete ${TUNEBENCH_ORACLE:-<repo>/.oracle}
#
# Idempotent: when the environment already has the pinned versions it only
# checks them and exits. On Debian/Ubuntu as root it installs python3-venv
# and python3-pip with apt-get when `python3 -m venv` does not work.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ORACLE=${TUNEBENCH_ORACLE:-$REPO/.oracle}
# kubernetes-validate checks tunebench kube's manifests offline against
# the Kubernetes OpenAPI schemas (internal/kube).
PKGS=(duckdb==1.5.5 duckdb-extension-tpch==1.5.5 tpchgen-cli==4.0.0 kubernetes-validate==1.37.0)
STAMP="$ORACLE/.tunebench-oracle"
WANT="${PKGS[*]}"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$ORACLE/bin/python" ] &&
  [ -x "$ORACLE/bin/tpchgen-cli" ] && [ -x "$ORACLE/bin/kubernetes-validate" ] && "$ORACLE/bin/python" -c 'import duckdb, duckdb_extension_tpch' 2>/dev/null; then
  exit 0
fi

if ! command -v python3 >/dev/null 2>&1; then
  need_apt=1
else
  probe=$(mktemp -d)
  if python3 -m venv "$probe/v" >/dev/null 2>&1 && [ -x "$probe/v/bin/pip" ]; then need_apt=0; else need_apt=1; fi
  rm -rf "$probe"
fi
if [ "$need_apt" = 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tpch-oracle: installing python3-venv python3-pip with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
  else
    echo "tpch-oracle: needs python3 with the venv module (Debian: apt-get install python3-venv python3-pip)" >&2
    exit 1
  fi
fi

# A half-made environment (no pip, say) is made anew.
if [ ! -x "$ORACLE/bin/pip" ]; then
  rm -rf "$ORACLE"
  python3 -m venv "$ORACLE"
fi
rm -f "$STAMP"
echo "tpch-oracle: installing ${PKGS[*]} into $ORACLE"
"$ORACLE/bin/pip" install --quiet --disable-pip-version-check "${PKGS[@]}"
"$ORACLE/bin/python" - <<'EOF'
import os, duckdb, duckdb_extension_tpch
ext = os.path.join(os.path.dirname(duckdb_extension_tpch.__file__), "extensions", "v" + duckdb.__version__, "tpch.duckdb_extension")
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute("LOAD '%s'" % ext.replace("'", "''"))
EOF
"$ORACLE/bin/tpchgen-cli" --version >/dev/null
"$ORACLE/bin/kubernetes-validate" --version >/dev/null
echo "$WANT" >"$STAMP"
echo "tpch-oracle: ready ($ORACLE)"
