#!/usr/bin/env bash
# bench/adopt.sh: how fast `proxy encrypt` adopts an existing plaintext
# table, and what it costs an application that keeps working meanwhile
# (issue 20). One throwaway cluster; pgbench's accounts table created and
# filled directly on the server (scale SCALE: 100,000 rows per unit); the
# policy keeps aid (the primary key) plain and encrypts bid and abalance
# with eq,ord and filler with the default (eq; search allowed, built on
# first need; no Paillier: the issue's goal is for eq/ord columns). Then:
#   1. the application alone: pgbench through `proxy serve`, CLIENTS
#      clients for SECS seconds, a script that reads one account and sets
#      its balance (-M prepared);
#   2. the same pgbench run while `proxy encrypt pgbench_accounts` runs
#      (it starts with it; the TPS over the adoption's own duration is
#      read from pgbench's progress reports);
#   3. the adoption's wall time, its rows per second, and its CPU time
#      (user + system, of the encrypt process and of the server) per row;
#   4. the final step (`proxy encrypt --yes`), timed alone;
#   5. the rows through the proxy afterwards;
#   6. a first ILIKE on filler: its time (answered by the proxy on the
#      decrypted values), the time until the proxy has built filler's
#      search tokens in the background, and the same ILIKE with them.
# Prints Markdown with the machine and the command.
#
# Usage: bench/adopt.sh [-s SCALE] [-c CLIENTS] [-T SECS] [-b BATCH_BLOCKS] [-r MAX_RATE]
#   defaults: -s 20 -c 4 -T 20 -b 64 -r 0 (MAX_RATE: proxy encrypt --max-rate,
#   rows per second, 0 for none)
# KEEP_WORK=1 keeps the work directory.
# Needs: PostgreSQL server binaries and pgbench (PGBINDIR, else the newest
#   /usr/lib/postgresql/*/bin), Go, python3 (free ports). Loopback only.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

SCALE=20 CLIENTS=4 SECS=20 BATCH=64 RATE=0
while getopts "s:c:T:b:r:h" o; do
  case $o in
    s) SCALE=$OPTARG ;; c) CLIENTS=$OPTARG ;; T) SECS=$OPTARG ;; b) BATCH=$OPTARG ;; r) RATE=$OPTARG ;;
    h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
[[ $RATE =~ ^[0-9]+$ ]] || { echo "adopt.sh: -r takes a non-negative integer, got '$RATE'" >&2; exit 2; }
for v in "$SCALE" "$CLIENTS" "$SECS" "$BATCH"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "adopt.sh: options take positive integers, got '$v'" >&2; exit 2; }
done

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] && [ -x "$bindir/pgbench" ] || { echo "adopt.sh: no PostgreSQL server binaries and pgbench (set PGBINDIR)" >&2; exit 1; }
PGBENCH=$bindir/pgbench PSQL=$bindir/psql

# shellcheck source=lib/workdir.sh
. "$root/bench/lib/workdir.sh"
bench_workdir adopt
# cpu PID...: user+system seconds of the processes (and their waited-for children).
cpu() {
  local total=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] || continue
    total=$(awk -v t="$total" -v hz="$(getconf CLK_TCK)" '{ sub(/^[^)]*\) /, ""); print t + ($12 + $13 + $14 + $15) / hz }' "/proc/$p/stat")
  done
  echo "$total"
}
server_pids() { pgrep -u postgres -f "postgres" | tr '\n' ' '; }
server_cpu() { local s=0 p; for p in $(server_pids); do s=$(echo "$s + $(cpu "$p")" | bc -l); done; echo "$s"; }
PGPORT=$(free_port) PROXYPORT=$(free_port)
DSN="postgres://postgres@127.0.0.1:$PGPORT/adopt?sslmode=disable"

echo "building the proxy..." >&2
(cd "$root" && timeout 600 go build -o "$work/proxy" ./cmd/proxy) || die "go build failed"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)

echo "starting PostgreSQL on 127.0.0.1:$PGPORT..." >&2
timeout 300 "${asPG[@]}" "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync >/dev/null
timeout 120 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100 -c shared_buffers=1GB" start >/dev/null
timeout 60 "$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres adopt

echo "loading pgbench scale $SCALE directly ($((SCALE * 100000)) accounts)..." >&2
timeout 1800 "$PGBENCH" -i -q -s "$SCALE" -h 127.0.0.1 -p "$PGPORT" -U postgres adopt >/dev/null 2>&1 || die "pgbench -i failed"
q() { timeout 600 "$PSQL" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
q "$DSN" -c "CREATE TABLE accounts_plain AS SELECT aid, bid, abalance FROM pgbench_accounts"

keys=(--keystore "$work/pgonion.keystore" --master-key-file "$work/master/pgonion.master")
mkdir -p "$work/master"
timeout 120 "$work/proxy" keys init "${keys[@]}" >/dev/null 2>&1 || die "proxy keys init failed"
for c in "aid plain" "bid encrypted --capabilities eq,ord" "abalance encrypted --capabilities eq,ord" "filler encrypted"; do
  # shellcheck disable=SC2086
  set -- $c
  col=$1; shift
  timeout 120 "$work/proxy" columns set "pgbench_accounts.$col" --policy "$@" --backend "$DSN" "${keys[@]}" >/dev/null || die "columns set $col failed"
done
"$work/proxy" serve --listen "127.0.0.1:$PROXYPORT" --auth trust --log-level warn "${keys[@]}" --backend "$DSN" 2>"$work/proxy.log" &
proxy_pid=$!
wait_ready "$PROXYPORT"

cat >"$work/app.sql" <<EOF
\\set aid random(1, $((SCALE * 100000)))
\\set delta random(-5000, 5000)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_accounts SET abalance = :delta WHERE aid = :aid;
EOF
app() { timeout $((SECS + 600)) "$PGBENCH" -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -P 1 "$@" -f "$work/app.sql" \
  -h 127.0.0.1 -p "$PROXYPORT" -U postgres adopt; }

echo "the application alone for ${SECS}s..." >&2
app -T "$SECS" >"$work/before.log" 2>&1 || die "pgbench (before) failed: $(tail -3 "$work/before.log")"
before_tps=$(awk '/^tps = / {printf "%.1f", $3; exit}' "$work/before.log")

echo "adopting pgbench_accounts while the application runs..." >&2
"$PGBENCH" -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -P 1 -T $((SECS * 60)) -f "$work/app.sql" \
  -h 127.0.0.1 -p "$PROXYPORT" -U postgres adopt >"$work/during.log" 2>&1 &
bench_pid=$!
sleep 1
scpu0=$(server_cpu)
t0=$(date +%s.%N)
/usr/bin/time -f "%U %S" -o "$work/encrypt.time" "$work/proxy" encrypt --batch-blocks "$BATCH" --max-rate "$RATE" --backend "$DSN" "${keys[@]}" pgbench_accounts \
  >"$work/encrypt.log" 2>"$work/encrypt.err" </dev/null || die "proxy encrypt failed: $(tail -3 "$work/encrypt.err")"
t1=$(date +%s.%N)
scpu1=$(server_cpu)
kill -TERM "$bench_pid" 2>/dev/null || true # a background job ignores SIGINT
wait "$bench_pid" 2>/dev/null || true
wall=$(echo "$t1 - $t0" | bc -l)
enc_cpu=$(awk '{print $1 + $2}' "$work/encrypt.time")
rows=$((SCALE * 100000))
# TPS over the adoption's duration: pgbench's per-second progress lines
# ("progress: 3.0 s, 1234.5 tps, ...") after the first second, for as
# many seconds as the adoption took.
during_tps=$(awk -v n="$(printf '%.0f' "$wall")" '/^progress: / && $5 == "tps," { if (c++ >= 1 && c <= n + 1) { s += $4; k++ } } END { if (k) printf "%.1f", s / k; else print "n/a" }' "$work/during.log")
echo "the final step (drop the plaintext, rewrite every row, vacuum), the application stopped..." >&2
f0=$(date +%s.%N)
"$work/proxy" encrypt --yes --quiet --batch-blocks "$BATCH" --backend "$DSN" "${keys[@]}" pgbench_accounts >/dev/null 2>"$work/final.err" || die "the final step failed: $(tail -3 "$work/final.err")"
final=$(echo "$(date +%s.%N) - $f0" | bc -l)

echo "checking the accounts through the proxy..." >&2
mismatch=$(q "$DSN" -c "SELECT count(*) FROM accounts_plain" )
[ "$mismatch" = "$rows" ] || die "accounts_plain holds $mismatch rows"
through=$(timeout 600 "$PSQL" -X -q -A -t -h 127.0.0.1 -p "$PROXYPORT" -U postgres adopt -c "SELECT count(*), count(DISTINCT bid) FROM pgbench_accounts")
aside=$(q "$DSN" -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'pgbench_accounts'::regclass AND attname LIKE '%plaintext' AND NOT attisdropped")

echo "a first ILIKE on filler, then waiting for its search tokens..." >&2
ilike="SELECT count(*) FROM pgbench_accounts WHERE filler ILIKE '%pgonion%'"
built() { q "$DSN" -c "SELECT (c.onions::jsonb) ? 'search' FROM pgonion.columns c JOIN pgonion.tables t USING (table_id) WHERE t.table_name = 'pgbench_accounts' AND c.column_name = 'filler'"; }
[ "$(built)" = f ] || die "filler had search tokens before any ILIKE"
i0=$(date +%s.%N)
timeout 600 "$PSQL" -X -q -A -t -h 127.0.0.1 -p "$PROXYPORT" -U postgres adopt -c "$ilike" >/dev/null || die "the first ILIKE failed"
first_ilike=$(echo "$(date +%s.%N) - $i0" | bc -l)
for _ in $(seq 36000); do [ "$(built)" = t ] && break; sleep 0.1; done
[ "$(built)" = t ] || die "filler's search tokens were not built within an hour: $(tail -3 "$work/proxy.log")"
tokens_built=$(echo "$(date +%s.%N) - $i0" | bc -l)
i1=$(date +%s.%N)
timeout 600 "$PSQL" -X -q -A -t -h 127.0.0.1 -p "$PROXYPORT" -U postgres adopt -c "$ilike" >/dev/null || die "the ILIKE with tokens failed"
second_ilike=$(echo "$(date +%s.%N) - $i1" | bc -l)

cat <<EOF
### Adoption of pgbench_accounts, scale $SCALE ($rows rows), $(date -u +%Y-%m-%d)

Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'); commit $commit.
Command: \`bench/adopt.sh -s $SCALE -c $CLIENTS -T $SECS -b $BATCH -r $RATE\`. bid and abalance eq,ord; filler (char(84)) the default (eq; search built on first need); aid plain.

| measure | value |
|---|---|
| adoption wall time (backfill, catch-up, switch), the application running | $(printf '%.1f' "$wall") s |
| rows per second (wall) | $(echo "$rows / $wall" | bc) |
| CPU of \`proxy encrypt\` (user+sys) | $(printf '%.1f' "$enc_cpu") s, $(echo "$rows / $enc_cpu" | bc) rows per CPU-second |
| CPU of the server meanwhile (all backends, the application's included) | $(printf '%.1f' "$(echo "$scpu1 - $scpu0" | bc -l)") s |
| application TPS before (pgbench through the proxy, $CLIENTS clients, -M prepared) | $before_tps |
| application TPS during the adoption | $during_tps |
| ratio during / before | $(echo "scale=2; $during_tps / $before_tps" | bc -l 2>/dev/null || echo n/a) |
| rows through the proxy after (count, distinct bid) | $through |
| the final step alone (drop the plaintext, rewrite every row, vacuum) | $(printf '%.1f' "$final") s |
| plaintext columns left on the server | $aside |
| a first \`ILIKE\` on filler (no tokens yet: answered by the proxy on decrypted values) | $(printf '%.1f' "$first_ilike") s |
| from that \`ILIKE\` until its search tokens are built (in the background, by the proxy) | $(printf '%.1f' "$tokens_built") s |
| the same \`ILIKE\` with the tokens (prefiltered by the server) | $(printf '%.2f' "$second_ilike") s |
EOF
