#!/usr/bin/env bash
# Anchors for the scheme micro-benchmarks: times pyope and python-paillier
# (phe, gmpy2) in a throwaway virtualenv, runs our Go benchmarks (one core),
# and prints a Markdown table ours | anchor | ratio.
#
#   bash bench/anchors/run.sh
#
# Needs python3 with venv and pip access to PyPI; nothing is installed
# outside a temporary directory, which is removed at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check phe gmpy2 pyope
echo "anchors: timing pyope and phe ..." >&2
"$tmp/venv/bin/python" "$here/anchors.py" measure > "$tmp/anchors.json"

echo "anchors: running Go benchmarks (-cpu 1) ..." >&2
(cd "$root" && go test -run '^$' -cpu 1 -benchtime 1s \
	-bench '^(BenchmarkOPEEncrypt32|BenchmarkOPEDecrypt32|BenchmarkOPEEncrypt64)$' ./internal/schemes/ope) > "$tmp/go.txt"
(cd "$root" && go test -run '^$' -cpu 1 -benchtime 1s \
	-bench '^(BenchmarkPaillierEncryptWarm|BenchmarkPaillierRandomizer|BenchmarkPaillierDecrypt|BenchmarkPaillierAdd)$' ./internal/schemes/hom) >> "$tmp/go.txt"

"$tmp/venv/bin/python" "$here/anchors.py" table "$tmp/go.txt" "$tmp/anchors.json"
