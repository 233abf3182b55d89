#!/usr/bin/env bash
# bench/recrypt-soak.sh: crash-safety soak of online re-encryption. Runs
# the kill -9 loop of TestEncryptCrash (cmd/proxy/recrypt_crash_test.go)
# many times: an application updates and inserts through `proxy serve`
# (mirrored on a plaintext copy) while `proxy encrypt --yes` and `proxy
# decrypt` take turns on the table and are killed with SIGKILL at random
# moments; after each kill every row must read back through the proxy as
# the plaintext copy says and the catalog must verify; at the end the
# adoption finishes, pg_dump holds no plaintext, decryption brings it
# back, and the application never got an error. Prints where the kills
# landed and exits non-zero on any failure.
#
# Usage: bench/recrypt-soak.sh [-n KILLS] [-r ROWS] [-s SEED] [-k]
#   -n KILLS  number of kill -9 iterations (default 100)
#   -r ROWS   rows of the table (default 20000; more rows, longer rewrites)
#   -s SEED   random seed, to replay a failing run (default: time-based)
#   -k        keep the full test log (printed path) even on success
# Time: about 0.5 s per kill on a small machine (100 kills: ~1 minute);
# bounded by go test -timeout (10 s per kill + 5 minutes, at most 60m).
# Needs: Go and PostgreSQL server binaries (or PGTEST_DSN set to a
# superuser DSN; see internal/pgtest).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

KILLS=100 ROWS=20000 SEED="" KEEP=0
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
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "recrypt-soak: -n and -r take positive integers, got '$v'" >&2; exit 2; }
done
[ -z "$SEED" ] || [[ $SEED =~ ^[0-9]+$ ]] || { echo "recrypt-soak: -s takes a non-negative integer, got '$SEED'" >&2; exit 2; }
command -v go >/dev/null || { echo "recrypt-soak: go not found" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
timeout_min=$(( (KILLS * 10 + 300 + 59) / 60 ))
[ "$timeout_min" -le 60 ] || timeout_min=60
log=$(mktemp /tmp/pgonion-recrypt-soak.XXXXXX.log)

echo "recrypt-soak: $KILLS kills, $ROWS rows, timeout ${timeout_min}m, log $log" >&2
status=0
(
  cd "$root"
  export PGONION_RECRYPT_KILLS=$KILLS PGONION_RECRYPT_ROWS=$ROWS
  [ -z "$SEED" ] || export PGONION_RECRYPT_SEED=$SEED
  go test -count=1 -run '^TestEncryptCrash$' -v -timeout "${timeout_min}m" ./cmd/proxy/
) >"$log" 2>&1 || status=$?

grep -E 'PGONION_RECRYPT_SEED=|a full rewrite took|kill [0-9]+:|recrypt crash:' "$log" | sed 's/^ *recrypt_crash_test.go:[0-9]*: //' || true
if [ "$status" -ne 0 ]; then
  echo "recrypt-soak: FAILED (exit $status); the end of the log:" >&2
  tail -n 60 "$log" >&2
  echo "recrypt-soak: full log in $log" >&2
  exit 1
fi
if [ "$KEEP" = 1 ]; then
  echo "recrypt-soak: full log in $log" >&2
else
  rm -f "$log"
fi
echo "recrypt-soak: OK" >&2
