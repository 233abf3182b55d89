# bench/lib/kill-soak.sh: the loop shared by the kill -9 soak scripts
# (peel-soak.sh, recrypt-soak.sh, rotate-root-soak.sh): parse -n KILLS -r ROWS -s SEED -k, run
# one crash test of cmd/proxy with that many kills, print its per-kill
# lines and summary, exit non-zero on failure. Sourced, not run.
#
# kill_soak NAME TEST ENV DEFAULT_ROWS LINES "$@"
#   NAME          the script's name in messages
#   TEST          the test function (run as ^TEST$ in ./cmd/proxy)
#   ENV           the prefix of its variables: ${ENV}_KILLS, _ROWS, _SEED
#   DEFAULT_ROWS  rows when -r is not given
#   LINES         grep -E pattern of the log lines worth printing
kill_soak() {
  local name=$1 test=$2 env=$3 rows=$4 lines=$5
  shift 5
  local kills=100 seed="" keep=0 o OPTIND=1
  while getopts "n:r:s:kh" o; do
    case $o in
      n) kills=$OPTARG ;;
      r) rows=$OPTARG ;;
      s) seed=$OPTARG ;;
      k) keep=1 ;;
      h) usage; exit 0 ;;
      *) usage >&2; exit 2 ;;
    esac
  done
  shift $((OPTIND - 1))
  [ $# -eq 0 ] || { usage >&2; exit 2; }
  local v
  for v in "$kills" "$rows"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$name: -n and -r take positive integers, got '$v'" >&2; exit 2; }
  done
  [ -z "$seed" ] || [[ $seed =~ ^[0-9]+$ ]] || { echo "$name: -s takes a non-negative integer, got '$seed'" >&2; exit 2; }
  command -v go >/dev/null || { echo "$name: go not found" >&2; exit 1; }

  local root timeout_min log status=0
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  timeout_min=$(( (kills * 10 + 300 + 59) / 60 ))
  [ "$timeout_min" -le 60 ] || timeout_min=60
  log=$(mktemp "/tmp/pgonion-$name.XXXXXX.log")
  echo "$name: $kills kills, $rows rows, timeout ${timeout_min}m, log $log" >&2
  (
    cd "$root"
    export "${env}_KILLS=$kills" "${env}_ROWS=$rows"
    [ -z "$seed" ] || export "${env}_SEED=$seed"
    go test -count=1 -run "^$test\$" -v -timeout "${timeout_min}m" ./cmd/proxy/
  ) >"$log" 2>&1 || status=$?

  grep -E "${env}_SEED=|$lines" "$log" | sed 's/^ *[a-z_]*_test.go:[0-9]*: //' || true
  if [ "$status" -ne 0 ]; then
    echo "$name: FAILED (exit $status); the end of the log:" >&2
    tail -n 60 "$log" >&2
    echo "$name: full log in $log" >&2
    exit 1
  fi
  if [ "$keep" = 1 ]; then
    echo "$name: full log in $log" >&2
  else
    rm -f "$log"
  fi
  echo "$name: OK" >&2
}
