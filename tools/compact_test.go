package tools

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// keysPerRecord counts, in dumplog --deep-iteration --print-data output, how
// often each key appears.
func keysPerRecord(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	stdout, _, code := run(t, append([]string{"dumplog", "--deep-iteration", "--print-data"}, files...)...)
	if code != 0 {
		t.Fatalf("dumplog: exit %d", code)
	}
	keys := map[string]int{}
	for _, l := range strings.Split(stdout, "\n") {
		if i := strings.Index(l, " key: "); strings.HasPrefix(l, "| ") && i > 0 {
			keys[strings.Fields(l[i+len(" key: "):])[0]]++
		}
	}
	return keys
}

// TestCompactEndToEnd: strata bench log data, damaged; verify 1, recover,
// verify 0, compact (the dry run, also with the flag after the path, changes
// nothing), verify 0, and dumplog shows one record per key.
func TestCompactEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	dir := filepath.Join(t.TempDir(), "keys-0")
	if _, stderr, code := run(t, "bench", "log", "--dir", dir, "--records", "20000", "--batch-records", "100",
		"--record-size", "20", "--keys", "50", "--tombstones", "10", "--segment-bytes", "200000", "--keep", "--runs", "1"); code != 0 {
		t.Fatalf("bench log: exit %d: %s", code, stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) < 3 {
		t.Fatalf("want several segments, got %d", len(logs))
	}
	appendTo(t, logs[len(logs)-1], []byte(strings.Repeat("\x00torn", 30)))
	if _, _, code := run(t, "verify", dir); code != ExitProblems {
		t.Fatalf("verify of damaged data: exit %d", code)
	}
	// compact does not cut data: a damaged partition is refused (dry or not),
	// pointing at recover, and left as it is.
	damaged := snapshotFiles(t, filepath.Dir(dir))
	for _, args := range [][]string{{"compact", dir, "--dry-run"}, {"compact", dir}} {
		if _, stderr, code := run(t, args...); code != ExitProblems || !strings.Contains(stderr, "strata recover") {
			t.Errorf("%v on damaged data: exit %d %q", args, code, stderr)
		}
	}
	if d := damaged.diff(snapshotFiles(t, filepath.Dir(dir))); d != "" {
		t.Fatalf("compact of a damaged partition changed files:\n%s", d)
	}
	if stdout, stderr, code := run(t, "recover", dir); code != ExitOK || !strings.Contains(stdout, "cut ") {
		t.Fatalf("recover: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, _, code := run(t, "verify", dir); code != ExitOK {
		t.Fatalf("verify after recover: exit %d\n%s", code, stdout)
	}
	dup := false
	for _, n := range keysPerRecord(t, dir) {
		dup = dup || n > 1
	}
	if !dup {
		t.Fatal("bench data has no duplicate keys")
	}

	root := filepath.Dir(dir)
	before := snapshotFiles(t, root)
	a, _, c1 := run(t, "compact", "--dry-run", "--delete-retention", "0s", "--from-start", dir)
	b, _, c2 := run(t, "compact", dir, "--dry-run", "--delete-retention", "0s", "--from-start")
	if d := before.diff(snapshotFiles(t, root)); d != "" {
		t.Fatalf("compact --dry-run changed files:\n%s", d)
	}
	if c1 != ExitOK || c1 != c2 || !strings.Contains(b, "would compact "+dir) {
		t.Fatalf("dry runs: %d %d\n%s\n%s", c1, c2, a, b)
	}

	stdout, stderr, code := run(t, "compact", "--json", dir, "--delete-retention", "0s", "--from-start")
	if code != ExitOK {
		t.Fatalf("compact: exit %d\n%s%s", code, stdout, stderr)
	}
	var res compactResult
	if err := json.Unmarshal([]byte(strings.Split(stdout, "\n")[0]), &res); err != nil || res.Dir != dir || res.RecordsOut >= res.RecordsIn || res.DryRun {
		t.Fatalf("compact --json: %v\n%s", err, stdout)
	}
	if stdout, _, code := run(t, "verify", dir); code != ExitOK {
		t.Fatalf("verify after compact: exit %d\n%s", code, stdout)
	}
	keys := keysPerRecord(t, dir)
	if len(keys) == 0 || len(keys) > 50 {
		t.Fatalf("%d keys after compaction", len(keys))
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s appears %d times after compaction", k, n)
		}
	}
}

// makeTopicsDataDir is a data directory with partitions users-0 (cleanup.policy
// compact,delete in strata-topics.json), orders-0 (delete) and sessions-0 (no
// config), each a copy of makePartition's: keys k0..k9 repeated 12 times.
func makeTopicsDataDir(t *testing.T) (root string) {
	t.Helper()
	p := makePartition(t)
	for _, n := range []string{"users-0", "sessions-0"} {
		if out, err := exec.Command("cp", "-a", p.dir, filepath.Join(p.root, n)).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	write(t, filepath.Join(p.root, topicsFile), []byte(`{"version":1,"topics":[
 {"name":"users","topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":1,"configs":{"cleanup.policy":"compact,delete"}},
 {"name":"orders","topic_id":"AAAAAAAAAAAAAAAAAAAAAg","partitions":1,"configs":{"cleanup.policy":"delete"}}]}`))
	return p.root
}

func compactedDirs(t *testing.T, stdout string) []string {
	t.Helper()
	var dirs []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r compactResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		if r.Type == "partition" {
			dirs = append(dirs, filepath.Base(r.Dir))
		}
	}
	return dirs
}

// TestCompactDataDirSelection: a data directory's compacted topics come from
// strata-topics.json, plus those --topic names; others stay untouched.
func TestCompactDataDirSelection(t *testing.T) {
	root := makeTopicsDataDir(t)
	before := snapshotFiles(t, root)
	stdout, _, code := run(t, "compact", "--dry-run", "--json", root)
	if d := before.diff(snapshotFiles(t, root)); d != "" {
		t.Fatalf("dry run changed files:\n%s", d)
	}
	if dirs := compactedDirs(t, stdout); code != ExitOK || strings.Join(dirs, ",") != "users-0" {
		t.Fatalf("dry run picked %v (exit %d)\n%s", dirs, code, stdout)
	}
	stdout2, _, _ := run(t, "compact", root, "--json", "--dry-run")
	if d := before.diff(snapshotFiles(t, root)); d != "" || len(compactedDirs(t, stdout2)) != 1 {
		t.Fatalf("flags after the path: changed files:\n%s\n%s", d, stdout2)
	}

	ordersBefore := snapshotFiles(t, filepath.Join(root, "orders-0"))
	stdout, stderr, code := run(t, "compact", "--json", "--delete-retention", "0s", root, "--topic", "sessions")
	if dirs := compactedDirs(t, stdout); code != ExitOK || strings.Join(dirs, ",") != "sessions-0,users-0" {
		t.Fatalf("compact picked %v (exit %d)\n%s%s", dirs, code, stdout, stderr)
	}
	if d := ordersBefore.diff(snapshotFiles(t, filepath.Join(root, "orders-0"))); d != "" {
		t.Errorf("orders-0 (cleanup.policy=delete) changed:\n%s", d)
	}
	for _, n := range []string{"users-0", "sessions-0"} {
		keys := keysPerRecord(t, filepath.Join(root, n))
		if len(keys) != 10 {
			t.Errorf("%s: %d keys after compaction, want 10: %v", n, len(keys), keys)
		}
		for k, c := range keys {
			if c != 1 {
				t.Errorf("%s: key %s appears %d times", n, k, c)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "cleaner-offset-checkpoint")); err != nil || !strings.Contains(string(b), "users 0 ") {
		t.Errorf("cleaner-offset-checkpoint: %v %q", err, b)
	}
	if stdout, _, code := run(t, "verify", root); code != ExitOK {
		t.Errorf("verify after compact: exit %d\n%s", code, stdout)
	}

	if _, stderr, code := run(t, "compact", root, "--topic", "nope"); code != ExitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown topic: exit %d %q", code, stderr)
	}
}

// TestCompactRefusals: a locked directory exits 2 naming it; a corrupt
// partition exits 1; usage errors exit 2.
func TestCompactRefusals(t *testing.T) {
	root := makeTopicsDataDir(t)
	unlock, err := vfs.LockDir(root)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotFiles(t, root)
	for _, args := range [][]string{{root}, {filepath.Join(root, "users-0")}, {root, "--dry-run"}, {"--dry-run", filepath.Join(root, "users-0")}} {
		target := args[0]
		if _, stderr, code := run(t, append([]string{"compact"}, args...)...); code != ExitUsage || !strings.Contains(stderr, "locked") || !strings.Contains(stderr, root) {
			t.Errorf("compact %v while locked: exit %d %q (%s)", args, code, stderr, target)
		}
	}
	if d := before.diff(snapshotFiles(t, root)); d != "" {
		t.Errorf("refused compaction changed files:\n%s", d)
	}
	unlock()

	log0 := filepath.Join(root, "users-0", seg0+".log")
	b, _ := os.ReadFile(log0)
	b[record.BatchHeaderSize+70] ^= 0x55 // inside the first batch's records: CRC mismatch
	write(t, log0, b)
	if _, stderr, code := run(t, "compact", "--from-start", root); code != ExitProblems || !strings.Contains(stderr, "users-0") {
		t.Errorf("corrupt partition: exit %d %q", code, stderr)
	}

	for _, args := range [][]string{
		{"compact"},
		{"compact", root, root},
		{"compact", "--topic", "users", filepath.Join(root, "users-0")},
		{"compact", "--delete-retention", "soon", root},
		{"compact", "--delete-retention", "-1h", root},
		{"compact", filepath.Join(root, "missing")},
	} {
		if _, stderr, code := run(t, args...); code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d %q", args, code, stderr)
		}
	}
	if stdout, _, code := run(t, "compact", "--help"); code != ExitOK || !strings.Contains(stdout, "Examples:") {
		t.Errorf("--help: exit %d", code)
	}
}

// tombstonesIn counts the tombstones dumplog --deep-iteration shows in dir.
func tombstonesIn(t *testing.T, dir string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	stdout, _, code := run(t, append([]string{"dumplog", "--deep-iteration"}, files...)...)
	if code != 0 {
		t.Fatalf("dumplog: exit %d", code)
	}
	return strings.Count(stdout, "valueSize: -1 ")
}

// TestCompactDeleteRetentionZero: --delete-retention 0s (and a topic's
// delete.retention.ms=0 in strata-topics.json) means 0, not the 24 h default:
// the first pass stamps the tombstones' horizon, the second removes them all,
// with no wait (the horizon is the first pass's clock).
func TestCompactDeleteRetentionZero(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"flag-0", "conf-0"} {
		if _, stderr, code := run(t, "bench", "log", "--dir", filepath.Join(root, n), "--records", "4000", "--batch-records", "50",
			"--record-size", "20", "--keys", "40", "--tombstones", "20", "--segment-bytes", "40000", "--keep", "--runs", "1"); code != 0 {
			t.Fatalf("bench log: exit %d: %s", code, stderr)
		}
	}
	write(t, filepath.Join(root, topicsFile), []byte(`{"version":1,"topics":[
 {"name":"conf","topic_id":"AAAAAAAAAAAAAAAAAAAAAQ","partitions":1,"configs":{"cleanup.policy":"compact","delete.retention.ms":"0"}}]}`))
	for _, c := range []struct {
		dir  string
		args []string
	}{
		{filepath.Join(root, "flag-0"), []string{"compact", "--json", "--from-start", "--delete-retention", "0s", filepath.Join(root, "flag-0")}},
		{filepath.Join(root, "conf-0"), []string{"compact", "--json", "--from-start", root}},
	} {
		if tombstonesIn(t, c.dir) == 0 {
			t.Fatalf("%s: bench data without tombstones", c.dir)
		}
		var removed []int64
		for pass := 0; pass < 2; pass++ {
			stdout, stderr, code := run(t, c.args...)
			var res compactResult
			if err := json.Unmarshal([]byte(strings.Split(stdout, "\n")[0]), &res); code != ExitOK || err != nil {
				t.Fatalf("%v: exit %d %v\n%s%s", c.args, code, err, stdout, stderr)
			}
			if res.DeleteRetentionMs != 0 {
				t.Fatalf("%v: delete_retention_ms %d", c.args, res.DeleteRetentionMs)
			}
			removed = append(removed, res.TombstonesRemoved)
		}
		if n := tombstonesIn(t, c.dir); n != 0 || removed[0] != 0 || removed[1] == 0 {
			t.Errorf("%v: %d tombstones left; removed %v by the two passes", c.args, n, removed)
		}
		if stdout, _, code := run(t, "verify", c.dir); code != ExitOK {
			t.Errorf("verify: exit %d\n%s", code, stdout)
		}
	}
}
