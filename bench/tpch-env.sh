# Sourced by bench/tpch-smoke and bench/tpch-report: makes a Python
# virtual environment with DuckDB and its TPC-H extension (PyPI wheels,
# no download at run time) and sets $TPCH_PYTHON to its interpreter.
tpch_venv=${PGONION_TPCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/pgonion/tpch-venv}
if ! "$tpch_venv/bin/python" -c 'import duckdb, duckdb_extension_tpch' >/dev/null 2>&1; then
  echo "setting up $tpch_venv (duckdb 1.5.5 and its tpch extension from PyPI)..." >&2
  command -v python3 >/dev/null 2>&1 || { echo "python3 is needed to generate the data (apt-get install python3 python3-venv)" >&2; exit 1; }
  rm -rf "$tpch_venv"
  python3 -m venv "$tpch_venv" || { echo "python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
  "$tpch_venv/bin/pip" install -q duckdb==1.5.5 duckdb-extension-tpch==1.5.5
fi
TPCH_PYTHON=$tpch_venv/bin/python
