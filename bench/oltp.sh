#!/usr/bin/env bash
# bench/oltp.sh: stock OLTP benchmarks against three targets in one
# interleaved run, on one throwaway cluster (collation C, fsync off), one
# database per target:
#
#   direct     the server itself, database `direct`;
#   plain      `proxy serve --default-policy plain` in front of database
#              `plain`: the proxy relays and parses, encrypts nothing
#              (pass-through);
#   encrypted  `proxy serve` with the default policy in front of database
#              `encrypted`: every column of the tables created through it
#              is encrypted, but a server-generated key (SERIAL id).
#
# Nothing is declared (no `proxy columns set`) and no Lua is edited: the
# data is created through each target by the tools themselves, so what the
# proxies do is what an unchanged application would get.
#
# Workloads (positional names select a subset, in this order):
#   point_select, read_only, read_write   sysbench oltp_point_select,
#       oltp_read_only, oltp_read_write on 1 table (sbtest1) of -n rows:
#         sysbench oltp_read_write prepare --tables=1 --table-size=ROWS
#         sysbench WORKLOAD run --tables=1 --table-size=ROWS --threads=T
#           --time=SECS --histogram=on
#   select_only, tpcb   pgbench -S and the built-in tpcb-like script, each
#       with -M simple, extended and prepared (select_only:MODE or
#       tpcb:MODE picks one mode), on pgbench's tables at scale -s:
#         pgbench -i -q -s SCALE    (default steps dtgvp: client-side data)
#         pgbench -n [-S] -M MODE -c T -j T -T SECS -l
# Every target uses its own database, so tpcb-like and read_write change
# only that target's data. They do change it from round to round (the
# same for the three targets); they run last, after the read-only ones.
#
# Rounds: for each workload, one warm-up run per target first (-w seconds,
# not reported), then ROUNDS rounds; each round runs the workload against
# the three targets back to back, the first target rotating from round to
# round (direct plain encrypted, then plain encrypted direct, ...), so
# machine noise hits all three alike. TPS and latencies are medians over
# the rounds.
#
# Latency: sysbench's --histogram (the same buckets its own --percentile
# uses; values are bucket values, within about 1.5%); pgbench's
# per-transaction log (-l, exact microseconds). p50, p95, p99 per run, in
# ms; the table shows the median over rounds. The log costs pgbench a
# little time per transaction, the same on every target.
#
# CPU: each run's CPU time per transaction of the client (sysbench or
# pgbench), of the target's proxy and of the server (the postmaster and
# its children, exited ones included), from /proc. On a machine whose
# cores the three share, TPS follows their sum; the report also gives
# the enc/plain ratio the encrypted target would reach if its proxy cost
# what the pass-through's does (the server's and the client's extra
# work alone).
#
# Ratios: enc/plain (what encryption costs over the proxy's bare relay)
# and plain/direct (what the hop and the parsing cost). Goals of the
# issue, printed beside them: every encrypted workload >= 0.8 of
# pass-through; point selects (sysbench oltp_point_select, pgbench -S)
# >= 0.95.
#
# Caveats: loading through the encrypted proxy encrypts every column with
# the default policy's onions (pgbench -i -s 1: 3 s at 2e147b2; 17 minutes
# at ed6e631, when aid, bid and abalance each got a Paillier onion).
# pgbench prints 100% as soon as it has sent the rows; the server's COPY
# progress is printed
# every 30 s on standard error. pgbench -i -I dtGvp
# (server-side generation) is refused through the proxy for encrypted
# tables, so client-side generation (g, the default) is used everywhere.
# A load or run that fails is recorded with its first error message
# (`failed: MESSAGE`) and the script goes on.
#
# Prints Markdown on standard output (progress on standard error): the
# machine, versions, the command, the table, TPS of each round, the
# errors sysbench ignored (by design: duplicate keys and deadlocks in
# read_write), pgbench's failed transactions and the server's ERROR lines.
# Exit status: 0 if every load and run succeeded, 1 otherwise.
#
# Usage: bench/oltp.sh [-t THREADS] [-T SECS] [-n ROWS] [-s SCALE] [-r ROUNDS] [-w WARMUP_SECS] [WORKLOAD...]
#   defaults: -t 4 -T 20 -n 10000 -s 1 -r 3 -w 5, every workload:
#   point_select read_only read_write select_only tpcb
#   -t is sysbench's --threads and pgbench's -c and -j.
# Time: the loads (seconds at scale 1) plus 9 x 3 x (ROUNDS x SECS +
#   WARMUP) seconds of runs (29 minutes with the defaults). Bounds
#   (seconds, environment): INIT_TIMEOUT (each load, default 1800), RUN_SLACK (added to SECS for each run's timeout,
#   default 120). KEEP_WORK=1 keeps the work directory (logs of every run).
# Needs: sysbench (apt-get install sysbench), PostgreSQL server binaries and
#   pgbench (PGBINDIR, else the newest /usr/lib/postgresql/*/bin), Go,
#   python3. Runs as root (the server then runs as the postgres user) or as
#   a normal user. Loopback only.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
THREADS=4 SECS=20 ROWS=10000 SCALE=1 ROUNDS=3 WARMUP=5
while getopts "t:T:n:s:r:w:h" o; do
  case $o in
    t) THREADS=$OPTARG ;; T) SECS=$OPTARG ;; n) ROWS=$OPTARG ;; s) SCALE=$OPTARG ;;
    r) ROUNDS=$OPTARG ;; w) WARMUP=$OPTARG ;;
    h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
for v in "$THREADS" "$SECS" "$ROWS" "$SCALE" "$ROUNDS"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "oltp.sh: -t, -T, -n, -s and -r take positive integers, got '$v'" >&2; exit 2; }
done
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "oltp.sh: -w takes a non-negative integer (0: no warm-up), got '$WARMUP'" >&2; exit 2; }
INIT_TIMEOUT=${INIT_TIMEOUT:-1800} RUN_SLACK=${RUN_SLACK:-120}
for v in "$INIT_TIMEOUT" "$RUN_SLACK"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "oltp.sh: INIT_TIMEOUT and RUN_SLACK take positive integers, got '$v'" >&2; exit 2; }
done

# The workloads, in the order they run: the read-only ones first, on the
# freshly loaded data.
all=(point_select read_only read_write select_only:simple select_only:extended select_only:prepared
  tpcb:simple tpcb:extended tpcb:prepared)
WORKLOADS=()
if [ $# -eq 0 ]; then
  WORKLOADS=("${all[@]}")
else
  declare -A want=()
  for a in "$@"; do
    a=${a#oltp_}
    case $a in tpcb-like*) a=tpcb${a#tpcb-like} ;; select-only*) a=select_only${a#select-only} ;; esac
    hit=0
    for w in "${all[@]}"; do
      if [ "$w" = "$a" ] || [ "${w%%:*}" = "$a" ]; then want[$w]=1; hit=1; fi
    done
    [ "$hit" = 1 ] || { echo "oltp.sh: unknown workload '$a' (point_select read_only read_write select_only[:MODE] tpcb[:MODE]; MODE simple, extended or prepared)" >&2; exit 2; }
  done
  for w in "${all[@]}"; do [ -z "${want[$w]:-}" ] || WORKLOADS+=("$w"); done
fi
need_sb=0 need_pgb=0
for w in "${WORKLOADS[@]}"; do case $w in *:*) need_pgb=1 ;; *) need_sb=1 ;; esac; done
invocation="bench/oltp.sh -t $THREADS -T $SECS -n $ROWS -s $SCALE -r $ROUNDS -w $WARMUP${*:+ $*}"

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] && [ -x "$bindir/pgbench" ] || { echo "oltp.sh: no PostgreSQL server binaries and pgbench (set PGBINDIR)" >&2; exit 1; }
PGBENCH=$bindir/pgbench PSQL=$bindir/psql
[ "$need_sb" = 0 ] || command -v sysbench >/dev/null || { echo "oltp.sh: sysbench not found (apt-get update && apt-get install -y sysbench)" >&2; exit 1; }
command -v go >/dev/null || { echo "oltp.sh: go not found" >&2; exit 1; }
started=$(date +%s)

# shellcheck source=lib/workdir.sh
. "$root/bench/lib/workdir.sh"
bench_workdir oltp
# Two proxies: the library's cleanup stops $proxy_pid (the encrypted one);
# ours stops the pass-through one first.
plain_pid="" poll_pid=""
oltp_cleanup() {
  if [ -n "$poll_pid" ]; then kill "$poll_pid" 2>/dev/null || true; wait "$poll_pid" 2>/dev/null || true; fi
  if [ -n "$plain_pid" ]; then kill "$plain_pid" 2>/dev/null || true; wait "$plain_pid" 2>/dev/null || true; fi
  bench_cleanup
}
trap oltp_cleanup EXIT
PGPORT=$(free_port) PLAINPORT=$(free_port) ENCPORT=$(free_port)
load_start=$(awk '{print $1, $2, $3}' /proc/loadavg)

echo "building the proxy..." >&2
(cd "$root" && timeout 600 go build -o "$work/proxy" ./cmd/proxy) || die "go build failed"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$root" status --porcelain -- cmd internal migrations go.mod go.sum 2>/dev/null)" ] || commit="$commit (with uncommitted changes in the Go code)"

echo "starting PostgreSQL on 127.0.0.1:$PGPORT..." >&2
maxconn=$((THREADS * 3 + 50)); [ "$maxconn" -ge 100 ] || maxconn=100
timeout 300 "${asPG[@]}" "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync --locale=C >/dev/null
timeout 120 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=$maxconn" start >/dev/null
for db in direct plain encrypted; do timeout 60 "$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres "$db"; done

# One key store per proxy; --max-client-conn 0 so that -t above the
# default of 100 is not refused. Logs at warn: no per-statement logging.
start_proxy() { # start_proxy NAME PORT [FLAG...]: prints the pid
  local name=$1 port=$2
  shift 2
  local keys=(--keystore "$work/$name.keystore" --master-key-file "$work/$name.master")
  timeout 120 "$work/proxy" keys init "${keys[@]}" >/dev/null 2>&1 || die "proxy keys init ($name) failed"
  "$work/proxy" serve --listen "127.0.0.1:$port" --auth trust --log-level warn --max-client-conn 0 "${keys[@]}" "$@" \
    --backend "postgres://postgres@127.0.0.1:$PGPORT/$name?sslmode=disable" 2>"$work/proxy-$name.log" >/dev/null &
  echo $!
}
plain_pid=$(start_proxy plain "$PLAINPORT" --default-policy plain)
proxy_pid=$(start_proxy encrypted "$ENCPORT")
wait_ready "$PLAINPORT"
wait_ready "$ENCPORT"

targets=(direct plain encrypted)
declare -A portOf=([direct]=$PGPORT [plain]=$PLAINPORT [encrypted]=$ENCPORT)
declare -A proxyOf=([plain]=$plain_pid [encrypted]=$proxy_pid)
declare -A loadNote=() loadFail=()
status=0

# The first error of a log, on one line, Markdown-safe: a server or
# proxy ERROR, else a FATAL or pgbench error line, else the last line.
errmsg() {
  local m
  m=$(grep -m1 -o 'ERROR: .*' "$1" | sed 's/^ERROR: *//') || true
  [ -n "$m" ] || m=$(grep -m1 -E 'FATAL|[Ee]rror' "$1" | sed 's/^pgbench: error: //') || true
  [ -n "$m" ] || m=$(tail -1 "$1")
  printf '%s' "$m" | tr '\t\n' '  ' | sed 's/|/\\|/g' | cut -c1-200
}

# ---- loads ----
if [ "$need_sb" = 1 ]; then
  for t in "${targets[@]}"; do
    echo "sysbench prepare ($ROWS rows) through $t..." >&2
    t0=$(date +%s) rc=0
    timeout -k 10 "$INIT_TIMEOUT" sysbench oltp_read_write --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="${portOf[$t]}" \
      --pgsql-user=postgres --pgsql-db="$t" --tables=1 --table-size="$ROWS" prepare >"$work/prepare-$t.log" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
      loadFail[sb.$t]="sysbench prepare: $( [ "$rc" = 124 ] && echo "timed out after ${INIT_TIMEOUT}s" || errmsg "$work/prepare-$t.log")"
      echo "  FAILED: ${loadFail[sb.$t]}" >&2
      status=1
    fi
    loadNote[sb.$t]=$(($(date +%s) - t0))
    echo "  ${loadNote[sb.$t]}s" >&2
  done
fi
# copy_progress DB: every 30 s, the rows the server has received so far
# of a COPY into DB (pgbench reports 100% as soon as it has sent them; the
# encrypted proxy takes far longer to pass them on).
copy_progress() {
  local n i=0
  while sleep 1; do   # 1 s ticks: a kill leaves no long sleep behind
    i=$((i + 1))
    [ $((i % 30)) = 0 ] || continue
    n=$(timeout 10 "$PSQL" -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres "$1" -c \
      "SELECT string_agg(relid::regclass || ': ' || tuples_processed || ' rows', ', ') FROM pg_stat_progress_copy WHERE datname = '$1'" 2>/dev/null) || true
    [ -z "$n" ] || echo "  server, COPY so far: $n" >&2
  done
}
if [ "$need_pgb" = 1 ]; then
  for t in "${targets[@]}"; do
    copy_progress "$t" &
    poll_pid=$!
    echo "pgbench -i -q -s $SCALE through $t..." >&2
    t0=$(date +%s) rc=0
    # -q: pgbench's progress line every 5 s, copied to standard error.
    timeout -k 10 "$INIT_TIMEOUT" "$PGBENCH" -i -q -s "$SCALE" -h 127.0.0.1 -p "${portOf[$t]}" -U postgres "$t" 2>&1 \
      | tee "$work/init-$t.log" | sed -u 's/^/  /' >&2 || rc=${PIPESTATUS[0]}
    if [ "$rc" != 0 ]; then
      loadFail[pgb.$t]="pgbench -i: $( [ "$rc" = 124 ] && echo "timed out after ${INIT_TIMEOUT}s" || errmsg "$work/init-$t.log")"
      echo "  FAILED: ${loadFail[pgb.$t]}" >&2
      status=1
    fi
    kill "$poll_pid" 2>/dev/null || true; wait "$poll_pid" 2>/dev/null || true; poll_pid=""
    loadNote[pgb.$t]=$(($(date +%s) - t0))
    echo "  ${loadNote[pgb.$t]}s" >&2
  done
fi
# The server-side columns of the encrypted database: no plaintext but id.
layout() { # layout DB TABLE
  timeout 60 "$PSQL" -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres "$1" -c \
    "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '$2'" 2>/dev/null || true
}

# ---- runs ----
results=$work/results.tsv
: >"$results"

# pct P: the P-th percentile of the sorted numbers on standard input
# (nearest rank), NA if none.
pcts() { sort -n | awk 'NF {a[++n] = $1} END {
    if (!n) {print "NA\tNA\tNA"; exit}
    split("50 95 99", p, " ")
    for (i = 1; i <= 3; i++) {k = int(n * p[i] / 100 + 0.999999); if (k < 1) k = 1; printf "%s%s", a[k], (i < 3 ? "\t" : "\n")}
  }'; }

# CPU time in clock ticks, from /proc: of a process (utime + stime), of
# the waited-for children of this shell (the benchmark tools), and of
# the server (the postmaster, its live children and its exited ones).
TICK=$(getconf CLK_TCK)
pm_pid=""
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
child_ticks() { awk '{print $16 + $17}' "/proc/$$/stat"; }
server_ticks() {
  [ -n "$pm_pid" ] || pm_pid=$(head -1 "$work/data/postmaster.pid")
  { awk '{print $14 + $15 + $16 + $17}' "/proc/$pm_pid/stat"
    for c in $(pgrep -P "$pm_pid"); do proc_ticks "$c"; done; } | awk '{s += $1} END {print s + 0}'
}
# per_tx TICKS N: microseconds of CPU per transaction
per_tx() { awk -v t="$1" -v n="$2" -v hz="$TICK" 'BEGIN {if (n + 0 == 0) print "NA"; else printf "%.0f", t * 1000000 / hz / n}'; }

# run WORKLOAD TARGET PHASE ROUND SECS: one run, recorded as a line of
# $results: workload target phase round status tps p50 p95 p99 (ms)
# ignored-or-failed server-errors message, and CPU per transaction (µs)
# of the client, the proxy (0 for direct) and the server.
run() {
  local w=$1 t=$2 phase=$3 round=$4 secs=$5 rc=0 tps="" lat="NA	NA	NA" errs=0 bad=0 msg="" before
  local log="$work/run-${w/:/-}-$t-$phase$round.log"
  local kind=sb; [[ $w == *:* ]] && kind=pgb
  if [ -n "${loadFail[$kind.$t]:-}" ]; then
    printf '%s\t%s\t%s\t%s\tfailed\t\tNA\tNA\tNA\t\t\t%s\n' "$w" "$t" "$phase" "$round" "${loadFail[$kind.$t]}" >>"$results"
    return
  fi
  before=$(wc -l <"$work/pg.log")
  local pid=${proxyOf[$t]:-} c0 p0=0 s0 c1 p1=0 s1 n
  s0=$(server_ticks)
  [ -z "$pid" ] || p0=$(proc_ticks "$pid")
  c0=$(child_ticks) # last: the commands above are this shell's children too
  if [ $kind = sb ]; then
    timeout -k 10 $((secs + RUN_SLACK)) sysbench "oltp_$w" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="${portOf[$t]}" \
      --pgsql-user=postgres --pgsql-db="$t" --tables=1 --table-size="$ROWS" --threads="$THREADS" --time="$secs" \
      --histogram=on run >"$log" 2>&1 || rc=$?
    c1=$(child_ticks) s1=$(server_ticks)
    [ -z "$pid" ] || p1=$(proc_ticks "$pid")
    n=$(awk '/transactions:/ {print $2; exit}' "$log")
    tps=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3; exit}' "$log")
    bad=$(awk '/ignored errors:/ {print $3; exit}' "$log")
    # The histogram's lines: "   VALUE |****   COUNT", VALUE in ms.
    lat=$(awk '/^Latency histogram/ {on = 1; next} on && /^ *[0-9.]+ \|/ {print $1, $NF} on && /^$/ && seen {exit} on {seen = 1}' "$log" \
      | awk '{v[NR] = $1; c[NR] = $2; n += $2} END {
          if (!n) {print "NA\tNA\tNA"; exit}
          split("50 95 99", p, " "); i = 1; s = 0
          for (j = 1; j <= NR && i <= 3; j++) {s += c[j]; while (i <= 3 && s >= n * p[i] / 100) {o[i++] = v[j]}}
          printf "%s\t%s\t%s\n", o[1], o[2], o[3]}')
  else
    local scen=${w%%:*} mode=${w#*:} args ldir="$work/txlog-${w/:/-}-$t-$phase$round"
    args=(-n -M "$mode" -c "$THREADS" -j "$THREADS" -T "$secs" -l --log-prefix="$ldir/tx")
    [ "$scen" = select_only ] && args=(-S "${args[@]}")
    mkdir -p "$ldir"
    timeout -k 10 $((secs + RUN_SLACK)) "$PGBENCH" "${args[@]}" -h 127.0.0.1 -p "${portOf[$t]}" -U postgres "$t" >"$log" 2>&1 || rc=$?
    c1=$(child_ticks) s1=$(server_ticks)
    [ -z "$pid" ] || p1=$(proc_ticks "$pid")
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$log" | head -1)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$log" | head -1)
    bad=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$log" | head -1)
    # Column 3 of pgbench's log: the transaction's latency in microseconds
    # (failed ones say "failed" there and are left out).
    [ "$phase" = warmup ] || lat=$(cat "$ldir"/tx* 2>/dev/null | awk '$3 ~ /^[0-9]+$/ {printf "%.3f\n", $3 / 1000}' | pcts)
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$ldir"
  fi
  errs=$(sed -n "$((before + 1)),\$p" "$work/pg.log" | grep -c ' ERROR: ' || true)
  if [ "$rc" != 0 ] || [ -z "$tps" ]; then
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then msg="timed out (-T $secs under timeout $((secs + RUN_SLACK))s)"; else msg=$(errmsg "$log"); fi
    printf '%s\t%s\t%s\t%s\tfailed\t%s\tNA\tNA\tNA\t%s\t%s\t%s\n' "$w" "$t" "$phase" "$round" "$tps" "${bad:-0}" "$errs" "$msg" >>"$results"
    echo "$w $t $phase $round: FAILED (exit $rc): $msg" >&2
    status=1
    return
  fi
  local cpu
  cpu="$(per_tx $((c1 - c0)) "$n")	$(per_tx $((p1 - p0)) "$n")	$(per_tx $((s1 - s0)) "$n")"
  printf '%s\t%s\t%s\t%s\tok\t%s\t%s\t%s\t%s\t\t%s\n' "$w" "$t" "$phase" "$round" "$tps" "$lat" "${bad:-0}" "$errs" "$cpu" >>"$results"
  echo "$w $t $phase $round: $tps tps, p50/p95/p99 $(tr '\t' / <<<"$lat") ms, ${bad:-0} ignored/failed, $errs server ERRORs, CPU µs/tx client/proxy/server $(tr '\t' / <<<"$cpu")" >&2
}

for w in "${WORKLOADS[@]}"; do
  if [ "$WARMUP" -gt 0 ]; then
    for t in "${targets[@]}"; do run "$w" "$t" warmup 0 "$WARMUP"; done
  fi
  for round in $(seq "$ROUNDS"); do
    s=$(((round - 1) % 3))
    for i in 0 1 2; do run "$w" "${targets[$(((s + i) % 3))]}" round "$round" "$SECS"; done
  done
done
load_end=$(awk '{print $1, $2, $3}' /proc/loadavg)

# ---- report ----
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "NA"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
# field F of the successful measured rounds of workload W, target T
sel() { awk -F'\t' -v w="$1" -v t="$2" -v f="$3" '$1 == w && $2 == t && $3 == "round" && $5 == "ok" && $f != "NA" {print $f}' "$results"; }
med() { sel "$1" "$2" "$3" | median; }
tpscell() {
  local m
  m=$(med "$1" "$2" 6)
  if [ "$m" = NA ]; then
    m=$(awk -F'\t' -v w="$1" -v t="$2" '$1 == w && $2 == t && $3 == "round" {print "failed: " $12; exit}' "$results")
    echo "${m:-no run}"
  else printf '%.0f' "$m"; fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "NA" || b == "NA" || b + 0 == 0) print "NA"; else printf "%.2f", a / b}'; }
latcell() { # latcell W F: d/p/e medians of field F
  local out="" t v
  for t in "${targets[@]}"; do
    v=$(med "$1" "$t" "$2")
    [ "$v" = NA ] || v=$(awk -v x="$v" 'BEGIN {printf (x < 10 ? "%.2f" : "%.1f"), x}')
    out="$out${out:+/}$v"
  done
  echo "$out"
}
notes() { # failed rounds and warm-ups, ignored errors or failed transactions, server ERRORs
  awk -F'\t' -v w="$1" -v R="$ROUNDS" -v sb="$([[ $1 == *:* ]] && echo 0 || echo 1)" '
    $1 != w {next}
    $3 == "warmup" && $5 != "ok" {wf[$2] = $12}
    $3 == "round" && $5 != "ok" {nf[$2]++; if (!($2 in fm)) fm[$2] = $12}
    $3 == "round" {ig[$2] += $10; se[$2] += $11}
    END {
      split("direct plain encrypted", T, " "); out = ""
      for (i = 1; i <= 3; i++) {
        t = T[i]
        if (nf[t]) out = out (out ? "; " : "") t ": " nf[t] " of " R " rounds failed"
        if (t in wf) out = out (out ? "; " : "") t ": warm-up failed: " wf[t]
        a = a (a ? "/" : "") ig[t] + 0; b = b (b ? "/" : "") se[t] + 0
        if (ig[t] + 0) x = 1
        if (se[t] + 0) y = 1
      }
      if (x) out = out (out ? "; " : "") (sb ? "ignored errors " : "failed transactions ") a
      if (y) out = out (out ? "; " : "") "server ERRORs " b
      print out
    }' "$results"
}
label() {
  case $1 in
    point_select|read_only|read_write) echo "sysbench oltp_$1" ;;
    select_only:*) echo "pgbench -S -M ${1#*:}" ;;
    tpcb:*) echo "pgbench tpcb-like -M ${1#*:}" ;;
  esac
}

cpu=$(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | xargs)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
echo "## OLTP: direct, proxy pass-through (plain policy), proxy encrypted (default policy), $(date -u +%Y-%m-%d)"
echo
echo "- command: \`$invocation\` (took $(( $(date +%s) - started ))s)"
echo "- machine: $(nproc) cores ($cpu, $(uname -m)), $mem memory; load average $load_start at the start, $load_end at the end"
sbv=""; [ "$need_sb" = 0 ] || sbv="$(sysbench --version), "
echo "- software: $("$bindir/postgres" --version), ${sbv}pgbench $("$PGBENCH" --version | awk '{print $3}'), $(go version | awk '{print $3}'), pgonion $commit"
echo "- server: one throwaway cluster (collation C, fsync=off, synchronous_commit=off), databases direct, plain, encrypted"
if [ "$need_sb" = 1 ]; then
  echo "- sysbench: 1 table of $ROWS rows (\`sysbench oltp_read_write prepare --tables=1 --table-size=$ROWS\` through each target; took ${loadNote[sb.direct]}s / ${loadNote[sb.plain]}s / ${loadNote[sb.encrypted]}s direct/plain/encrypted); runs \`sysbench oltp_WORKLOAD run --threads=$THREADS --time=$SECS --histogram=on\`"
  echo "  - server-side sbtest1 in encrypted: $(layout encrypted sbtest1)"
fi
if [ "$need_pgb" = 1 ]; then
  echo "- pgbench: \`pgbench -i -q -s $SCALE\` through each target (took ${loadNote[pgb.direct]}s / ${loadNote[pgb.plain]}s / ${loadNote[pgb.encrypted]}s direct/plain/encrypted); runs \`pgbench -n [-S] -M MODE -c $THREADS -j $THREADS -T $SECS -l\`"
  echo "  - server-side pgbench_accounts in encrypted: $(layout encrypted pgbench_accounts)"
fi
for k in "${!loadFail[@]}"; do echo "- load through ${k#*.} FAILED: ${loadFail[$k]}"; done
echo "- each workload: a ${WARMUP}s warm-up per target, then $ROUNDS round(s) of ${SECS}s per target, the targets back to back, the first one rotating; medians over rounds"
echo
echo "| workload | TPS direct | TPS plain | TPS enc | enc/plain | goal | plain/direct | p50 ms d/p/e | p95 ms d/p/e | p99 ms d/p/e | notes |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for w in "${WORKLOADS[@]}"; do
  d=$(med "$w" direct 6) p=$(med "$w" plain 6) e=$(med "$w" encrypted 6)
  ep=$(ratio "$e" "$p") pd=$(ratio "$p" "$d")
  goal=0.80; case $w in point_select|select_only:*) goal=0.95 ;; esac
  met=""; [ "$ep" = NA ] || met=$(awk -v r="$ep" -v g="$goal" 'BEGIN {print (r >= g ? ": met" : ": not met")}')
  echo "| $(label "$w") | $(tpscell "$w" direct) | $(tpscell "$w" plain) | $(tpscell "$w" encrypted) | $ep | >= $goal$met | $pd | $(latcell "$w" 7) | $(latcell "$w" 8) | $(latcell "$w" 9) | $(notes "$w") |"
done
echo
echo "Goals (enc/plain): every encrypted workload >= 0.8 of pass-through, point selects (sysbench oltp_point_select, pgbench -S) >= 0.95."
echo "Latency: sysbench's histogram (bucket values), pgbench's per-transaction log; median over rounds of each run's percentile."
echo "Notes sum over rounds: errors sysbench ignored (read_write: duplicate keys, deadlocks), pgbench's failed transactions, ERROR lines in the server's log (direct/plain/encrypted)."
echo
echo "CPU per transaction, µs (client / proxy / server, medians over rounds; from /proc):"
echo
echo "| workload | direct | plain | encrypted | enc/plain were the proxy's cost the pass-through's |"
echo "|---|---|---|---|---|"
for w in "${WORKLOADS[@]}"; do
  cells=""
  for t in "${targets[@]}"; do
    cells="$cells | $(med "$w" "$t" 13) / $(med "$w" "$t" 14) / $(med "$w" "$t" 15)"
  done
  # The sum of the three bounds TPS when they share the machine's cores.
  bound=$(awk -v pc="$(med "$w" plain 13)" -v pp="$(med "$w" plain 14)" -v ps="$(med "$w" plain 15)" \
    -v ec="$(med "$w" encrypted 13)" -v es="$(med "$w" encrypted 15)" \
    'BEGIN {if (pc == "NA" || pp == "NA" || ps == "NA" || ec == "NA" || es == "NA" || ec + pp + es == 0) print "NA"; else printf "%.2f", (pc + pp + ps) / (ec + pp + es)}')
  echo "| $(label "$w")$cells | $bound |"
done
echo
echo "TPS of each round (direct; plain; encrypted):"
for w in "${WORKLOADS[@]}"; do
  per() { awk -F'\t' -v w="$w" -v t="$1" '$1 == w && $2 == t && $3 == "round" {printf "%s%s", (n++ ? " " : ""), ($5 == "ok" ? sprintf("%.0f", $6) : $5)}' "$results"; }
  echo "- $(label "$w"): $(per direct); $(per plain); $(per encrypted)"
done
bad=$(awk -F'\t' '$5 != "ok"' "$results" | wc -l)
echo
echo "runs that failed (warm-ups included): $bad of $(wc -l <"$results")"
exit $status
