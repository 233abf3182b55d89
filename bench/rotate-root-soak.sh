#!/usr/bin/env bash
# bench/rotate-root-soak.sh: crash-safety soak of root key rotation. Runs
# the kill -9 loop of TestRotateRoot (cmd/proxy/rotateroot_test.go) many
# times: an application updates and inserts through `proxy serve`
# (mirrored on a plaintext copy) into two tables sharing a join group
# while `proxy keys rotate-root` runs and is killed with SIGKILL at random
# moments; after each kill every answer through the proxy must match the
# plaintext copy (a join may be refused, never answered wrongly, while
# the group is under two root keys); at the end only the newest root key
# is left in the key store, the catalog and every column are under it,
# and a proxy started afresh answers the same.
#
# Usage: bench/rotate-root-soak.sh [-n KILLS] [-r ROWS] [-s SEED] [-k]
#   -n KILLS  number of kill -9 iterations (default 100)
#   -r ROWS   rows of each table (default 300)
#   -s SEED   random seed, to replay a failing run (default: time-based)
#   -k        keep the full test log (printed path) even on success
# Time: about 4 s per kill on a small machine (100 kills: ~7 minutes);
# bounded by go test -timeout (10 s per kill + 5 minutes, at most 60m).
# Needs: Go and PostgreSQL server binaries (or PGTEST_DSN set to a
# superuser DSN; see internal/pgtest).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# shellcheck source=lib/kill-soak.sh
. "$(dirname "$0")/lib/kill-soak.sh"
kill_soak rotate-root-soak TestRotateRoot PGONION_ROOT 300 'a rotation took|kill [0-9]+:' "$@"
