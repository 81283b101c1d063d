#!/usr/bin/env bash
# Runs every fuzz target in ./fuzz for the given time each (default 30s), one after
# another, and prints the executions each did and any crasher it found.
# FUZZPARALLEL=N limits each run to N workers (e.g. 1 on a shared machine);
# FUZZMINIMIZETIME (default 10s) caps minimizing each new input (go test's default,
# 60s, would eat most of a short run of the slower targets).
#
# A failed run is one of three things, told apart like this:
#   crasher   go test wrote a reproducer under fuzz/testdata/fuzz/<Target>/
#             (a file that was not there before the run): the target failed.
#   time-out  no reproducer, and the output has "context deadline exceeded": the
#             Go toolchain's own deadline race between -fuzztime and a worker
#             (seen on a loaded machine); not a finding. It is retried once;
#             a second time-out in a row fails the run.
#   error     anything else without a reproducer (build error, ...): fails.
# scripts/fuzz_test.go checks these decisions against a fake go command.
set -euo pipefail
export LC_ALL=C # ls, sort and comm agree on the order
t=${1:-30s}
cd "$(dirname "$0")/.."
targets=$(go test ./fuzz -list '^Fuzz' | grep '^Fuzz' || true)
[ -n "$targets" ] || { echo "no fuzz targets"; exit 0; }

# corpus lists the files of a target's corpus directory, one per line.
corpus() { ls -1 "fuzz/testdata/fuzz/$1" 2>/dev/null | sort || true; }

fail=0
for f in $targets; do
  for attempt in 1 2; do
    before=$(corpus "$f")
    rc=0
    out=$(go test ./fuzz -run '^$' -fuzz "^${f}\$" -fuzztime "$t" -fuzzminimizetime "${FUZZMINIMIZETIME:-10s}" ${FUZZPARALLEL:+-parallel="$FUZZPARALLEL"} 2>&1) || rc=$?
    execs=$(printf '%s\n' "$out" | grep -o 'execs: [0-9]*' | tail -1 || true)
    if [ "$rc" -eq 0 ] && ! printf '%s\n' "$out" | grep -q -- '--- FAIL'; then
      echo "$f: ok (${execs:-execs: ?})"
      break
    fi
    new=$(comm -13 <(printf '%s\n' "$before") <(corpus "$f") | sed '/^$/d')
    if [ -n "$new" ]; then
      echo "$f: CRASHER (reproducer: $(printf '%s\n' "$new" | sed "s|^|fuzz/testdata/fuzz/$f/|" | tr '\n' ' '))"
      printf '%s\n' "$out" | tail -30
      fail=1
      break
    fi
    if printf '%s\n' "$out" | grep -q 'context deadline exceeded'; then
      if [ "$attempt" -eq 1 ]; then
        echo "$f: toolchain time-out without a reproducer (context deadline exceeded), not a crasher; retrying once"
        continue
      fi
      echo "$f: FAILED: toolchain time-out again on the retry (no reproducer)"
      printf '%s\n' "$out" | tail -30
      fail=1
      break
    fi
    echo "$f: FAILED (exit $rc, no reproducer written)"
    printf '%s\n' "$out" | tail -30
    fail=1
    break
  done
done
exit $fail
