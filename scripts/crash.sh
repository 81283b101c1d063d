#!/usr/bin/env bash
# Runs the crash-consistency harness and prints how many crash states it explored;
# on failure prints its whole output.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
go test -race -count=1 -timeout 20m -run '^TestCrashConsistency$' -v ./segment >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat "$out"; else grep -E '^crash harness:|^ok' "$out"; fi
rm -f "$out"
exit $rc
