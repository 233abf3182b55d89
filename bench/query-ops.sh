#!/usr/bin/env bash
# bench/query-ops.sh: what encryption costs the query shapes that run on the
# server over onions, compared with the same queries on plaintext. One
# throwaway cluster holds two databases with the same N rows:
#
#   direct     bench_plain, a plaintext table created and loaded (COPY)
#              directly on the server, queried directly
#   proxy      bench_enc, the same table created and loaded (COPY) THROUGH
#              the proxy, its columns declared first with `proxy columns set`:
#                id     bigint PRIMARY KEY  eq
#                v      integer             eq,ord   (range)
#                d      date                eq,ord   (range)
#                grp    integer             eq       (GROUP BY, 100 values)
#                body   text                eq,search (LIKE '%word%')
#                amount numeric(12,2)       eq,add   (SUM, AVG; Paillier)
#
# Indexes, created the same way in both (through the proxy for bench_enc):
# btree on v and on d (the proxy also builds v's and d's Ord companions),
# and USING gin (body gin_trgm_ops) (pg_trgm directly; through the proxy
# a gin index over body's search tokens, body__srch).
#
# Query shapes (constants in the statement text, simple protocol via psql):
#   range-int  SELECT id, v FROM t WHERE v BETWEEN ...        (~1% of rows)
#   range-date SELECT id, d FROM t WHERE d BETWEEN ...        (~1% of rows)
#   group-by   SELECT grp, count(*) FROM t GROUP BY grp       (100 groups)
#   like       SELECT id, body FROM t WHERE body LIKE '%xxxx%' (~1% of rows)
#   sum        SELECT sum(amount) FROM t                       (all rows)
#   avg        SELECT avg(amount) FROM t                       (all rows)
#
# Each shape runs once directly and once through the proxy first (warm-up;
# the first proxy run of a shape peels the onion it needs: its time and the
# peel duration from the proxy log are reported), then both databases are
# VACUUM ANALYZEd (a peel rewrites every row), then each shape runs ROUNDS
# times, alternating which target goes first. Times are psql's \timing
# (client-observed, without connection set-up). Every result is compared
# with the direct one (sorted psql -At output): any difference prints
# MISMATCH and the script exits 1.
#
# Prints Markdown: a table of medians and ratios, with the server's mean
# execution time of each statement in both databases (pg_stat_statements:
# for bench_enc, the proxy's rewritten statement), so the proxy's share
# can be told from the server's; then µs per row for SUM/AVG, load and
# index build times, peel times, index use and table sizes.
#
# Through the proxy, SUM/AVG fetch every Add ciphertext concatenated by
# string_agg (768 bytes per row at 3072 bits): one value, which PostgreSQL
# limits to 1 GB, and to 512 MB of bytes when psql's simple protocol asks
# for text (hex) results. See bench/README.md.
#
# Usage: bench/query-ops.sh [-n ROWS] [-r ROUNDS]     (defaults: 100000, 5)
# Needs: PostgreSQL server binaries with pg_trgm, pgcrypto and
# pg_stat_statements (contrib), psql, Go, python3 (free ports).
# Runs as root (the server then runs as the
# postgres user) or as a normal user. About 4.5 minutes at the defaults on
# 2 cores (more on a busy machine), 3 of them encrypting the Paillier (add)
# column during the COPY through the proxy.
# Time bounds (seconds, environment): LOAD_TIMEOUT (the whole COPY through
# the proxy, default 1800), QUERY_TIMEOUT (each statement, default 300).
# KEEP_WORK=1 keeps the work directory (logs, data file).
set -euo pipefail

ROWS=100000 ROUNDS=5
while getopts "n:r:" o; do
  case $o in n) ROWS=$OPTARG ;; r) ROUNDS=$OPTARG ;; *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;; esac
done
[[ $ROWS =~ ^[0-9]+$ && $ROWS -ge 1000 ]] || { echo "-n needs at least 1000 rows" >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || { echo "-r needs a positive number" >&2; exit 2; }
LOAD_TIMEOUT=${LOAD_TIMEOUT:-1800} QUERY_TIMEOUT=${QUERY_TIMEOUT:-300}

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "no PostgreSQL server binaries (set PGBINDIR)" >&2; exit 1; }
PSQL=$bindir/psql
[ -x "$PSQL" ] || PSQL=$(command -v psql) || { echo "psql not found" >&2; exit 1; }

work=$(mktemp -d /tmp/pgonion-queryops.XXXXXX)
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
# On a failure: what failed, and after a timeout what the server was doing.
on_err() {
  echo "FAILED (exit $1) at line $2: $3" >&2
  if [ "$1" = 124 ] && [ -n "${PGPORT:-}" ]; then
    echo "timed out; server sessions:" >&2
    timeout 10 "$PSQL" -X -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -c "SELECT pid, datname, state,
      wait_event_type, wait_event, now() - query_start AS running, left(query, 100) AS query
      FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" >&2 || true
    [ -f "$work/proxy-enc.log" ] && { echo "--- proxy log:" >&2; tail -5 "$work/proxy-enc.log" >&2; }
  fi
}
set -E
trap 'on_err $? "$LINENO (calls: ${BASH_LINENO[*]})" "$BASH_COMMAND"' ERR

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGPORT=$(free_port) ENCPROXY=$(free_port)
wait_ready() {
  for _ in $(seq 300); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1" && return 0; sleep 0.1; done
  echo "nothing answers on port $1" >&2; return 1
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) / 1000}'; }
# sql PORT DB [psql args...]: psql without start-up files, stops at the first error.
sql() { local port=$1 db=$2; shift 2; timeout "$QUERY_TIMEOUT" "$PSQL" -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"; }

echo "building the proxy..." >&2
(cd "$root" && go build -o "$work/proxy" ./cmd/proxy)

echo "starting PostgreSQL on $PGPORT..." >&2
as_pg "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync >/dev/null
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100 -c shared_buffers=512MB -c shared_preload_libraries=pg_stat_statements" start >/dev/null
"$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_plain
"$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_enc
sql "$PGPORT" bench_plain -c "CREATE EXTENSION pg_trgm"
# Server-side execution times (both databases, directly on the server).
sql "$PGPORT" postgres -c "CREATE EXTENSION pg_stat_statements"

# The data: deterministic (md5 of the row number), written once to a file
# that both loads read. r(tag) is a pseudo-random number in [0, 2^32).
r() { echo "('x' || substr(md5('$1' || i), 1, 8))::bit(32)::bigint"; }
sql "$PGPORT" bench_plain -c "COPY (
  WITH w AS (SELECT array_agg(substr(md5('w' || k), 1, 6) ORDER BY k) AS a FROM generate_series(0, 399) k)
  SELECT i, $(r v) % 1000000, date '2015-01-01' + ($(r d) % 3650)::int, $(r g) % 100,
         a[1 + $(r a) % 400] || ' ' || a[1 + $(r b) % 400] || ' ' || a[1 + $(r c) % 400] || ' ' || a[1 + $(r e) % 400],
         (($(r m) % 10000000)::numeric / 100)::numeric(12,2)
  FROM w, generate_series(1, $ROWS) i) TO STDOUT" > "$work/data.tsv"
[ "$(wc -l < "$work/data.tsv")" = "$ROWS" ] || { echo "data generation produced $(wc -l < "$work/data.tsv") rows" >&2; exit 1; }
# The LIKE pattern: the middle four characters of word 42.
word=$(printf 'w42' | md5sum | cut -c1-6)
pattern="%${word:1:4}%"
# Loads go in chunks of about 10%, for progress reports.
chunk=$(( (ROWS + 9) / 10 ))
split -l "$chunk" -d -a 3 "$work/data.tsv" "$work/chunk."


create="CREATE TABLE t (id bigint PRIMARY KEY, v integer, d date, grp integer, body text, amount numeric(12,2))"
indexes=("CREATE INDEX t_v ON t (v)" "CREATE INDEX t_d ON t (d)" "CREATE INDEX t_body_gin ON t USING gin (body gin_trgm_ops)")

# The encrypted database: declare the columns, then start the proxy
# (info level: the log then has one "peeled onion" line per peel).
enckeys=(--keystore "$work/enc.keystore" --master-key-file "$work/enc.master")
encdsn="postgres://postgres@127.0.0.1:$PGPORT/bench_enc?sslmode=disable"
"$work/proxy" keys init "${enckeys[@]}" >/dev/null
declare -A caps=([id]=eq [v]=eq,ord [d]=eq,ord [grp]=eq [body]=eq,search [amount]=eq,add)
for col in id v d grp body amount; do
  timeout 60 "$work/proxy" columns set "t.$col" --policy encrypted --capabilities "${caps[$col]}" \
    "${enckeys[@]}" --backend "$encdsn" >/dev/null
done
"$work/proxy" serve --listen "127.0.0.1:$ENCPROXY" --auth trust --log-level info "${enckeys[@]}" \
  --backend "$encdsn" 2>"$work/proxy-enc.log" &
pids+=($!)
wait_ready "$ENCPROXY"

# load TARGET PORT DB DEADLINE_MS: COPY the chunks, printing progress.
load() {
  local target=$1 port=$2 db=$3 deadline=$4 start done=0 f n t left
  start=$(now_ms)
  for f in "$work"/chunk.*; do
    left=$(( (deadline - $(now_ms)) / 1000 ))
    [ "$left" -gt 0 ] || { echo "load $target: exceeded its time bound" >&2; return 1; }
    n=$(wc -l < "$f")
    if ! timeout "$left" "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" \
        -c "\\copy t FROM '$f'" >"$work/load-$target.log" 2>&1; then
      echo "load $target failed (or exceeded LOAD_TIMEOUT=${LOAD_TIMEOUT}s):" >&2
      cat "$work/load-$target.log" >&2
      [ "$target" = proxy ] && { echo "--- proxy log:" >&2; tail -20 "$work/proxy-enc.log" >&2; }
      return 1
    fi
    done=$((done + n))
    t=$(( $(now_ms) - start ))
    echo "  $target: $done/$ROWS rows in $(secs 0 "$t")s ($(awk -v n="$done" -v t="$t" 'BEGIN {printf "%.0f", n * 1000 / (t > 0 ? t : 1)}') rows/s$(
      [ "$done" -lt "$ROWS" ] && awk -v n="$done" -v N="$ROWS" -v t="$t" 'BEGIN {printf ", about %.0fs left", (N - n) * t / n / 1000}'))" >&2
  done
  echo "$t"
}

echo "creating and loading t ($ROWS rows) directly..." >&2
sql "$PGPORT" bench_plain -c "$create"
load_direct=$(load direct "$PGPORT" bench_plain $(( $(now_ms) + LOAD_TIMEOUT * 1000 )))
start=$(now_ms)
for ix in "${indexes[@]}"; do sql "$PGPORT" bench_plain -c "$ix"; done
index_direct=$(( $(now_ms) - start ))

echo "creating and loading t ($ROWS rows) through the proxy (Paillier encryption of amount: slow)..." >&2
sql "$ENCPROXY" bench_enc -c "$create"
load_proxy=$(load proxy "$ENCPROXY" bench_enc $(( $(now_ms) + LOAD_TIMEOUT * 1000 )))
start=$(now_ms)
for ix in "${indexes[@]}"; do sql "$ENCPROXY" bench_enc -c "$ix"; done
index_proxy=$(( $(now_ms) - start ))

# The server must hold no plaintext column of t in bench_enc, and the gin
# index must be over the search tokens.
plaincols=$(sql "$PGPORT" bench_enc -c "SELECT count(*) FROM information_schema.columns
  WHERE table_name = 't' AND column_name IN ('id', 'v', 'd', 'grp', 'body', 'amount')")
[ "$plaincols" = 0 ] || { echo "bench_enc has $plaincols plaintext columns in t" >&2; exit 1; }
gindef=$(sql "$PGPORT" bench_enc -c "SELECT indexdef FROM pg_indexes WHERE indexname = 't_body_gin'")
echo "  server-side gin index: $gindef" >&2
for db in bench_plain bench_enc; do sql "$PGPORT" "$db" -c "ANALYZE t"; done
size() { sql "$PGPORT" "$1" -c "SELECT pg_size_pretty(pg_table_size('t')) || ' table, ' || pg_size_pretty(pg_indexes_size('t')) || ' indexes'"; }
size_direct=$(size bench_plain) size_enc=$(size bench_enc)

shapes=(range-int range-date group-by like sum avg)
declare -A query=(
  [range-int]="SELECT id, v FROM t WHERE v BETWEEN 500000 AND 509999"
  [range-date]="SELECT id, d FROM t WHERE d BETWEEN '2020-01-01' AND '2020-02-06'"
  [group-by]="SELECT grp, count(*) FROM t GROUP BY grp"
  [like]="SELECT id, body FROM t WHERE body LIKE '$pattern'"
  [sum]="SELECT sum(amount) FROM t"
  [avg]="SELECT avg(amount) FROM t"
)
declare -A portOf=([direct]=$PGPORT [proxy]=$ENCPROXY) dbOf=([direct]=bench_plain [proxy]=bench_enc)

# runq TARGET SHAPE OUT: runs the shape's query, writes its sorted rows to
# OUT and prints psql's \timing in ms.
runq() {
  local target=$1 shape=$2 out=$3 raw=$work/raw.txt
  if ! sql "${portOf[$target]}" "${dbOf[$target]}" -c '\timing on' -c "${query[$shape]}" >"$raw" 2>"$work/err.txt"; then
    echo "$shape via $target FAILED:" >&2; cat "$work/err.txt" >&2
    [ "$target" = proxy ] && { echo "--- proxy log:" >&2; tail -5 "$work/proxy-enc.log" >&2; }
    return 1
  fi
  grep -v -e '^Timing is on\.$' -e '^Time: [0-9.]* ms' "$raw" | LC_ALL=C sort >"$out" || true
  sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$raw" | tail -1
}
results=$work/results.txt
: >"$results"
mismatches=0
# check SHAPE TARGET FILE: compares a result with the direct reference.
check() {
  if ! cmp -s "$work/ref-$1.txt" "$3"; then
    mismatches=$((mismatches + 1))
    echo "MISMATCH: $1 via $2 differs from direct ($(wc -l < "$3") vs $(wc -l < "$work/ref-$1.txt") rows):" >&2
    diff "$work/ref-$1.txt" "$3" | head -6 >&2 || true
  fi
}

echo "warm-up: each shape once directly, then once through the proxy (peels)..." >&2
declare -A first
for shape in "${shapes[@]}"; do
  runq direct "$shape" "$work/ref-$shape.txt" >/dev/null
  first[$shape]=$(runq proxy "$shape" "$work/first-$shape.txt")
  check "$shape" proxy "$work/first-$shape.txt"
  echo "  $shape: first run through the proxy ${first[$shape]} ms, $(wc -l < "$work/ref-$shape.txt") rows" >&2
done
echo "VACUUM ANALYZE (the peels rewrote every row)..." >&2
for db in bench_plain bench_enc; do sql "$PGPORT" "$db" -c "VACUUM ANALYZE t"; done
sql "$PGPORT" postgres -c "SELECT pg_stat_statements_reset()" >/dev/null

for round in $(seq "$ROUNDS"); do
  order=(direct proxy); [ $((round % 2)) = 0 ] && order=(proxy direct)
  for shape in "${shapes[@]}"; do
    for target in "${order[@]}"; do
      ms=$(runq "$target" "$shape" "$work/out.txt")
      check "$shape" "$target" "$work/out.txt"
      echo "$shape $target $round $ms" >>"$results"
    done
  done
  echo "round $round/$ROUNDS done" >&2
done

# The server's mean execution time of a shape's statement in DB (ms), from
# pg_stat_statements: the statement run ROUNDS times whose text contains
# the shape's marker (for bench_enc, a part of the proxy's rewrite).
declare -A markPlain=([range-int]='v BETWEEN' [range-date]='d BETWEEN' [group-by]='GROUP BY grp'
  [like]='LIKE' [sum]='sum(amount)' [avg]='avg(amount)')
declare -A markEnc=([range-int]='v__ord' [range-date]='d__ord' [group-by]='GROUP BY'
  [like]='__srch' [sum]='AS sum' [avg]='AS avg')
server_ms() {
  local db=$1 mark=$2
  sql "$PGPORT" postgres -v db="$db" -v mark="$mark" -v n="$ROUNDS" <<'SQL'
SELECT coalesce(round(max(s.mean_exec_time)::numeric, 2)::text, 'NA')
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = :'db' AND s.calls = :n AND strpos(s.query, :'mark') > 0
  AND s.query !~* 'pg_stat|pgonion\.(tables|columns|policies|catalog)'
SQL
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "NA"; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med() { awk -v s="$1" -v t="$2" '$1==s && $2==t {print $4}' "$results" | median; }

echo
echo "### Query shapes over $ROWS rows: direct (plaintext) vs through the proxy (encrypted)"
echo
echo "machine: $(nproc) cores, $(uname -m), $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | xargs); PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'), fsync off, shared_buffers 512MB"
echo "medians of $ROUNDS runs per target (psql \\timing, simple protocol), after one warm-up run each"
echo
echo "| shape | query | rows | first via proxy, incl. peel (ms) | direct median (ms) | proxy median (ms) | proxy / direct | server exec mean, plaintext (ms) | server exec mean, encrypted (ms) |"
echo "|---|---|---|---|---|---|---|---|---|"
for shape in "${shapes[@]}"; do
  d=$(med "$shape" direct) p=$(med "$shape" proxy)
  q=${query[$shape]}
  sp=$(server_ms bench_plain "${markPlain[$shape]}") se=$(server_ms bench_enc "${markEnc[$shape]}")
  awk -v s="$shape" -v q="${q//|/\\|}" -v n="$(wc -l < "$work/ref-$shape.txt")" -v f="${first[$shape]}" -v d="$d" -v p="$p" -v sp="$sp" -v se="$se" \
    'BEGIN {printf "| %s | `%s` | %d | %.1f | %.2f | %.2f | %.1f | %s | %s |\n", s, q, n, f, d, p, (d > 0 ? p / d : 0), sp, se}'
done
echo
for shape in sum avg; do
  awk -v s="$shape" -v n="$ROWS" -v d="$(med "$shape" direct)" -v p="$(med "$shape" proxy)" \
    'BEGIN {printf "- %s over %d rows: %.3f µs per row direct, %.2f µs per row through the proxy\n", toupper(s), n, d * 1000 / n, p * 1000 / n}'
done
echo "- load by COPY ($ROWS rows, 10 chunks): direct $(secs 0 "$load_direct") s ($(awk -v n="$ROWS" -v t="$load_direct" 'BEGIN {printf "%.0f", n * 1000 / t}') rows/s), through the proxy $(secs 0 "$load_proxy") s ($(awk -v n="$ROWS" -v t="$load_proxy" 'BEGIN {printf "%.0f", n * 1000 / t}') rows/s)"
echo "- CREATE INDEX (btree v, btree d, gin body): direct $(secs 0 "$index_direct") s, through the proxy $(secs 0 "$index_proxy") s; the proxy's gin index: \`$gindef\`"
echo "- peels during the warm-up (proxy log):"
grep 'peeled onion' "$work/proxy-enc.log" | sed -n 's/.*column=\([^ ]*\) onion=\([^ ]*\) from=\([^ ]*\) to=\([^ ]*\) rows=\([^ ]*\) duration=\([^ ]*\).*/  - \1: \2 onion \3 -> \4, \5 rows, \6/p'
echo "- index scans in bench_enc (pg_stat_user_indexes): $(sql "$PGPORT" bench_enc -c "SELECT string_agg(indexrelname || ' ' || idx_scan, ', ' ORDER BY indexrelname) FROM pg_stat_user_indexes WHERE relname = 't'")"
echo "- index scans in bench_plain: $(sql "$PGPORT" bench_plain -c "SELECT string_agg(indexrelname || ' ' || idx_scan, ', ' ORDER BY indexrelname) FROM pg_stat_user_indexes WHERE relname = 't'")"
echo "- size on the server after the load: direct $size_direct; encrypted $size_enc"
echo
if [ "$mismatches" != 0 ]; then
  echo "MISMATCH: $mismatches results through the proxy differed from direct"
  exit 1
fi
echo "all $(( ${#shapes[@]} * (ROUNDS + 1) )) proxy results identical to direct (sorted psql -At output)"
