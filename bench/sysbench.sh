#!/usr/bin/env bash
# bench/sysbench.sh: stock sysbench OLTP workloads (no edited Lua, no
# declared policies) through `proxy serve` with the default policy (every
# column encrypted but the server-generated key), and the same directly
# on PostgreSQL, on one throwaway cluster (database collation C, as the
# proxy requires to order encrypted text). For each workload: prepare,
# run, and the transactions, TPS and errors sysbench reports (it ignores
# some errors by design: a duplicate key when a deleted row is inserted
# back by another thread, deadlocks), and the server's ERROR lines.
#
# Usage: bench/sysbench.sh [-t THREADS] [-T SECS] [-n ROWS] [WORKLOAD...]
#   defaults: -t 2 -T 15 -n 10000, workloads oltp_read_write
#   oltp_read_only oltp_point_select
# Needs: sysbench (apt-get install sysbench), PostgreSQL server binaries
#   (PGBINDIR, else the newest /usr/lib/postgresql/*/bin), Go, python3.
#   Loopback only. KEEP_WORK=1 keeps the work directory.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
THREADS=2 SECS=15 ROWS=10000
while getopts "t:T:n:h" o; do
  case $o in
    t) THREADS=$OPTARG ;; T) SECS=$OPTARG ;; n) ROWS=$OPTARG ;;
    h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
for v in "$THREADS" "$SECS" "$ROWS"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "sysbench.sh: options take positive integers, got '$v'" >&2; exit 2; }
done
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=(oltp_read_write oltp_read_only oltp_point_select)
command -v sysbench >/dev/null || { echo "sysbench.sh: sysbench not found (apt-get install sysbench)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "sysbench.sh: no PostgreSQL server binaries (set PGBINDIR)" >&2; exit 1; }

# shellcheck source=lib/workdir.sh
. "$root/bench/lib/workdir.sh"
bench_workdir sysbench
PGPORT=$(free_port) PROXYPORT=$(free_port)

echo "building the proxy..." >&2
(cd "$root" && timeout 600 go build -o "$work/proxy" ./cmd/proxy) || die "go build failed"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "starting PostgreSQL on 127.0.0.1:$PGPORT..." >&2
timeout 300 "${asPG[@]}" "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync --locale=C >/dev/null
timeout 120 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100" start >/dev/null
for db in direct encrypted; do timeout 60 "$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres "$db"; done
keys=(--keystore "$work/pgonion.keystore" --master-key-file "$work/pgonion.master")
timeout 120 "$work/proxy" keys init "${keys[@]}" >/dev/null 2>&1 || die "proxy keys init failed"
"$work/proxy" serve --listen "127.0.0.1:$PROXYPORT" --auth trust --log-level warn "${keys[@]}" \
  --backend "postgres://postgres@127.0.0.1:$PGPORT/encrypted?sslmode=disable" 2>"$work/proxy.log" &
proxy_pid=$!
wait_ready "$PROXYPORT"

sb() { # sb PORT DB WORKLOAD COMMAND...
  local port=$1 db=$2 workload=$3
  shift 3
  timeout $((SECS + 600)) sysbench "$workload" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" \
    --pgsql-user=postgres --pgsql-db="$db" --tables=1 --table-size="$ROWS" --threads="$THREADS" --time="$SECS" "$@"
}
cat <<EOF
### Stock sysbench through the proxy (default policy) and directly, $(date -u +%Y-%m-%d)

Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); PostgreSQL $("$bindir/postgres" --version | awk '{print $3}'); $(sysbench --version); commit $commit.
Command: \`bench/sysbench.sh -t $THREADS -T $SECS -n $ROWS ${WORKLOADS[*]}\`; 1 table of $ROWS rows, $THREADS threads, $SECS s each.

| workload | target | transactions | TPS | errors sysbench ignored | server ERRORs |
|---|---|---|---|---|---|
EOF
status=0
for w in "${WORKLOADS[@]}"; do
  for target in direct proxy; do
    port=$PGPORT db=direct
    [ "$target" = proxy ] && port=$PROXYPORT db=encrypted
    sb "$port" "$db" "$w" cleanup >/dev/null 2>&1 || true
    if ! sb "$port" "$db" "$w" prepare >"$work/$w.$target.prepare" 2>&1; then
      echo "| $w | $target | prepare failed: $(grep -m1 -E 'FATAL|ERROR' "$work/$w.$target.prepare" | cut -c1-160) | | | |"
      status=1
      continue
    fi
    before=$(wc -l <"$work/pg.log")
    if ! sb "$port" "$db" "$w" run >"$work/$w.$target.run" 2>&1; then
      echo "| $w | $target | run failed: $(grep -m1 -E 'FATAL' "$work/$w.$target.run" | cut -c1-160) | | | |"
      status=1
      continue
    fi
    errs=$(sed -n "$((before + 1)),\$p" "$work/pg.log" | grep ' ERROR: ' || true)
    tx=$(awk '/transactions:/ {print $2; exit}' "$work/$w.$target.run")
    tps=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3; exit}' "$work/$w.$target.run")
    ign=$(awk '/ignored errors:/ {print $3; exit}' "$work/$w.$target.run")
    n=0 kinds=""
    if [ -n "$errs" ]; then
      n=$(printf '%s\n' "$errs" | wc -l)
      kinds=$(printf '%s\n' "$errs" | sed 's/.* ERROR: *//' | sort | uniq -c | sort -rn | head -3 | awk '{c=$1; $1=""; printf "%s%d x%s", sep, c, $0; sep="; "}')
    fi
    echo "| $w | $target | $tx | $tps | $ign | $n${kinds:+ ($kinds)} |"
  done
done
exit $status
