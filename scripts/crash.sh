#!/usr/bin/env bash
# Runs the crash-consistency harness, then the I/O error harness at every
# failure point (the unit tests under -race try every third), and prints how
# many crash states and failure points they explored; on failure prints the
# whole output.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
go test -race -count=1 -timeout 20m -run '^TestCrashConsistency$' -v ./segment >"$out" 2>&1 &&
	STRATA_FAULT_STRIDE=1 go test -count=1 -timeout 20m -run '^TestIOErrorConsistency$' -v ./segment >>"$out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat "$out"; else grep -E '^crash harness:|^I/O error harness:|^ok' "$out"; fi
rm -f "$out"
exit $rc
