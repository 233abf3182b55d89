#!/usr/bin/env bash
# bench/soak.sh: steady mixed traffic through the proxy for a long time,
# to show whether its memory reaches a plateau (issue 24: RSS went 165 ->
# 349 MiB over 20 minutes). One throwaway cluster, one database whose
# tables are created through the proxy (every column encrypted but the
# keys' id columns' join, see below), and three pgbench processes at once,
# one per protocol (-M simple, extended, prepared), each running a mixed
# script: point reads, ranges, LIKE (checked by the proxy), a grouped
# query the proxy computes, inserts, updates of one row, deletes.
#
# Every SAMPLE seconds it records the proxy's RSS; after WARMUP seconds it
# takes a heap profile (SIGUSR1 with PGONION_HEAPPROFILE_DIR), and another
# at the end. It prints Markdown: the machine, the command, the RSS at
# the end of warm-up, its maximum and its value at the end, the live heap
# (in use) at both profiles with the top of each, and whether RSS after
# warm-up grew by less than LIMIT MiB (the issue's bound).
#
# Usage: bench/soak.sh [-T SECONDS] [-w WARMUP] [-c CLIENTS] [-s SAMPLE] [-l LIMIT_MIB]
#   defaults: -T 1200 -w 120 -c 4 -s 10 -l 50
# GOGC and GOMEMLIMIT are passed to the proxy when set (unset, it runs with
# its defaults: GOGC=400 and a soft limit of a quarter of the memory).
# KEEP_WORK=1 keeps the work directory (logs, profiles, the RSS series).
# Exit status: 0 if every run succeeded and RSS stayed within the bound.
# Needs: PostgreSQL server binaries and pgbench (PGBINDIR, else the newest
#   /usr/lib/postgresql/*/bin), Go, python3 (free ports). Loopback only.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

SECS=1200 WARMUP=120 CLIENTS=4 SAMPLE=10 LIMIT=50
while getopts "T:w:c:s:l:h" o; do
  case $o in
    T) SECS=$OPTARG ;; w) WARMUP=$OPTARG ;; c) CLIENTS=$OPTARG ;; s) SAMPLE=$OPTARG ;; l) LIMIT=$OPTARG ;;
    h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
for v in "$SECS" "$WARMUP" "$CLIENTS" "$SAMPLE" "$LIMIT"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: options take positive integers, got '$v'" >&2; exit 2; }
done
[ "$WARMUP" -lt "$SECS" ] || { echo "soak.sh: -w must be less than -T" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] && [ -x "$bindir/pgbench" ] || { echo "soak.sh: no PostgreSQL server binaries and pgbench (set PGBINDIR)" >&2; exit 1; }
PGBENCH=$bindir/pgbench PSQL=$bindir/psql

work=$(mktemp -d /tmp/pgonion-soak.XXXXXX)
chmod 755 "$work"
asPG=()
if [ "$(id -u)" = 0 ]; then asPG=(runuser -u postgres --); chown postgres "$work"; fi
proxy_pid="" pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; fi
  timeout 60 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "soak.sh: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
  for _ in $(seq 300); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1" && return 0; sleep 0.1; done
  die "nothing answers on port $1"
}
PGPORT=$(free_port) PROXYPORT=$(free_port)

echo "building the proxy..." >&2
(cd "$root" && timeout 600 go build -o "$work/proxy" ./cmd/proxy) || die "go build failed"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)

echo "starting PostgreSQL on 127.0.0.1:$PGPORT..." >&2
timeout 300 "${asPG[@]}" "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync >/dev/null
timeout 120 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100" start >/dev/null
timeout 60 "$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres soak

keys=(--keystore "$work/pgonion.keystore" --master-key-file "$work/master/pgonion.master")
mkdir -p "$work/master" "$work/heap"
timeout 120 "$work/proxy" keys init "${keys[@]}" >/dev/null 2>&1 || die "proxy keys init failed"
env ${GOGC:+GOGC=$GOGC} ${GOMEMLIMIT:+GOMEMLIMIT=$GOMEMLIMIT} PGONION_HEAPPROFILE_DIR="$work/heap" \
  "$work/proxy" serve --listen "127.0.0.1:$PROXYPORT" --auth trust --log-level warn "${keys[@]}" \
  --backend "postgres://postgres@127.0.0.1:$PGPORT/soak?sslmode=disable" 2>"$work/proxy.log" &
proxy_pid=$!
wait_ready "$PROXYPORT"
q() { timeout 120 "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PROXYPORT" -U postgres soak "$@"; }

echo "creating and filling the tables through the proxy..." >&2
q -c "CREATE TABLE items (id int PRIMARY KEY, name text, qty int, price numeric(10,2), day date)" \
  -c "CREATE TABLE notes (id int, item int, body text)"
python3 - "$work/items.csv" <<'EOF'
import sys, random
r = random.Random(24)
words = ["alpha", "beta", "gamma", "delta", "omega", "soak", "proxy", "value"]
with open(sys.argv[1], "w") as f:
    for i in range(1, 20001):
        f.write(f"{i},{r.choice(words)} {r.choice(words)} {i},{r.randint(0, 500)},{r.randint(1, 99999)/100:.2f},2020-{r.randint(1,12):02d}-{r.randint(1,28):02d}\n")
EOF
q -c "\\copy items FROM '$work/items.csv' WITH (FORMAT csv)"

cat >"$work/mixed.sql" <<'EOF'
\set id random(1, 20000)
\set n random(100000, 999999999)
\set q random(0, 500)
\set q2 :q + 20
SELECT name, qty, price FROM items WHERE id = :id;
SELECT count(*) FROM items WHERE qty BETWEEN :q AND :q2;
SELECT id FROM items WHERE name LIKE 'gamma%' AND qty > :q LIMIT 5;
SELECT sum(price * 2), count(*) FROM items WHERE qty < :q;
INSERT INTO notes VALUES (:n, :id, 'note ' || :n);
UPDATE items SET qty = :q WHERE id = :id;
DELETE FROM notes WHERE id = :n;
EOF
# The INSERT's body is an expression ('note ' || :n): refused on an
# encrypted column; write the literal instead.
sed -i "s/'note ' || :n/'note'/" "$work/mixed.sql"

echo "warm-up and soak: ${SECS}s, $CLIENTS clients per protocol..." >&2
for mode in simple extended prepared; do
  timeout $((SECS + 120)) "$PGBENCH" -n -M "$mode" -c "$CLIENTS" -j 1 -T "$SECS" -f "$work/mixed.sql" \
    -h 127.0.0.1 -p "$PROXYPORT" -U postgres soak >"$work/pgbench-$mode.log" 2>&1 &
  pids+=($!)
done
start=$(date +%s)
rss() { awk '/^VmRSS/ {print int($2/1024)}' "/proc/$proxy_pid/status"; }
echo "seconds,rss_mib" >"$work/rss.csv"
warm_rss="" profiled=""
while :; do
  now=$(($(date +%s) - start))
  r=$(rss) || die "the proxy is gone"
  echo "$now,$r" >>"$work/rss.csv"
  if [ -z "$profiled" ] && [ "$now" -ge "$WARMUP" ]; then
    warm_rss=$r profiled=1
    kill -USR1 "$proxy_pid"
    echo "  after warm-up: RSS $r MiB" >&2
  fi
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ "$alive" = 1 ] || break
  sleep "$SAMPLE"
done
kill -USR1 "$proxy_pid"
sleep 2
status=0
for i in "${!pids[@]}"; do wait "${pids[$i]}" || status=1; done
[ -n "$warm_rss" ] || die "the runs ended before the warm-up did"
end_rss=$(tail -1 "$work/rss.csv" | cut -d, -f2)
max_after=$(awk -F, -v w="$WARMUP" 'NR > 1 && $1 >= w && $2 > m {m = $2} END {print m+0}' "$work/rss.csv")
growth=$((max_after - warm_rss))

profiles=("$work"/heap/heap-*.pprof)
inuse() { (cd "$root" && go tool pprof -sample_index=inuse_space -top "$1" 2>/dev/null) | sed -n 's/^Showing nodes accounting for .*, \(.*\) total$/\1/p' | head -1; }
top() { (cd "$root" && go tool pprof -sample_index=inuse_space -top -nodecount=8 "$1" 2>/dev/null) | sed -n '/flat%/,$p'; }

cat <<EOF
## Soak: $(date -u +%Y-%m-%d), commit $commit

Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'), $(go version | awk '{print $3}').
Command: \`bench/soak.sh -T $SECS -w $WARMUP -c $CLIENTS -s $SAMPLE -l $LIMIT\`${GOGC:+ with GOGC=$GOGC}${GOMEMLIMIT:+ GOMEMLIMIT=$GOMEMLIMIT}

| | RSS (MiB) |
|---|---|
| after warm-up (${WARMUP}s) | $warm_rss |
| maximum after warm-up | $max_after |
| at the end | $end_rss |
| growth after warm-up | $growth (bound: $LIMIT) |

Transactions: $(for m in simple extended prepared; do printf '%s %s; ' "$m" "$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench-$m.log")"; done)

Live heap (in use) after warm-up: $(inuse "${profiles[0]}"); at the end: $(inuse "${profiles[-1]}").

Top of the live heap at the end:

\`\`\`
$(top "${profiles[-1]}")
\`\`\`
EOF
for m in simple extended prepared; do
  if grep -q "aborted\|error" "$work/pgbench-$m.log"; then echo "pgbench -M $m:" >&2; grep -m5 "aborted\|error" "$work/pgbench-$m.log" >&2; status=1; fi
done
[ "$growth" -lt "$LIMIT" ] || { echo "soak.sh: RSS grew by $growth MiB after warm-up (bound $LIMIT)" >&2; status=1; }
exit $status
