#!/usr/bin/env bash
# bench/pgbench.sh: pgbench's built-in scenarios through the proxy over an
# encrypted schema, against the server directly on plaintext. One throwaway
# cluster, two databases:
#
#   direct  the server, on a database initialised with pgbench -i directly
#           (plaintext);
#   proxy   the proxy in front of a second database initialised THROUGH the
#           proxy with pgbench -i, so the proxy creates pgbench's tables and
#           encrypts what the column policy below says.
#
# Scenarios: select-only (pgbench -S) and tpcb-like (the default script),
# each with -M simple, -M extended and -M prepared. Each run is
#   pgbench -n [-S] -M MODE -c CLIENTS -j THREADS -T SECONDS -r
# (-n: no vacuum/truncate before the run, the same for both targets).
#
# Column policy of the encrypted database, declared with `proxy columns set`
# before pgbench -i creates the tables:
#   aid, bid, tid (every table)  encrypted, capabilities eq: DET equality
#       for WHERE aid = $1 and the primary keys (pgbench -i's ALTER TABLE
#       ADD PRIMARY KEY peels their Eq onions to DET on the server);
#   abalance, bbalance, tbalance, pgbench_history.delta  encrypted,
#       capabilities add: Paillier, so that UPDATE ... SET abalance =
#       abalance + :delta runs on the server (README, *Increments*). No eq:
#       pgbench never compares a balance, and an encrypted column always
#       keeps its Eq onion (at RND), which is what reads decrypt; the eq
#       capability would only allow peeling it to DET;
#   pgbench_history.mtime  plain: pgbench inserts CURRENT_TIMESTAMP, which
#       the server computes (and therefore sees in plaintext anyway); the
#       proxy refuses such a value on an encrypted column ("expression in
#       INSERT into encrypted column pgbench_history.mtime: only constants,
#       parameters and NULL are supported");
#   filler (every table)  plain: pgbench writes blanks (accounts) or NULL
#       (the others) there only to give rows their width; encrypting them
#       protects nothing and would widen the rows further (char(n) also
#       needs an exact-value copy, c__val).
#
# Loading: pgbench -i through the proxy encrypts one Paillier value per
# account (abalance), so it is slow: scale 1 (100,000 accounts) took 4 to
# 7.5 minutes on the project's shared 2-core machine (see bench/README.md).
# Server-side generation (pgbench -i -I dtGvp) cannot help: the proxy
# refuses INSERT ... SELECT into encrypted tables. Scale 1 is pgbench's
# smallest; -s raises it, and the load time with it.
#
# Order: all select-only runs first (on the freshly loaded data), then all
# tpcb-like runs (they increment the balances, after which reads of
# abalance go to the Add onion where it was incremented). Within a
# scenario: first one warm-up run per mode and target (-w seconds, not in
# the table, failures reported), then ROUNDS rounds; each round runs every
# mode against both targets back to back, alternating which target goes
# first, so machine noise hits both alike. Figures are medians over rounds.
#
# Afterwards, pgbench's invariant sum(abalance) = sum(tbalance) =
# sum(bbalance) = sum(pgbench_history.delta) is checked in both databases
# (through the proxy: Paillier sums; skipped above scale 6, where the
# simple protocol's SUM over more than 700,000 ciphertexts fails).
#
# A run that fails (a refusal or error through the proxy, an abort, a
# timeout) is recorded with its first error message and the script goes on;
# the table then says `failed: MESSAGE`, or notes failed rounds and warm-ups.
#
# Prints Markdown on standard output (progress on standard error): the
# machine, the commands, the TPS table (scenario, mode, direct TPS, proxy
# TPS, ratio proxy/direct, notes) and tpcb-like's per-statement latencies.
# Exit status: 0 if every run and check succeeded, 1 otherwise.
#
# Usage: bench/pgbench.sh [-s SCALE] [-T SECONDS] [-r ROUNDS] [-w WARMUP_SECONDS] [-c CLIENTS] [-j THREADS]
#   defaults: -s 1 -T 10 -r 3 -w 3 -c 4 -j 2
# Time: the load through the proxy (4-7.5 min at scale 1 here) plus
#   12 x (ROUNDS x SECONDS + WARMUP) seconds of runs (~7 min by default):
#   11 minutes in all here with the defaults.
# Time bounds (seconds, environment): TOTAL_TIMEOUT (the whole script,
#   default 3600; runs that no longer fit are skipped and reported),
#   INIT_TIMEOUT (each pgbench -i, default 1800), RUN_SLACK (added to -T
#   for each run's timeout, default 60). KEEP_WORK=1 keeps the work
#   directory (logs of every run).
# Needs: PostgreSQL server binaries and pgbench (PGBINDIR, else the newest
#   /usr/lib/postgresql/*/bin), Go, python3 (free ports). Runs as root (the
#   server then runs as the postgres user) or as a normal user. Loopback
#   addresses only.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

SCALE=1 SECS=10 ROUNDS=3 WARMUP=3 CLIENTS=4 THREADS=2
while getopts "s:T:r:w:c:j:h" o; do
  case $o in
    s) SCALE=$OPTARG ;; T) SECS=$OPTARG ;; r) ROUNDS=$OPTARG ;; w) WARMUP=$OPTARG ;;
    c) CLIENTS=$OPTARG ;; j) THREADS=$OPTARG ;;
    h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 2; }
for v in "$SCALE" "$SECS" "$ROUNDS" "$CLIENTS" "$THREADS"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "pgbench.sh: -s, -T, -r, -c and -j take positive integers, got '$v'" >&2; exit 2; }
done
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "pgbench.sh: -w takes a non-negative integer, got '$WARMUP'" >&2; exit 2; }
[ "$THREADS" -le "$CLIENTS" ] || { echo "pgbench.sh: -j must not exceed -c" >&2; exit 2; }
TOTAL_TIMEOUT=${TOTAL_TIMEOUT:-3600} INIT_TIMEOUT=${INIT_TIMEOUT:-1800} RUN_SLACK=${RUN_SLACK:-60}
invocation="bench/pgbench.sh -s $SCALE -T $SECS -r $ROUNDS -w $WARMUP -c $CLIENTS -j $THREADS"
started=$(date +%s)
deadline=$((started + TOTAL_TIMEOUT))

root=$(cd "$(dirname "$0")/.." && pwd)
bindir=${PGBINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] && [ -x "$bindir/pgbench" ] || { echo "pgbench.sh: no PostgreSQL server binaries and pgbench (set PGBINDIR)" >&2; exit 1; }
PGBENCH=$bindir/pgbench PSQL=$bindir/psql
command -v go >/dev/null || { echo "pgbench.sh: go not found" >&2; exit 1; }

# left: seconds until the deadline. bounded SECS CMD...: CMD under a
# timeout of SECS, cut to the deadline (exit 124 when it expires).
left() { echo $((deadline - $(date +%s))); }
bounded() {
  local t=$1 l
  shift
  l=$(left)
  if [ "$l" -le 0 ]; then echo "pgbench.sh: out of time (TOTAL_TIMEOUT=${TOTAL_TIMEOUT}s)" >&2; return 124; fi
  [ "$t" -le "$l" ] || t=$l
  timeout --foreground -k 10 "$t" "$@"
}

# shellcheck source=lib/workdir.sh
. "$root/bench/lib/workdir.sh"
bench_workdir pgbench
PGPORT=$(free_port) PROXYPORT=$(free_port)
load_start=$(awk '{print $1, $2, $3}' /proc/loadavg)

echo "building the proxy..." >&2
(cd "$root" && bounded 600 go build -o "$work/proxy" ./cmd/proxy) || die "go build failed"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$root" status --porcelain -- cmd internal migrations go.mod go.sum 2>/dev/null)" ] || commit="$commit (with uncommitted changes in the Go code)"

echo "starting PostgreSQL on 127.0.0.1:$PGPORT..." >&2
bounded 300 "${asPG[@]}" "$bindir/initdb" -D "$work/data" -U postgres --auth=trust --no-sync >/dev/null
bounded 120 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -t 60 \
  -o "-p $PGPORT -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=100" start >/dev/null
bounded 60 "$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_direct
bounded 60 "$bindir/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_proxy

echo "pgbench -i -s $SCALE directly (plaintext database)..." >&2
t0=$(date +%s)
bounded "$INIT_TIMEOUT" "$PGBENCH" -i -s "$SCALE" -h 127.0.0.1 -p "$PGPORT" -U postgres bench_direct >"$work/init-direct.log" 2>&1 \
  || { cat "$work/init-direct.log" >&2; die "pgbench -i directly failed"; }
init_direct=$(($(date +%s) - t0))

# The encrypted database: declare every column of pgbench's tables before
# they exist (see the header for why each is what it is).
keys=(--keystore "$work/pgonion.keystore" --master-key-file "$work/pgonion.master")
dsn="postgres://postgres@127.0.0.1:$PGPORT/bench_proxy?sslmode=disable"
bounded 120 "$work/proxy" keys init "${keys[@]}" >/dev/null 2>&1 || die "proxy keys init failed"
declare -A policy=(
  [pgbench_accounts.aid]=eq [pgbench_accounts.bid]=eq [pgbench_accounts.abalance]=add [pgbench_accounts.filler]=plain
  [pgbench_branches.bid]=eq [pgbench_branches.bbalance]=add [pgbench_branches.filler]=plain
  [pgbench_tellers.tid]=eq [pgbench_tellers.bid]=eq [pgbench_tellers.tbalance]=add [pgbench_tellers.filler]=plain
  [pgbench_history.tid]=eq [pgbench_history.bid]=eq [pgbench_history.aid]=eq [pgbench_history.delta]=add
  [pgbench_history.mtime]=plain [pgbench_history.filler]=plain
)
echo "declaring ${#policy[@]} columns (proxy columns set)..." >&2
for col in $(printf '%s\n' "${!policy[@]}" | sort); do
  if [ "${policy[$col]}" = plain ]; then decl=(--policy plain); else decl=(--policy encrypted --capabilities "${policy[$col]}"); fi
  bounded 60 "$work/proxy" columns set "$col" "${decl[@]}" "${keys[@]}" --backend "$dsn" >/dev/null \
    || die "proxy columns set $col ${decl[*]} failed"
done
"$work/proxy" serve --listen "127.0.0.1:$PROXYPORT" --auth trust --log-level info "${keys[@]}" \
  --backend "$dsn" 2>"$work/proxy.log" &
proxy_pid=$!
wait_ready "$PROXYPORT"

echo "pgbench -i -s $SCALE through the proxy (encrypted database; Paillier makes this slow)..." >&2
t0=$(date +%s)
if ! bounded "$INIT_TIMEOUT" "$PGBENCH" -i -s "$SCALE" -h 127.0.0.1 -p "$PROXYPORT" -U postgres bench_proxy >"$work/init-proxy.log" 2>&1; then
  cat "$work/init-proxy.log" >&2
  echo "--- proxy log:" >&2; tail -20 "$work/proxy.log" >&2
  die "pgbench -i through the proxy failed (or exceeded ${INIT_TIMEOUT}s or the deadline)"
fi
init_proxy=$(($(date +%s) - t0))
init_proxy_detail=$(sed -n 's/^done in \(.*\)\.$/\1/p' "$work/init-proxy.log")
echo "  took ${init_proxy}s ($init_proxy_detail)" >&2

# The server must hold no plaintext id or balance of pgbench's tables, and
# the keys must be on the Eq onions; through the proxy the rows read back.
q_server() { bounded 120 "$PSQL" -X -At -h 127.0.0.1 -p "$PGPORT" -U postgres "$1" -c "$2"; }
q_proxy() { bounded 300 "$PSQL" -X -At -h 127.0.0.1 -p "$PROXYPORT" -U postgres bench_proxy -c "$1"; }
plain=$(q_server bench_proxy "SELECT string_agg(table_name || '.' || column_name, ' ') FROM information_schema.columns
  WHERE table_name LIKE 'pgbench\_%' AND column_name IN ('aid', 'bid', 'tid', 'abalance', 'bbalance', 'tbalance', 'delta')")
[ -z "$plain" ] || die "the encrypted database holds plaintext columns: $plain"
pks=$(q_server bench_proxy "SELECT count(*) FROM pg_indexes WHERE indexname IN ('pgbench_accounts_pkey', 'pgbench_branches_pkey', 'pgbench_tellers_pkey') AND indexdef LIKE '%\_\_eq)%'")
[ "$pks" = 3 ] || echo "warning: $pks of pgbench's 3 primary keys are on Eq onions" >&2
rows=$(q_proxy "SELECT count(*) FROM pgbench_accounts")
bal=$(q_proxy "SELECT abalance FROM pgbench_accounts WHERE aid = 1")
[ "$rows" = $((SCALE * 100000)) ] && [ "$bal" = 0 ] \
  || die "through the proxy: $rows accounts (want $((SCALE * 100000))), abalance of aid 1 '$bal' (want 0)"
layout=$(q_server bench_proxy "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'pgbench_accounts'")
echo "  server-side pgbench_accounts: $layout" >&2

declare -A portOf=([direct]=$PGPORT [proxy]=$PROXYPORT) dbOf=([direct]=bench_direct [proxy]=bench_proxy)
modes=(simple extended prepared)
scenarios=(select-only tpcb-like)
results=$work/results.tsv lat=$work/latencies.tsv
: >"$results"
: >"$lat"

# The first error of a pgbench log, on one line, Markdown-safe.
errmsg() {
  local m
  m=$(grep -m1 -o 'ERROR: .*' "$1" | sed 's/^ERROR: *//') || true
  [ -n "$m" ] || m=$(grep -m1 -iE 'error|fatal' "$1" | sed 's/^pgbench: error: //') || true
  [ -n "$m" ] || m=$(tail -1 "$1")
  printf '%s' "$m" | tr '\t\n' '  ' | sed 's/|/\\|/g'
}

# run SCENARIO MODE TARGET PHASE ROUND SECONDS: one pgbench run, recorded
# as a line of $results: scenario mode target phase round status tps
# failed-transactions message.
run() {
  local scen=$1 mode=$2 target=$3 phase=$4 round=$5 secs=$6 rc=0 tps failed
  local log="$work/run-$scen-$mode-$target-$phase$round.log"
  local args=(-n -M "$mode" -c "$CLIENTS" -j "$THREADS" -T "$secs" -r)
  [ "$scen" = select-only ] && args=(-S "${args[@]}")
  if [ "$(left)" -lt $((secs + 30)) ]; then
    printf '%s\t%s\t%s\t%s\t%s\tskipped\t\t\t%s\n' "$scen" "$mode" "$target" "$phase" "$round" "out of time (TOTAL_TIMEOUT=${TOTAL_TIMEOUT}s)" >>"$results"
    echo "$scen $mode $target $phase $round: skipped, out of time" >&2
    return
  fi
  bounded $((secs + RUN_SLACK)) "$PGBENCH" "${args[@]}" -h 127.0.0.1 -p "${portOf[$target]}" -U postgres "${dbOf[$target]}" >"$log" 2>&1 || rc=$?
  tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$log" | head -1)
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$log" | head -1)
  if [ "$rc" != 0 ] || [ -z "$tps" ]; then
    local msg
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then msg="timed out (pgbench -T $secs under timeout $((secs + RUN_SLACK))s)"; else msg=$(errmsg "$log"); fi
    printf '%s\t%s\t%s\t%s\t%s\tfailed\t%s\t%s\t%s\n' "$scen" "$mode" "$target" "$phase" "$round" "$tps" "$failed" "$msg" >>"$results"
    echo "$scen $mode $target $phase $round: FAILED (exit $rc): $msg" >&2
    return
  fi
  printf '%s\t%s\t%s\t%s\t%s\tok\t%s\t%s\t\n' "$scen" "$mode" "$target" "$phase" "$round" "$tps" "${failed:-0}" >>"$results"
  echo "$scen $mode $target $phase $round: $tps tps, ${failed:-0} failed transactions" >&2
  if [ "$phase" = round ]; then
    # pgbench -r: per-statement latencies (PostgreSQL 15 adds a failures
    # column); meta-commands (\set) are left out.
    awk -v OFS='\t' -v s="$scen" -v m="$mode" -v t="$target" -v r="$round" '
      /^statement latencies/ {on = 1; n = 0; next}
      on && /^ +[0-9.]+ / {
        n++; l = $1; sub(/^ +[0-9.]+ +/, ""); sub(/^[0-9]+ +/, "")
        if ($0 !~ /^\\/) print s, m, t, r, n, l, $0
        next
      }
      on {on = 0}' "$log" >>"$lat"
  fi
}

for scen in "${scenarios[@]}"; do
  if [ "$WARMUP" -gt 0 ]; then
    for mode in "${modes[@]}"; do
      for target in direct proxy; do run "$scen" "$mode" "$target" warmup 0 "$WARMUP"; done
    done
  fi
  for round in $(seq "$ROUNDS"); do
    order=(direct proxy)
    [ $((round % 2)) = 0 ] && order=(proxy direct)
    for mode in "${modes[@]}"; do
      for target in "${order[@]}"; do run "$scen" "$mode" "$target" round "$round" "$SECS"; done
    done
  done
done

# pgbench's invariant, in both databases.
checks=() check_fail=0
for target in direct proxy; do
  if [ "$target" = proxy ] && [ "$SCALE" -gt 6 ]; then
    checks+=("proxy: skipped (scale $SCALE: SUM over more than 700,000 Paillier ciphertexts fails in the simple protocol)")
    continue
  fi
  q="SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || (SELECT sum(tbalance) FROM pgbench_tellers) || ' ' ||
       (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || coalesce((SELECT sum(delta) FROM pgbench_history), 0)"
  if [ "$target" = proxy ]; then
    # One statement per sum: the proxy plans each table's SUM on its own.
    sums=""
    for s in "abalance pgbench_accounts" "tbalance pgbench_tellers" "bbalance pgbench_branches" "delta pgbench_history"; do
      v=$(q_proxy "SELECT sum(${s% *}) FROM ${s#* }" 2>&1) || v="error: $(tr '\n' ' ' <<<"$v")"
      sums="$sums ${v:-0}"   # no history rows: NULL
    done
    sums=${sums# }
  else
    sums=$(q_server bench_direct "$q" 2>&1) || sums="error: $(tr '\n' ' ' <<<"$sums")"
  fi
  hist=$(q_server "${dbOf[$target]}" "SELECT count(*) FROM pgbench_history" 2>&1) || hist="?"
  if [[ $sums =~ ^(-?[0-9]+)\ (-?[0-9]+)\ (-?[0-9]+)\ (-?[0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[4]}" ] \
    && [ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[4]}" ] && [ "${BASH_REMATCH[3]}" = "${BASH_REMATCH[4]}" ]; then
    checks+=("$target: ok, all four sums are ${BASH_REMATCH[4]} ($hist history rows)")
  else
    checks+=("$target: MISMATCH: sum(abalance) sum(tbalance) sum(bbalance) sum(delta) = $sums ($hist history rows)")
    check_fail=1
  fi
done
load_end=$(awk '{print $1, $2, $3}' /proc/loadavg)

# ---- report ----
median() { sort -n | awk '{a[NR] = $1} END {if (NR == 0) print "NA"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
# field F of the measured rounds of scenario S, mode M, target T with status ST
sel() { awk -F'\t' -v s="$1" -v m="$2" -v t="$3" -v st="$4" -v f="$5" '$1 == s && $2 == m && $3 == t && $4 == "round" && $6 == st {print $f}' "$results"; }
cell() { # TPS cell of S M T: the median, or failed: MESSAGE
  local ok n_fail med msg
  ok=$(sel "$1" "$2" "$3" ok 7 | wc -l)
  med=$(sel "$1" "$2" "$3" ok 7 | median)
  if [ "$ok" = 0 ]; then
    msg=$(awk -F'\t' -v s="$1" -v m="$2" -v t="$3" '$1 == s && $2 == m && $3 == t && $4 == "round" {print $6 ": " $9; exit}' "$results")
    echo "${msg:-no run}"
  else
    printf '%.0f' "$med"
  fi
}
notes() { # failed rounds, failed warm-ups, failed transactions of S M
  local s=$1 m=$2
  awk -F'\t' -v s="$s" -v m="$m" -v R="$ROUNDS" '
    $1 != s || $2 != m {next}
    $4 == "warmup" && $6 != "ok" {w[$3] = w[$3] (w[$3] ? "; " : "") $6 ": " $9}
    $4 == "round" && $6 != "ok" {nf[$3]++; if (!(($3) in fm)) fm[$3] = $6 ": " $9}
    $4 == "round" && $6 == "ok" && $8 + 0 > 0 {ft[$3] += $8}
    END {
      out = ""
      for (t in nf) out = out (out ? "; " : "") t ": " nf[t] " of " R " rounds " fm[t]
      for (t in w) out = out (out ? "; " : "") t " warm-up " w[t]
      for (t in ft) out = out (out ? "; " : "") t ": " ft[t] " failed transactions"
      print out
    }' "$results"
}

cpu=$(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | xargs)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
paillier_bits=$(sed -n 's/^[[:space:]]*DefaultBits = \([0-9]*\).*/\1/p' "$root/internal/schemes/hom/paillier.go" | head -1)

echo "## pgbench through the proxy (encrypted) vs directly (plaintext)"
echo
echo "- command: \`$invocation\` (took $(( $(date +%s) - started ))s)"
echo "- machine: $(nproc) cores ($cpu, $(uname -m)), $mem memory; load average $load_start at the start, $load_end at the end"
echo "- software: $("$bindir/postgres" --version), pgbench $("$PGBENCH" --version | awk '{print $3}'), $(go version | awk '{print $3}'), pgonion $commit; Paillier ${paillier_bits:-?} bits"
echo "- server: one throwaway cluster, fsync=off, synchronous_commit=off; both databases at scale $SCALE"
echo "- pgbench -i -s $SCALE: ${init_direct}s directly, ${init_proxy}s through the proxy ($init_proxy_detail)"
echo "- each run: \`pgbench -n [-S] -M MODE -c $CLIENTS -j $THREADS -T $SECS -r\`; median TPS (without connection time) over $ROUNDS rounds; $WARMUP s warm-up per scenario, mode and target first"
echo
echo "| scenario | mode | direct TPS | proxy TPS | ratio | notes |"
echo "|---|---|---|---|---|---|"
for scen in "${scenarios[@]}"; do
  for mode in "${modes[@]}"; do
    d=$(cell "$scen" "$mode" direct) p=$(cell "$scen" "$mode" proxy)
    ratio=NA
    [[ $d =~ ^[0-9]+$ && $p =~ ^[0-9]+$ && $d != 0 ]] && ratio=$(awk -v a="$(sel "$scen" "$mode" proxy ok 7 | median)" -v b="$(sel "$scen" "$mode" direct ok 7 | median)" 'BEGIN {printf "%.3f", a / b}')
    echo "| $scen | $mode | $d | $p | $ratio | $(notes "$scen" "$mode") |"
  done
done
echo
echo "TPS of each round (direct; proxy):"
for scen in "${scenarios[@]}"; do
  for mode in "${modes[@]}"; do
    per() { awk -F'\t' -v s="$scen" -v m="$mode" -v t="$1" '$1 == s && $2 == m && $3 == t && $4 == "round" {printf "%s%s", (n++ ? " " : ""), ($6 == "ok" ? sprintf("%.0f", $7) : $6)}' "$results"; }
    echo "- $scen $mode: $(per direct); $(per proxy)"
  done
done
echo
echo "pgbench's invariant sum(abalance) = sum(tbalance) = sum(bbalance) = sum(delta):"
for c in "${checks[@]}"; do echo "- $c"; done

if [ -s "$lat" ]; then
  echo
  echo "tpcb-like, median latency per statement (ms; pgbench -r, $CLIENTS clients):"
  echo
  hdr="| statement |" sep="|---|"
  for mode in "${modes[@]}"; do hdr="$hdr $mode direct | $mode proxy |"; sep="$sep---|---|"; done
  echo "$hdr"
  echo "$sep"
  awk -F'\t' '$1 == "tpcb-like" {print $5 "\t" $7}' "$lat" | sort -n -u -t$'\t' -k1,1 | while IFS=$'\t' read -r n text; do
    line="| \`${text//|/\\|}\` |"
    for mode in "${modes[@]}"; do
      for target in direct proxy; do
        v=$(awk -F'\t' -v m="$mode" -v t="$target" -v n="$n" '$1 == "tpcb-like" && $2 == m && $3 == t && $5 == n {print $6}' "$lat" | median)
        [ "$v" = NA ] || v=$(printf '%.3f' "$v")
        line="$line $v |"
      done
    done
    echo "$line"
  done
fi

echo
echo "Commands (PGPORT: the server, PROXYPORT: the proxy, both on 127.0.0.1):"
echo
echo '```sh'
echo "pgbench -i -s $SCALE -h 127.0.0.1 -p \$PGPORT -U postgres bench_direct"
echo "proxy keys init --keystore K --master-key-file M"
for col in $(printf '%s\n' "${!policy[@]}" | sort); do
  if [ "${policy[$col]}" = plain ]; then echo "proxy columns set $col --policy plain --backend \$DSN ..."
  else echo "proxy columns set $col --policy encrypted --capabilities ${policy[$col]} --backend \$DSN ..."; fi
done
echo "proxy serve --listen 127.0.0.1:\$PROXYPORT --auth trust --backend \$DSN ...   # DSN: postgres://postgres@127.0.0.1:\$PGPORT/bench_proxy"
echo "pgbench -i -s $SCALE -h 127.0.0.1 -p \$PROXYPORT -U postgres bench_proxy"
for scen in "${scenarios[@]}"; do
  s=""; [ "$scen" = select-only ] && s="-S "
  for mode in "${modes[@]}"; do
    echo "pgbench -n ${s}-M $mode -c $CLIENTS -j $THREADS -T $SECS -r -h 127.0.0.1 -p \$PGPORT -U postgres bench_direct"
    echo "pgbench -n ${s}-M $mode -c $CLIENTS -j $THREADS -T $SECS -r -h 127.0.0.1 -p \$PROXYPORT -U postgres bench_proxy"
  done
done
echo '```'

bad=$(awk -F'\t' '$6 != "ok"' "$results" | wc -l)
echo
echo "runs that failed or were skipped (warm-ups included): $bad of $(wc -l <"$results")"
[ "$bad" = 0 ] && [ "$check_fail" = 0 ]
