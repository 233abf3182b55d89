#!/usr/bin/env bash
# bench/point-select.sh: what encryption costs a point select. Runs
# `pgbench -S -M prepared -c 4 -j 2` (SELECT abalance FROM pgbench_accounts
# WHERE aid = $1) against three targets on one throwaway cluster,
# interleaving them round by round so machine noise hits all three alike:
#
#   direct        the server, on a plaintext pgbench database
#   pass-through  the proxy in front of that same plaintext database
#   encrypted     a second proxy in front of a second database, initialised
#                 THROUGH the proxy with pgbench -i, so every column of
#                 pgbench's tables is encrypted. The point select compares
#                 aid on its Eq onion (peeled to DET by the primary key) and
#                 the proxy decrypts abalance.
#
# The encrypted database's columns are declared (proxy columns set) with the
# eq and ord capabilities (eq only for the fillers), without add: Paillier
# encryption would make pgbench -i take minutes (see bench/README.md and
# TestPgbenchInit in internal/engine/copy_test.go).
#
# Prints a Markdown table: median TPS over the rounds, and its ratio to
# direct and to pass-through (goal: encrypted >= 0.80 of pass-through).
#
# Usage: bench/point-select.sh [-s SCALE] [-t TRANSACTIONS_PER_CLIENT] [-r ROUNDS]
# Needs: PostgreSQL server binaries, pgbench, Go. Runs as root (the server
# then runs as the postgres user) or as a normal user.
# Time bounds (seconds, environment): INIT_TIMEOUT (each pgbench -i, default
# 900), RUN_TIMEOUT (each pgbench run, default 300).
set -euo pipefail

SCALE=1 TX=5000 ROUNDS=3
while getopts "s:t:r:" o; do
  case $o in s) SCALE=$OPTARG ;; t) TX=$OPTARG ;; r) ROUNDS=$OPTARG ;; *) exit 2 ;; esac
done
INIT_TIMEOUT=${INIT_TIMEOUT:-900} RUN_TIMEOUT=${RUN_TIMEOUT:-300}

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "no PostgreSQL server binaries (set PGBINDIR)" >&2; exit 1; }
PGBENCH=$bindir/pgbench

work=$(mktemp -d /tmp/pgonion-point.XXXXXX)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  as_pg "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGPORT=$(free_port) PLAINPROXY=$(free_port) ENCPROXY=$(free_port)
wait_ready() {
  for _ in $(seq 300); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1" && return 0; sleep 0.1; done
  echo "nothing answers on port $1" >&2; return 1
}

echo "building the proxy..." >&2
(cd "$root" && go build -o "$work/proxy" ./cmd/proxy)

echo "starting PostgreSQL on $PGPORT..." >&2
as_pg "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync >/dev/null
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100" start >/dev/null
"$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_plain
"$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_enc

echo "pgbench -i -s $SCALE, directly (plaintext database)..." >&2
timeout "$INIT_TIMEOUT" "$PGBENCH" -i -q -s "$SCALE" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_plain >"$work/init-plain.log" 2>&1 \
  || { cat "$work/init-plain.log" >&2; exit 1; }

# Pass-through: the proxy in front of the plaintext database (its tables
# were created directly, so the proxy manages none of their columns).
"$work/proxy" keys init --keystore "$work/plain.keystore" --master-key-file "$work/plain.master" >/dev/null
"$work/proxy" serve --listen "127.0.0.1:$PLAINPROXY" --auth trust --log-level warn \
  --keystore "$work/plain.keystore" --master-key-file "$work/plain.master" \
  --backend "postgres://postgres@127.0.0.1:$PGPORT/bench_plain?sslmode=disable" 2>"$work/proxy-plain.log" &
pids+=($!)

# Encrypted: declare pgbench's columns before the tables exist, then let
# pgbench -i create and load them through the proxy.
enckeys=(--keystore "$work/enc.keystore" --master-key-file "$work/enc.master")
encdsn="postgres://postgres@127.0.0.1:$PGPORT/bench_enc?sslmode=disable"
"$work/proxy" keys init "${enckeys[@]}" >/dev/null
declare -A columns=(
  [pgbench_accounts]="aid bid abalance filler"
  [pgbench_branches]="bid bbalance filler"
  [pgbench_tellers]="tid bid tbalance filler"
  [pgbench_history]="tid bid aid delta mtime filler"
)
for table in "${!columns[@]}"; do
  for col in ${columns[$table]}; do
    caps=eq,ord; [ "$col" = filler ] && caps=eq
    timeout 60 "$work/proxy" columns set "$table.$col" --policy encrypted --capabilities "$caps" \
      "${enckeys[@]}" --backend "$encdsn" >/dev/null
  done
done
"$work/proxy" serve --listen "127.0.0.1:$ENCPROXY" --auth trust --log-level warn "${enckeys[@]}" \
  --backend "$encdsn" 2>"$work/proxy-enc.log" &
pids+=($!)
wait_ready "$PLAINPROXY"
wait_ready "$ENCPROXY"

echo "pgbench -i -s $SCALE through the proxy (encrypted database)..." >&2
start=$(date +%s)
if ! timeout "$INIT_TIMEOUT" "$PGBENCH" -i -s "$SCALE" -h 127.0.0.1 -p "$ENCPROXY" -U postgres bench_enc >"$work/init-enc.log" 2>&1; then
  echo "pgbench -i through the proxy failed (or exceeded ${INIT_TIMEOUT}s):" >&2
  cat "$work/init-enc.log" >&2
  echo "--- proxy log:" >&2; tail -20 "$work/proxy-enc.log" >&2
  exit 1
fi
init_secs=$(( $(date +%s) - start ))
echo "  took ${init_secs}s" >&2
# The server must hold no plaintext pgbench column in the encrypted database.
plain=$("$bindir/psql" -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres bench_enc -c \
  "SELECT count(*) FROM information_schema.columns WHERE table_name = 'pgbench_accounts' AND column_name IN ('aid', 'abalance')")
eqpk=$("$bindir/psql" -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres bench_enc -c \
  "SELECT count(*) FROM pg_indexes WHERE indexname = 'pgbench_accounts_pkey' AND indexdef LIKE '%__eq)%'")
[ "$plain" = 0 ] || { echo "bench_enc still has $plain plaintext aid/abalance columns" >&2; exit 1; }
[ "$eqpk" = 1 ] || echo "warning: pgbench_accounts_pkey is not on aid's Eq onion" >&2
# Through the proxy the rows read back in plaintext.
rows=$(timeout 60 "$bindir/psql" -X -At -h 127.0.0.1 -p "$ENCPROXY" -U postgres bench_enc -c \
  "SELECT count(*) FROM pgbench_accounts")
bal=$(timeout 60 "$bindir/psql" -X -At -h 127.0.0.1 -p "$ENCPROXY" -U postgres bench_enc -c \
  "SELECT abalance FROM pgbench_accounts WHERE aid = 1")
[ "$rows" = $((SCALE * 100000)) ] && [ "$bal" = 0 ] \
  || { echo "through the proxy: $rows accounts (want $((SCALE * 100000))), abalance of aid 1 '$bal' (want 0)" >&2; exit 1; }

declare -A portOf=([direct]=$PGPORT [pass-through]=$PLAINPROXY [encrypted]=$ENCPROXY)
declare -A dbOf=([direct]=bench_plain [pass-through]=bench_plain [encrypted]=bench_enc)
targets=(direct pass-through encrypted)
results="$work/results.txt"
: > "$results"
errors=0
for round in $(seq "$ROUNDS"); do
  for target in "${targets[@]}"; do
    rc=0
    out=$(timeout "$RUN_TIMEOUT" "$PGBENCH" -S -M prepared -n -c 4 -j 2 -t "$TX" \
            -h 127.0.0.1 -p "${portOf[$target]}" -U postgres "${dbOf[$target]}" 2>&1) || rc=$?
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
    failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
    if [ "$rc" != 0 ] || [ -z "$tps" ]; then
      errors=$((errors + 1))
      echo "round $round: $target FAILED (exit $rc):" >&2
      grep -iE 'error|abort|fatal|refused' <<<"$out" | head -5 >&2 || tail -5 <<<"$out" >&2
      continue
    fi
    echo "$target $round $tps ${failed:-?}" >> "$results"
    echo "round $round: $target: $tps tps, failed ${failed:-?}" >&2
  done
done

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "NA"; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med() { awk -v t="$1" '$1==t {print $3}' "$results" | median; }

echo
echo "pgbench -S -M prepared -c 4 -j 2, scale $SCALE, $TX transactions per client, median of $ROUNDS rounds"
echo "machine: $(nproc) cores, $(uname -m), $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | xargs)"
echo "encrypted database: pgbench -i through the proxy took ${init_secs}s (capabilities eq,ord; eq for fillers)"
echo
echo "| target | median TPS | ratio to direct | ratio to pass-through |"
echo "|---|---|---|---|"
d=$(med direct); p=$(med pass-through)
for target in "${targets[@]}"; do
  t=$(med "$target")
  awk -v n="$target" -v t="$t" -v d="$d" -v p="$p" 'function r(a, b) { return (a == "NA" || b == "NA" || b == 0) ? "NA" : sprintf("%.2f", a / b) }
    BEGIN {printf "| %s | %s | %s | %s |\n", n, (t == "NA" ? "NA" : sprintf("%.0f", t)), r(t, d), r(t, p)}'
done
fails=$(awk '$4 != 0' "$results" | wc -l)
echo
echo "runs with failed transactions: $fails; runs that errored: $errors"
[ "$errors" = 0 ]
