# bench/lib/workdir.sh: the throwaway work directory, its cleanup and the
# small helpers the cluster-starting bench scripts share. Sourced, not run.
#
# bench_workdir NAME creates $work (/tmp/pgonion-NAME.XXXXXX, readable by
# the postgres user), sets asPG (the prefix that runs a command as the
# postgres user when we are root: initdb refuses root) and proxy_pid, and
# installs the EXIT trap: it stops the proxy ($proxy_pid), the cluster in
# $work/data ($bindir/pg_ctl), and removes $work unless KEEP_WORK is set.
# die, free_port and wait_ready need $bindir; messages name NAME.

bench_workdir() {
  BENCH_NAME=$1
  work=$(mktemp -d "/tmp/pgonion-$1.XXXXXX")
  chmod 755 "$work"
  asPG=()
  if [ "$(id -u)" = 0 ]; then asPG=(runuser -u postgres --); chown postgres "$work"; fi
  proxy_pid=""
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

bench_cleanup() {
  if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; fi
  timeout 60 "${asPG[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }

# free_port prints a free TCP port on loopback.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready PORT waits (30 s at most) for a server to answer on PORT.
wait_ready() {
  for _ in $(seq 300); do "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1" && return 0; sleep 0.1; done
  die "nothing answers on port $1"
}
