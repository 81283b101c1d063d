package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/recovery"
)

// fileState is every file under a root with its contents and mtime.
type fileState map[string]string

func snapshotFiles(t *testing.T, root string) fileState {
	t.Helper()
	st := fileState{}
	filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			st[path] = fmt.Sprintf("dir %d", fi.ModTime().UnixNano())
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		st[path] = fmt.Sprintf("%d %x %d", len(b), sum[:8], fi.ModTime().UnixNano())
		return nil
	})
	return st
}

func (a fileState) diff(b fileState) string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

// readLogs returns the contents of every .log file under root.
func readLogs(t *testing.T, root string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
	more, _ := filepath.Glob(filepath.Join(root, "*.log"))
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[f] = b
	}
	return m
}

// recoverJSON runs recover --json and decodes its line.
func recoverJSON(t *testing.T, args ...string) (map[string]any, string, int) {
	t.Helper()
	stdout, stderr, code := run(t, append([]string{"recover", "--json"}, args...)...)
	var m map[string]any
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &m) != nil {
		t.Fatalf("recover --json %v: exit %d, not one JSON line:\n%s\n%s", args, code, stdout, stderr)
	}
	return m, stderr, code
}

type recoverCase struct {
	name string
	// damage breaks the partition; mustCut says recovery drops bytes.
	damage  func(t *testing.T, p *testPartition)
	mustCut bool
}

var recoverCases = []recoverCase{
	{"torn tail", func(t *testing.T, p *testPartition) {
		b, _ := os.ReadFile(p.logs[1])
		appendTo(t, p.logs[1], b[:40])
	}, true},
	{"garbage tail", func(t *testing.T, p *testPartition) {
		appendTo(t, p.logs[1], []byte(strings.Repeat("\xab garbage", 20)))
	}, true},
	{"zeroed tail", func(t *testing.T, p *testPartition) {
		appendTo(t, p.logs[1], make([]byte, 4096))
	}, true},
	{"cut short", func(t *testing.T, p *testPartition) {
		if err := os.Truncate(p.logs[1], p.sizes[1]-5); err != nil {
			t.Fatal(err)
		}
	}, true},
	{"deleted index", func(t *testing.T, p *testPartition) {
		os.Remove(strings.TrimSuffix(p.logs[0], ".log") + ".index")
	}, false},
	{"leftover deleted segment", func(t *testing.T, p *testPartition) {
		write(t, filepath.Join(p.dir, "00000000000000000003.log.deleted"), []byte("old segment"))
	}, false},
	{"corrupt middle segment", func(t *testing.T, p *testPartition) {
		b, _ := os.ReadFile(p.logs[0])
		b[p.batchPos[0][2]+record.BatchHeaderSize+3] ^= 0x55
		write(t, p.logs[0], b)
		// The broker trusts segments below the recovery point: put it in the
		// first segment so start-up rescans it.
		write(t, filepath.Join(p.root, "recovery-point-offset-checkpoint"), []byte("0\n1\norders 0 15\n"))
	}, true},
}

func recoverCaseNamed(t *testing.T, name string) recoverCase {
	for _, c := range recoverCases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no case %q", name)
	return recoverCase{}
}

// TestRecoverRepairs: for every kind of damage, on a partition directory and
// on a data directory: verify finds it, --dry-run changes nothing and says
// what a real run then does, the real run saves exactly the cut bytes in the
// backup, verify is clean afterwards and a second run has nothing to do.
func TestRecoverRepairs(t *testing.T) {
	for _, tc := range recoverCases {
		for _, mode := range []string{"partition", "data_dir"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				p := makePartition(t)
				tc.damage(t, p)
				target := p.root
				if mode == "partition" {
					target = p.dir
				}
				if _, _, code := run(t, "verify", target); code != ExitProblems {
					t.Fatalf("verify of the damaged %s: exit %d, want 1", mode, code)
				}
				before := snapshotFiles(t, p.root)
				logs := readLogs(t, p.root)

				dry, _, code := recoverJSON(t, "--dry-run", target)
				if code != ExitOK || dry["dry_run"] != true || dry["mode"] != mode {
					t.Fatalf("dry run: exit %d %v", code, dry)
				}
				dryText, _, _ := run(t, "recover", "--dry-run", target)
				if d := before.diff(snapshotFiles(t, p.root)); d != "" {
					t.Fatalf("--dry-run changed files:\n%s", d)
				}
				if dry["changed"] != true {
					t.Fatalf("dry run found nothing to do:\n%s", dryText)
				}
				if tc.mustCut && !strings.Contains(dryText, "would cut ") {
					t.Errorf("dry run text names no cut:\n%s", dryText)
				}

				backup := filepath.Join(t.TempDir(), "backup")
				res, stderr, code := recoverJSON(t, "--backup", backup, target)
				if code != ExitOK || res["consistent"] != true || res["changed"] != true {
					t.Fatalf("recover: exit %d %s\n%v", code, stderr, res)
				}
				// The real run did what the dry run announced.
				if !sameCuts(dry, res) {
					t.Errorf("dry run and recovery differ:\n%v\n%v", dry["partitions"], res["partitions"])
				}
				if stdout, _, code := run(t, "verify", target); code != ExitOK {
					t.Errorf("verify after recover: exit %d\n%s", code, stdout)
				}
				checkBackup(t, backup, logs, res, tc.mustCut)

				again, _, code := run(t, "recover", target)
				if code != ExitOK || !strings.Contains(again, "nothing to do") {
					t.Errorf("second run: exit %d\n%s", code, again)
				}
				res2, _, _ := recoverJSON(t, target)
				if res2["changed"] != false {
					t.Errorf("third run changed something: %v", res2)
				}
			})
		}
	}
}

// sameCuts compares the truncations of two recover --json reports.
func sameCuts(a, b map[string]any) bool {
	strip := func(m map[string]any) string {
		var cuts []any
		for _, p := range m["partitions"].([]any) {
			pm := p.(map[string]any)
			cuts = append(cuts, pm["truncations"], pm["segments_removed"], pm["indexes_rebuilt"], pm["log_end_offset"])
		}
		b, _ := json.Marshal(cuts)
		return string(b)
	}
	return strip(a) == strip(b)
}

// checkBackup: MANIFEST.json lists files holding exactly the bytes cut from
// the damaged logs (their tails from the cut position), with right hashes.
func checkBackup(t *testing.T, dir string, logs map[string][]byte, res map[string]any, mustCut bool) {
	t.Helper()
	totals := res["totals"].(map[string]any)
	truncated := int64(totals["bytes_truncated"].(float64))
	mb, err := os.ReadFile(filepath.Join(dir, "MANIFEST.json"))
	if truncated == 0 {
		if err == nil {
			t.Errorf("nothing cut, yet a backup was written")
		}
		if mustCut {
			t.Errorf("nothing was cut")
		}
		return
	}
	if err != nil {
		t.Fatalf("no manifest: %v", err)
	}
	var m recovery.BackupManifest
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	var saved int64
	for _, e := range m.Files {
		b, err := os.ReadFile(e.Backup)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != e.Length || hex.EncodeToString(sum[:]) != e.SHA256 {
			t.Errorf("%s: length or sha256 does not match the manifest", e.Backup)
		}
		if want := fmt.Sprintf("%s@%d", filepath.Base(e.Original), e.Position); filepath.Base(e.Backup) != want {
			t.Errorf("backup file %s, want %s", e.Backup, want)
		}
		if e.Kind == "index" {
			continue
		}
		orig, ok := logs[e.Original]
		if !ok {
			t.Fatalf("backup of %s, which was not a log before", e.Original)
		}
		if !bytes.Equal(orig[e.Position:], b) {
			t.Errorf("%s: backup differs from the damaged tail from byte %d", e.Original, e.Position)
		}
		now, err := os.Stat(e.Original)
		switch e.Kind {
		case "tail":
			if err != nil || now.Size() != e.Position {
				t.Errorf("%s: not cut at %d after recovery (%v)", e.Original, e.Position, err)
			}
		case "segment":
			if err == nil {
				t.Errorf("%s: removed segment still there", e.Original)
			}
		}
		saved += e.Length
	}
	if saved != truncated {
		t.Errorf("backup holds %d log bytes, recovery truncated %d", saved, truncated)
	}
}

// TestRecoverBackupRestore: the bytes in the backup put back with the steps
// --help gives restore the damaged files byte for byte.
func TestRecoverBackupRestore(t *testing.T) {
	p := makePartition(t)
	recoverCaseNamed(t, "corrupt middle segment").damage(t, p) // a tail cut and a removed segment
	logs := readLogs(t, p.root)
	backup := filepath.Join(t.TempDir(), "b")
	if _, stderr, code := run(t, "recover", p.dir, "--backup", backup); code != ExitOK {
		t.Fatalf("exit %d %s", code, stderr)
	}
	var m recovery.BackupManifest
	mb, _ := os.ReadFile(filepath.Join(backup, "MANIFEST.json"))
	if err := json.Unmarshal(mb, &m); err != nil || len(m.Files) < 2 {
		t.Fatalf("manifest: %v %s", err, mb)
	}
	for _, e := range m.Files { // dd seek=POS conv=notrunc, or cp for whole files
		b, _ := os.ReadFile(e.Backup)
		f, err := os.OpenFile(e.Original, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(b, e.Position); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for f, b := range logs {
		now, _ := os.ReadFile(f)
		if !bytes.Equal(now, b) {
			t.Errorf("%s not restored", f)
		}
	}
	if stdout, _, _ := run(t, "recover", "--help"); !strings.Contains(stdout, "conv=notrunc") || !strings.Contains(stdout, "MANIFEST.json") {
		t.Errorf("--help lacks the restore steps:\n%s", stdout)
	}
}

// TestRecoverFlagsAfterPath: "PATH --dry-run" is a dry run (writes nothing)
// and prints what "--dry-run PATH" prints; "PATH --json" is JSON.
func TestRecoverFlagsAfterPath(t *testing.T) {
	durations := regexp.MustCompile(`"duration_ns":\d+`)
	for _, sub := range []string{"dir", "root"} {
		p := makePartition(t)
		appendTo(t, p.logs[1], make([]byte, 300))
		target := p.root
		if sub == "dir" {
			target = p.dir
		}
		before := snapshotFiles(t, p.root)
		a, _, c1 := run(t, "recover", "--dry-run", target)
		b, _, c2 := run(t, "recover", target, "--dry-run")
		if d := before.diff(snapshotFiles(t, p.root)); d != "" {
			t.Fatalf("%s --dry-run wrote:\n%s", target, d)
		}
		if a != b || c1 != c2 || !strings.Contains(b, "would cut") {
			t.Errorf("flags after the path differ:\n%s\n%s", a, b)
		}
		a, _, _ = run(t, "recover", "--json", "--dry-run", target)
		b, _, _ = run(t, "recover", target, "--dry-run", "--json")
		if durations.ReplaceAllString(a, "") != durations.ReplaceAllString(b, "") || !strings.HasPrefix(b, "{") {
			t.Errorf("--json after the path differs:\n%s\n%s", a, b)
		}
		backup := filepath.Join(t.TempDir(), "bk")
		if _, stderr, code := run(t, "recover", target, "--backup", backup); code != ExitOK {
			t.Fatalf("exit %d %s", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(backup, "MANIFEST.json")); err != nil {
			t.Errorf("--backup after the path ignored: %v", err)
		}
	}
}

// TestRecoverLocked: a directory locked by a running broker is refused with
// exit 2 naming it, for the data directory and for a partition inside it; a
// dry run still reads it.
func TestRecoverLocked(t *testing.T) {
	p := makePartition(t)
	appendTo(t, p.logs[1], []byte("torn"))
	unlock, err := vfs.LockDir(p.root)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	before := snapshotFiles(t, p.root)
	for _, target := range []string{p.root, p.dir} {
		_, stderr, code := run(t, "recover", target)
		if code != ExitUsage || !strings.Contains(stderr, "locked") || !strings.Contains(stderr, p.root) {
			t.Errorf("recover %s while locked: exit %d, stderr %q", target, code, stderr)
		}
	}
	if d := before.diff(snapshotFiles(t, p.root)); d != "" {
		t.Errorf("refused recovery changed files:\n%s", d)
	}
	if _, stderr, code := run(t, "recover", "--dry-run", p.root); code != ExitOK || !strings.Contains(stderr, "in use by a running broker") {
		t.Errorf("dry run while locked: exit %d %q", code, stderr)
	}
	if d := before.diff(snapshotFiles(t, p.root)); d != "" {
		t.Errorf("dry run changed files:\n%s", d)
	}
}

func TestRecoverUsage(t *testing.T) {
	p := makePartition(t)
	for _, args := range [][]string{
		{"recover"},
		{"recover", p.root, p.dir},
		{"recover", "--dry-run", "--backup", t.TempDir(), p.root},
		{"recover", "--backup", filepath.Join(p.root, "bk"), p.root},
		{"recover", p.logs[0]},
		{"recover", filepath.Join(p.root, "missing")},
		{"recover", "--bogus", p.root},
	} {
		if _, stderr, code := run(t, args...); code != ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	stdout, _, code := run(t, "recover", "--help")
	if code != ExitOK || !strings.Contains(stdout, "Examples:") {
		t.Errorf("--help: exit %d", code)
	}
}

// TestRecoverPartitionSideFiles: recovering a partition directory on its own
// lowers its entries in the parent's checkpoints to the new log end (a log
// start above it would make the broker drop every segment), drops later
// leader epochs and removes (after backing up) later producer snapshots, so
// the whole data directory verifies clean.
func TestRecoverPartitionSideFiles(t *testing.T) {
	p := makePartition(t)
	b, _ := os.ReadFile(p.logs[0])
	b[p.batchPos[0][2]+record.BatchHeaderSize+3] ^= 0x55 // cut at offset 20
	write(t, p.logs[0], b)
	write(t, filepath.Join(p.root, "log-start-offset-checkpoint"), []byte("0\n2\norders 0 30\nother 0 7\n"))
	write(t, filepath.Join(p.dir, "leader-epoch-checkpoint"), []byte("0\n2\n4 0\n5 60\n"))
	snap := filepath.Join(p.dir, fmt.Sprintf("%020d.snapshot", 100))
	write(t, snap, []byte("snapshot bytes"))

	before := snapshotFiles(t, p.root)
	dry, _, code := run(t, "recover", p.dir, "--dry-run")
	if d := before.diff(snapshotFiles(t, p.root)); d != "" || code != ExitOK {
		t.Fatalf("dry run: exit %d, changed:\n%s", code, d)
	}
	for _, want := range []string{"would trim " + filepath.Join(p.root, "recovery-point-offset-checkpoint") + ": orders-0 offset 120 lowered to the log end 20",
		"log-start-offset-checkpoint: orders-0 offset 30 lowered", "1 leader epochs", "producer snapshot above the log end 20"} {
		if !strings.Contains(dry, want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry)
		}
	}
	backup := filepath.Join(t.TempDir(), "bk")
	out, stderr, code := run(t, "recover", p.dir, "--backup", backup)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	// segment.Open removes the snapshot: its report says so, as the plan did.
	if !strings.Contains(out, "producer snapshot above the log end 20") {
		t.Errorf("the report lacks the snapshot removed:\n%s", out)
	}
	if stdout, _, code := run(t, "verify", p.root); code != ExitOK {
		t.Errorf("verify of the data directory after recovering the partition: exit %d\n%s", code, stdout)
	}
	got, _ := os.ReadFile(filepath.Join(p.root, "log-start-offset-checkpoint"))
	if string(got) != "0\n2\nother 0 7\norders 0 20\n" && string(got) != "0\n2\norders 0 20\nother 0 7\n" {
		t.Errorf("log-start-offset-checkpoint: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(p.dir, "leader-epoch-checkpoint")); string(got) != "0\n1\n4 0\n" {
		t.Errorf("leader-epoch-checkpoint: %q", got)
	}
	if _, err := os.Stat(snap); err == nil {
		t.Errorf("snapshot above the log end still there")
	}
	if saved, err := os.ReadFile(filepath.Join(backup, "orders-0", filepath.Base(snap)+"@0")); err != nil || string(saved) != "snapshot bytes" {
		t.Errorf("snapshot backup: %v %q", err, saved)
	}
	if again, _, _ := run(t, "recover", p.dir); !strings.Contains(again, "nothing to do") {
		t.Errorf("second run:\n%s", again)
	}
}

// TestRecoverRefusesDirWithoutPartitions: a directory that holds no
// partition directories (an empty one, a mistyped parent) is refused with
// exit 2 and left exactly as it was: no .lock, checkpoints or clean-shutdown
// marker appear in it.
func TestRecoverRefusesDirWithoutPartitions(t *testing.T) {
	empty := t.TempDir()
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("not a log\n"), 0o644)
	os.Mkdir(filepath.Join(other, "backups"), 0o755)
	for _, dir := range []string{empty, other} {
		for _, args := range [][]string{{"recover", dir}, {"recover", "--dry-run", dir}, {"recover", "--json", dir}} {
			before := snapshotFiles(t, dir)
			stdout, stderr, code := run(t, args...)
			if code != ExitUsage {
				t.Errorf("%v: exit %d, want %d\n%s%s", args, code, ExitUsage, stdout, stderr)
			}
			if !strings.Contains(stderr, "no partition directories") {
				t.Errorf("%v: stderr %q", args, stderr)
			}
			if d := before.diff(snapshotFiles(t, dir)); d != "" {
				t.Errorf("%v changed the directory:\n%s", args, d)
			}
		}
	}
}
