#!/usr/bin/env bash
# Runs every fuzz target in ./fuzz for the given time each (default 30s), one after
# another, and prints the executions each did and any crasher it found.
# FUZZPARALLEL=N limits each run to N workers (e.g. 1 on a shared machine);
# FUZZMINIMIZETIME (default 10s) caps minimizing each new input (go test's default,
# 60s, would eat most of a short run of the slower targets).
set -euo pipefail
t=${1:-30s}
cd "$(dirname "$0")/.."
targets=$(go test ./fuzz -list '^Fuzz' | grep '^Fuzz' || true)
[ -n "$targets" ] || { echo "no fuzz targets"; exit 0; }
fail=0
for f in $targets; do
  out=$(go test ./fuzz -run '^$' -fuzz "^${f}\$" -fuzztime "$t" -fuzzminimizetime "${FUZZMINIMIZETIME:-10s}" ${FUZZPARALLEL:+-parallel="$FUZZPARALLEL"} 2>&1) || fail=1
  execs=$(printf '%s\n' "$out" | grep -o 'execs: [0-9]*' | tail -1 || true)
  if printf '%s\n' "$out" | grep -q -- '--- FAIL'; then
    echo "$f: CRASHER"; printf '%s\n' "$out" | tail -30
  else
    echo "$f: ok (${execs:-execs: ?})"
  fi
done
exit $fail
