#!/usr/bin/env bash
# bench/peel-soak.sh: crash-safety soak of onion peeling. Runs the kill -9
# loop of TestPeelCrash (cmd/proxy/peel_crash_test.go) many times: start
# `proxy serve`, send a query that needs an onion peeled (Eq to DET or Ord
# to OPE, one UPDATE over the whole table), SIGKILL the proxy at a random
# moment, wait for the dead proxy's backends to end, and check that the peel
# was all or nothing (catalog layer and every cell agree), that every row
# still decrypts through a restarted proxy, and that rerunning the query
# finishes the peel and answers correctly. Prints where the kills landed
# (before, mid-peel, after) and exits non-zero on any failure.
#
# Usage: bench/peel-soak.sh [-n KILLS] [-r ROWS] [-s SEED] [-k]
#   -n KILLS  number of kill -9 iterations (default 100)
#   -r ROWS   rows per table (default 30000; more rows, longer peels)
#   -s SEED   random seed, to replay a failing run (default: time-based)
#   -k        keep the full test log (printed path) even on success
# Time: about 1.5 s per kill on a small machine (100 kills: ~3 minutes);
# bounded by go test -timeout (10 s per kill + 5 minutes, at most 60m).
# Needs: Go, PostgreSQL server binaries with pgcrypto (or PGTEST_DSN set to
# a superuser DSN; see internal/pgtest).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

KILLS=100 ROWS=30000 SEED="" KEEP=0
while getopts "n:r:s:kh" o; do
  case $o in
    n) KILLS=$OPTARG ;;
    r) ROWS=$OPTARG ;;
    s) SEED=$OPTARG ;;
    k) KEEP=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 2; }
for v in "$KILLS" "$ROWS"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "peel-soak: -n and -r take positive integers, got '$v'" >&2; exit 2; }
done
[ -z "$SEED" ] || [[ $SEED =~ ^[0-9]+$ ]] || { echo "peel-soak: -s takes a non-negative integer, got '$SEED'" >&2; exit 2; }
command -v go >/dev/null || { echo "peel-soak: go not found" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
timeout_min=$(( (KILLS * 10 + 300 + 59) / 60 ))
[ "$timeout_min" -le 60 ] || timeout_min=60
log=$(mktemp /tmp/pgonion-peel-soak.XXXXXX.log)

echo "peel-soak: $KILLS kills, $ROWS rows per table, timeout ${timeout_min}m, log $log" >&2
status=0
(
  cd "$root"
  export PGONION_PEEL_KILLS=$KILLS PGONION_PEEL_ROWS=$ROWS
  [ -z "$SEED" ] || export PGONION_PEEL_SEED=$SEED
  go test -count=1 -run '^TestPeelCrash$' -v -timeout "${timeout_min}m" ./cmd/proxy/
) >"$log" 2>&1 || status=$?

# The per-kill lines, then the summary.
grep -E 'PGONION_PEEL_SEED=|loaded crash_|calibration:|kill [0-9]+:|queries that peeled|peel crash:' "$log" | sed 's/^ *peel_crash_test.go:[0-9]*: //' || true
if [ "$status" -ne 0 ]; then
  echo "peel-soak: FAILED (exit $status); the end of the log:" >&2
  tail -n 60 "$log" >&2
  echo "peel-soak: full log in $log" >&2
  exit 1
fi
if [ "$KEEP" = 1 ]; then
  echo "peel-soak: full log in $log" >&2
else
  rm -f "$log"
fi
echo "peel-soak: OK" >&2
