#!/usr/bin/env bash
# bench/recrypt-soak.sh: crash-safety soak of online re-encryption. Runs
# the kill -9 loop of TestEncryptCrash (cmd/proxy/recrypt_crash_test.go)
# many times: an application updates and inserts through `proxy serve`
# (mirrored on a plaintext copy) while `proxy encrypt --yes` and `proxy
# decrypt` take turns on the table and are killed with SIGKILL at random
# moments; after each kill every row must read back through the proxy as
# the plaintext copy says and the catalog must verify; at the end the
# adoption finishes, pg_dump holds no plaintext, decryption brings it
# back, and the application got no error but the switch window's 42703.
# Prints where the kills landed and exits non-zero on any failure.
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

# shellcheck source=lib/kill-soak.sh
. "$(dirname "$0")/lib/kill-soak.sh"
kill_soak recrypt-soak TestEncryptCrash PGONION_RECRYPT 20000 'a full rewrite took|kill [0-9]+:|recrypt crash:' "$@"
