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

# shellcheck source=lib/kill-soak.sh
. "$(dirname "$0")/lib/kill-soak.sh"
kill_soak peel-soak TestPeelCrash PGONION_PEEL 30000 'loaded crash_|calibration:|kill [0-9]+:|queries that peeled|peel crash:' "$@"
