#!/usr/bin/env bash
# bench/hop.sh: what one extra hop costs. Runs `pgbench -S -M prepared` at 1
# and 4 clients against the server directly, through PgBouncer (session
# pooling) and through our proxy (transparent relay), on one throwaway
# cluster, interleaving the targets round by round so machine noise hits all
# three alike. Prints a Markdown table (median over rounds of TPS; median
# per-transaction latency from pgbench's transaction log at 1 client).
#
# The proxy runs twice: as is, and with GOMAXPROCS=1.
#
# Usage: bench/hop.sh [-s SCALE] [-t TRANSACTIONS_PER_CLIENT] [-r ROUNDS]
#   defaults: -s 2 -t 20000 -r 3. Each pgbench run is cut off after
#   RUN_TIMEOUT seconds (environment, default 600) and reported as failed.
# Needs: PostgreSQL server binaries, pgbench, pgbouncer (apt-get install
# pgbouncer), Go. Runs as root (servers then run as the postgres user) or
# as a normal user.
set -euo pipefail

SCALE=2 TX=20000 ROUNDS=3 RUN_TIMEOUT=${RUN_TIMEOUT:-600}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while getopts "s:t:r:h" o; do
  case $o in
    s) SCALE=$OPTARG ;; t) TX=$OPTARG ;; r) ROUNDS=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "no PostgreSQL server binaries (set PGBINDIR)" >&2; exit 1; }
command -v pgbouncer >/dev/null || { echo "pgbouncer not found: apt-get install pgbouncer" >&2; exit 1; }
PGBENCH=$bindir/pgbench

work=$(mktemp -d /tmp/pgonion-hop.XXXXXX)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$work/pgbouncer.pid" ] && kill "$(cat "$work/pgbouncer.pid")" 2>/dev/null || true
  as_pg "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGPORT=$(free_port) BOUNCER=$(free_port) PROXY=$(free_port) PROXY1=$(free_port)

echo "building the proxy..." >&2
(cd "$root" && go build -o "$work/proxy" ./cmd/proxy)

echo "starting PostgreSQL on $PGPORT..." >&2
as_pg "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync >/dev/null
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100" start >/dev/null
"$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench
echo "pgbench -i -s $SCALE..." >&2
"$PGBENCH" -i -q -s "$SCALE" -h 127.0.0.1 -p "$PGPORT" -U postgres bench >/dev/null 2>&1

cat > "$work/pgbouncer.ini" <<INI
[databases]
bench = host=127.0.0.1 port=$PGPORT dbname=bench user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER
unix_socket_dir =
auth_type = trust
auth_file = $work/userlist.txt
pool_mode = session
max_client_conn = 100
default_pool_size = 20
logfile = $work/pgbouncer.log
pidfile = $work/pgbouncer.pid
INI
echo '"postgres" ""' > "$work/userlist.txt"
[ "$(id -u)" = 0 ] && chown postgres "$work/pgbouncer.ini" "$work/userlist.txt"
as_pg pgbouncer "$work/pgbouncer.ini" >/dev/null 2>&1 &
pids+=($!)
# pgbench's tables were created directly, so they are plain: this measures
# the proxy's relay and the engine's pass-through path (a statement text
# seen before is not parsed again). Both proxies share one key store, made
# by the first.
keyflags=(--keystore "$work/pgonion.keystore" --master-key-file "$work/pgonion.master")
"$work/proxy" keys init "${keyflags[@]}" >/dev/null
"$work/proxy" serve --listen "127.0.0.1:$PROXY" --auth trust --log-level warn "${keyflags[@]}" \
  --backend "postgres://postgres@127.0.0.1:$PGPORT/bench?sslmode=disable" 2>"$work/proxy.log" &
pids+=($!)
for _ in $(seq 100); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$PROXY" && break; sleep 0.1; done
# The same proxy confined to one OS thread for Go code: on a small machine
# shared with the server, fewer scheduler wake-ups can beat parallelism.
GOMAXPROCS=1 "$work/proxy" serve --listen "127.0.0.1:$PROXY1" --auth trust --log-level warn "${keyflags[@]}" \
  --backend "postgres://postgres@127.0.0.1:$PGPORT/bench?sslmode=disable" 2>"$work/proxy1.log" &
pids+=($!)
for port in $BOUNCER $PROXY $PROXY1; do
  for _ in $(seq 100); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
done

declare -A portOf=([direct]=$PGPORT [pgbouncer]=$BOUNCER [proxy]=$PROXY [proxy-gomaxprocs1]=$PROXY1)
targets=(direct pgbouncer proxy proxy-gomaxprocs1)
results="$work/results.txt"
: > "$results"
for round in $(seq "$ROUNDS"); do
  for clients in 1 4; do
    for target in "${targets[@]}"; do
      logdir="$work/log-$target-$clients-$round"; mkdir -p "$logdir"
      out=$(cd "$logdir" && timeout "$RUN_TIMEOUT" "$PGBENCH" -S -M prepared -n -c "$clients" -j "$clients" -t "$TX" \
              -h 127.0.0.1 -p "${portOf[$target]}" -U postgres ${clients:+$([ "$clients" = 1 ] && echo -l)} bench 2>&1) || true
      tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
      failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
      med=NA
      if [ "$clients" = 1 ]; then
        # column 3 of pgbench's transaction log is the latency in microseconds
        med=$(cat "$logdir"/pgbench_log.* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
      fi
      echo "$target $clients $round $tps ${failed:-?} $med" >> "$results"
      echo "round $round: $target, $clients client(s): $tps tps, failed ${failed:-?}, median latency ${med} us" >&2
    done
  done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { awk -v t="$1" -v c="$2" -v f="$3" '$1==t && $2==c {print $f}' "$results" | median; }

echo
echo "pgbench -S -M prepared, scale $SCALE, $TX transactions per client, median of $ROUNDS rounds"
echo "machine: $(nproc) cores, $(uname -m), $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | xargs)"
echo
echo "| target | TPS 1 client | TPS 4 clients | ratio to PgBouncer (4 clients) | median latency 1 client (ms) | added vs direct (ms) |"
echo "|---|---|---|---|---|---|"
d1=$(field direct 1 6); b4=$(field pgbouncer 4 4)
for target in "${targets[@]}"; do
  t1=$(field "$target" 1 4); t4=$(field "$target" 4 4); l1=$(field "$target" 1 6)
  awk -v n="$target" -v t1="$t1" -v t4="$t4" -v b4="$b4" -v l1="$l1" -v d1="$d1" \
    'BEGIN {printf "| %s | %.0f | %.0f | %.2f | %.3f | %+.3f |\n", n, t1, t4, t4/b4, l1/1000, (l1-d1)/1000}'
done
fails=$(awk '$5 != 0' "$results" | wc -l)
echo
echo "runs with failed transactions: $fails"
