// Package scripts holds the tests of the shell scripts next to this file.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeGo stands in for the go command fuzz.sh runs: "-list" names FuzzA and
// FuzzB; a fuzz run of target T plays the next outcome of $FAKE_T (comma
// separated, default ok) and counts its calls in $FAKE_STATE/T.
const fakeGo = `#!/usr/bin/env bash
set -eu
case "$*" in
*" -list "*) printf 'FuzzA\nFuzzB\nok  \tgithub.com/stratalog/strata/fuzz\t0.010s\n'; exit 0 ;;
esac
target=$(printf '%s\n' "$@" | sed -n 's/^\^\(Fuzz[A-Za-z]*\)\$$/\1/p')
n=$(( $(cat "$FAKE_STATE/$target" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$FAKE_STATE/$target"
var="FAKE_$target"
outcome=$(printf '%s' "${!var:-ok}" | cut -d, -f"$n")
crash() {
  mkdir -p "fuzz/testdata/fuzz/$target"
  printf 'go test fuzz v1\n[]byte("boom")\n' > "fuzz/testdata/fuzz/$target/0123abcd$n"
  echo "--- FAIL: $target (0.20s)"
  echo "    --- FAIL: $target (0.00s)"
  echo "        panic: boom"
  echo "    Failing input written to testdata/fuzz/$target/0123abcd$n"
}
case "${outcome:-ok}" in
ok) echo "fuzz: elapsed: 3s, execs: 4242 (1414/sec), new interesting: 0 (total: 9)"; echo PASS; echo "ok  	github.com/stratalog/strata/fuzz	3.1s" ;;
timeout) echo "fuzz: elapsed: 3s, execs: 100 (33/sec), new interesting: 0 (total: 9)"; echo "--- FAIL: $target (3.02s)"; echo "    context deadline exceeded"; echo FAIL; exit 1 ;;
crash) crash; echo FAIL; exit 1 ;;
crash-deadline) crash; echo "    context deadline exceeded"; echo FAIL; exit 1 ;;
error) echo "# github.com/stratalog/strata/fuzz"; echo "./x_test.go:1:1: syntax error"; echo FAIL; exit 1 ;;
esac
`

// runFuzzScript runs a copy of fuzz.sh in a scratch tree with the fake go
// first in PATH and the given outcomes per target.
func runFuzzScript(t *testing.T, outcomes map[string]string) (out string, code int, calls map[string]int, root string) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{"scripts", "bin", "state", "fuzz/testdata/fuzz/FuzzA"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An existing seed must not count as a new reproducer.
	if err := os.WriteFile(filepath.Join(root, "fuzz/testdata/fuzz/FuzzA/seed1"), []byte("go test fuzz v1\n[]byte(\"\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("fuzz.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "scripts", "fuzz.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "fuzz.sh"), "3s")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "bin")+":"+os.Getenv("PATH"), "FAKE_STATE="+filepath.Join(root, "state"))
	for k, v := range outcomes {
		cmd.Env = append(cmd.Env, "FAKE_"+k+"="+v)
	}
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	calls = map[string]int{}
	for _, f := range []string{"FuzzA", "FuzzB"} {
		if s, err := os.ReadFile(filepath.Join(root, "state", f)); err == nil {
			calls[f], _ = strconv.Atoi(strings.TrimSpace(string(s)))
		}
	}
	return string(b), code, calls, root
}

// TestFuzzScriptDecisions: fuzz.sh tells a crasher (a reproducer file
// appeared) from the toolchain's deadline race (no file, "context deadline
// exceeded"), retries only the latter and only once, and fails on anything
// else.
func TestFuzzScriptDecisions(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct {
		name     string
		outcomes map[string]string
		code     int
		calls    int // fuzz runs of FuzzA
		want     []string
		not      []string
	}{
		{"all ok", nil, 0, 1, []string{"FuzzA: ok (execs: 4242)", "FuzzB: ok (execs: 4242)"}, []string{"CRASHER", "FAILED"}},
		{"time-out then ok", map[string]string{"FuzzA": "timeout,ok"}, 0, 2,
			[]string{"FuzzA: toolchain time-out without a reproducer", "retrying once", "FuzzA: ok", "FuzzB: ok"}, []string{"CRASHER", "FAILED"}},
		{"time-out twice", map[string]string{"FuzzA": "timeout,timeout,ok"}, 1, 2,
			[]string{"FuzzA: FAILED: toolchain time-out again", "FuzzB: ok"}, []string{"CRASHER"}},
		{"crasher", map[string]string{"FuzzA": "crash,ok"}, 1, 1,
			[]string{"FuzzA: CRASHER (reproducer: fuzz/testdata/fuzz/FuzzA/0123abcd1", "panic: boom", "FuzzB: ok"}, []string{"retrying", "seed1"}},
		{"crasher with a deadline message", map[string]string{"FuzzA": "crash-deadline,ok"}, 1, 1,
			[]string{"FuzzA: CRASHER"}, []string{"retrying"}},
		{"crasher in a new corpus dir", map[string]string{"FuzzB": "crash,ok"}, 1, 1,
			[]string{"FuzzA: ok", "FuzzB: CRASHER (reproducer: fuzz/testdata/fuzz/FuzzB/0123abcd1"}, []string{"retrying"}},
		{"build error", map[string]string{"FuzzA": "error,ok"}, 1, 1,
			[]string{"FuzzA: FAILED (exit 1, no reproducer written)", "syntax error"}, []string{"CRASHER", "retrying"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code, calls, _ := runFuzzScript(t, tc.outcomes)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			if calls["FuzzA"] != tc.calls {
				t.Errorf("FuzzA ran %d times, want %d\n%s", calls["FuzzA"], tc.calls, out)
			}
			if calls["FuzzB"] < 1 {
				t.Errorf("FuzzB did not run after FuzzA\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("output has %q\n%s", n, out)
				}
			}
		})
	}
}
