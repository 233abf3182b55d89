#!/usr/bin/env bash
# bench/django.sh: Django's own test suite (the tests/ of the Django 5.2
# sdist from PyPI, psycopg 3) directly on PostgreSQL and through `proxy
# serve` with the default policy (no declarations), app by app, with
# client-side and server-side binding. Prints, per app and target, the
# tests run, failures, errors and skips as Django's runner reports them,
# or the error that stopped the app (often its schema's creation).
# Nothing from Django is committed: it is downloaded into the work
# directory.
#
# Usage: bench/django.sh [-b client|server|both] [APP...]
#   defaults: -b both, the apps of issue 21's acceptance list
# Needs: python3 with venv and PyPI access, PostgreSQL server binaries
#   (PGBINDIR, else the newest /usr/lib/postgresql/*/bin), Go. Loopback
#   only. KEEP_WORK=1 keeps the work directory (and the venv).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
BINDING=both
while getopts "b:h" o; do
  case $o in
    b) BINDING=$OPTARG ;; h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
case $BINDING in client | server | both) ;; *) echo "django.sh: -b takes client, server or both" >&2; exit 2 ;; esac
APPS=("$@")
[ ${#APPS[@]} -gt 0 ] || APPS=(basic lookup aggregation annotations ordering queries expressions update delete get_or_create
  bulk_create select_related many_to_one many_to_many null_queries dates datetimes db_functions pagination transactions
  model_fields custom_lookups backends prefetch_related model_inheritance)
root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "django.sh: no PostgreSQL server binaries (set PGBINDIR)" >&2; exit 1; }

# shellcheck source=lib/workdir.sh
. "$root/bench/lib/workdir.sh"
bench_workdir django
PGPORT=$(free_port) PROXYPORT=$(free_port)

echo "installing Django 5.2 and psycopg into a venv..." >&2
python3 -m venv "$work/venv" || die "python3 -m venv failed"
"$work/venv/bin/pip" install -q "psycopg[binary]" asgiref sqlparse >/dev/null || die "pip install psycopg failed"
"$work/venv/bin/pip" download -q --no-deps --no-binary :all: "Django==5.2.*" -d "$work/src" >/dev/null || die "downloading Django failed"
tar xzf "$work"/src/django-5.2*.tar.gz -C "$work/src"
dj=$(ls -d "$work"/src/django-5.2*/ | head -1)
"$work/venv/bin/pip" install -q -e "$dj" >/dev/null || die "pip install Django failed"
cat >"$dj/tests/test_pgonion.py" <<'EOF'
import os

_db = {
    "ENGINE": "django.db.backends.postgresql",
    "HOST": "127.0.0.1", "PORT": int(os.environ["PGONION_PORT"]), "USER": "postgres",
    "NAME": os.environ["PGONION_DB"],
    "OPTIONS": {"server_side_binding": os.environ.get("PGONION_SSB") == "1"},
}
# The proxy serves one database: the test database is the one named, kept
# (--keepdb), and "other" mirrors "default".
DATABASES = {"default": dict(_db, TEST={"NAME": _db["NAME"]}), "other": dict(_db, TEST={"MIRROR": "default"})}
SECRET_KEY = "pgonion"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = False
EOF

echo "building the proxy and starting PostgreSQL on 127.0.0.1:$PGPORT..." >&2
(cd "$root" && timeout 600 go build -o "$work/proxy" ./cmd/proxy) || die "go build failed"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
timeout 300 "${asPG[@]}" "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync --locale=C -E UTF8 >/dev/null
timeout 120 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100" start >/dev/null
keys=(--keystore "$work/pgonion.keystore" --master-key-file "$work/pgonion.master")
timeout 120 "$work/proxy" keys init "${keys[@]}" >/dev/null 2>&1 || die "proxy keys init failed"

bindings=(client server)
[ "$BINDING" = both ] || bindings=("$BINDING")
cat <<EOF2
### Django 5.2 test suite directly and through the proxy (default policy), $(date -u +%Y-%m-%d)

Machine: $(nproc) cores; PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'); Django $("$work/venv/bin/python" -c 'import django; print(django.__version__)'); commit $commit.
Command: \`bench/django.sh -b $BINDING ${APPS[*]}\`.

| app | binding | direct: tests, failures, errors, skipped | proxy: tests, failures, errors, skipped | proxy stopped by |
|---|---|---|---|---|
EOF2
summary() { # summary LOG: "tests failures errors skipped"
  local ran f e s
  if ! grep -qE '^Ran [0-9]+ test' "$1"; then
    # The runner stopped before its totals (e.g. while printing a
    # sub-test's description that evaluates a QuerySet): count the
    # per-test lines verbosity 2 printed.
    ran=$(grep -cE ' \.\.\. (ok|ERROR|FAIL|skipped.*|expected failure|unexpected success)$' "$1")
    [ "$ran" -gt 0 ] || { echo "0 0 0 0"; return; }
    echo "$ran $(grep -cE ' \.\.\. FAIL$' "$1") $(grep -cE ' \.\.\. ERROR$' "$1") $(grep -cE ' \.\.\. skipped' "$1")"
    return
  fi
  ran=$(awk '/^Ran [0-9]+ test/ {print $2}' "$1" | tail -1)
  f=$(grep -oE '\(failures=[0-9]+' "$1" | tail -1 | cut -d= -f2) # first in the list; not "expected failures="
  e=$(grep -oE 'errors=[0-9]+' "$1" | tail -1 | cut -d= -f2)
  s=$(grep -oE 'skipped=[0-9]+' "$1" | tail -1 | cut -d= -f2)
  echo "${ran:-0} ${f:-0} ${e:-0} ${s:-0}"
}
n=0
for app in "${APPS[@]}"; do
  for b in "${bindings[@]}"; do
    ssb=0
    [ "$b" = server ] && ssb=1
    n=$((n + 1))
    res=()
    for target in direct proxy; do
      db="d${n}_$target"
      "$bindir/psql" -X -q -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c "CREATE DATABASE $db" >/dev/null
      port=$PGPORT
      if [ "$target" = proxy ]; then
        "$work/proxy" serve --listen "127.0.0.1:$PROXYPORT" --auth trust --log-level warn "${keys[@]}" \
          --backend "postgres://postgres@127.0.0.1:$PGPORT/$db?sslmode=disable" 2>"$work/proxy.$n.log" &
        proxy_pid=$!
        wait_ready "$PROXYPORT"
        port=$PROXYPORT
      fi
      (cd "$dj/tests" && PGONION_PORT=$port PGONION_DB=$db PGONION_SSB=$ssb timeout 3600 "$work/venv/bin/python" runtests.py \
        --settings=test_pgonion --keepdb --parallel 1 -v 2 "$app") >"$work/$app.$b.$target.log" 2>&1 || true
      res+=("$(summary "$work/$app.$b.$target.log")")
      if [ "$target" = proxy ]; then
        kill "$proxy_pid" 2>/dev/null || true
        wait "$proxy_pid" 2>/dev/null || true
        proxy_pid=""
      fi
    done
    stop=""
    if ! grep -qE '^Ran [0-9]+ test' "$work/$app.$b.proxy.log"; then
      stop=$(grep -E '^[a-zA-Z_.]+(Error|Exception): ' "$work/$app.$b.proxy.log" | tail -1 | cut -c1-160 | tr '|' '/')
      if [ "${res[1]%% *}" != 0 ]; then
        stop="the runner stopped after the tests (counted from its per-test lines): $stop"
      fi
    fi
    echo "| $app | $b | ${res[0]} | ${res[1]} | ${stop:-} |"
  done
done
