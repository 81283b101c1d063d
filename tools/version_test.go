package tools

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: "strata --version", "-v" and "strata version" print the same
// line, with the link-time commit when the binary has no VCS stamp (as under
// go test).
func TestVersion(t *testing.T) {
	old := commit
	commit = "0123456789abcdef0123456789abcdef01234567"
	t.Cleanup(func() { commit = old })
	var lines []string
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"strata"}, args...), &stdout, &stderr); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		lines = append(lines, stdout.String())
	}
	if !strings.HasPrefix(lines[0], "strata version ") || !strings.Contains(lines[0], "(commit "+commit) {
		t.Errorf("--version printed %q", lines[0])
	}
	if lines[1] != lines[0] || lines[2] != lines[0] {
		t.Errorf("the three spellings differ: %q", lines)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"strata", "version", "extra"}, &stdout, &stderr); code != ExitUsage {
		t.Errorf("version extra: exit %d, want %d", code, ExitUsage)
	}
}

// TestVersionMakefileLdflags builds strata with the Makefile's link flags
// (GOFLAGS=-buildvcs=false, so only they can carry the commit) and checks
// that --version names the checkout's HEAD.
func TestVersionMakefileLdflags(t *testing.T) {
	for _, tool := range []string{"git", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	flags, err := exec.Command("make", "-s", "--no-print-directory", "-C", "..", "ldflags").Output()
	if err != nil {
		t.Fatalf("make ldflags: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "strata")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, ".")
	build.Dir = ".."
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("strata --version: %v", err)
	}
	if want := "(commit " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("strata --version printed %q, want it to contain %q", out, want)
	}
}
