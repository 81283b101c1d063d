package tools

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/cleaner"
)

// TestVerifyBenchDataCompacted: data written by strata bench log through the
// segment layer verifies clean, and still does after the cleaner compacted it
// (offset gaps, tombstones, rebuilt indexes); dumplog then shows one record
// per key.
func TestVerifyBenchDataCompacted(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	dir := filepath.Join(t.TempDir(), "keys-0")
	if _, stderr, code := run(t, "bench", "log", "--dir", dir, "--records", "20000", "--batch-records", "100",
		"--record-size", "20", "--keys", "50", "--tombstones", "10", "--segment-bytes", "200000", "--keep", "--runs", "1"); code != 0 {
		t.Fatalf("bench log: exit %d: %s", code, stderr)
	}
	if stdout, _, code := run(t, "verify", dir); code != 0 {
		t.Fatalf("verify before compaction: exit %d\n%s", code, stdout)
	}
	if _, err := cleaner.CompactDir(dir, &cleaner.CompactOptions{DeleteRetentionMs: -1, FromStart: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatal(err)
	}
	stdout, _, code := run(t, "verify", "--json", dir)
	if code != 0 {
		t.Fatalf("verify after compaction: exit %d\n%s", code, stdout)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	stdout, _, code = run(t, append([]string{"dumplog", "--deep-iteration", "--print-data"}, files...)...)
	if code != 0 {
		t.Fatalf("dumplog: exit %d", code)
	}
	keys := map[string]int{}
	for _, l := range strings.Split(stdout, "\n") {
		if i := strings.Index(l, " key: "); strings.HasPrefix(l, "| ") && i > 0 {
			k := strings.Fields(l[i+len(" key: "):])[0]
			keys[k]++
		}
	}
	if len(keys) == 0 || len(keys) > 50 {
		t.Fatalf("%d keys after compaction", len(keys))
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s appears %d times after compaction", k, n)
		}
	}
}
