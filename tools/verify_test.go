package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stratalog/strata/record"
)

// testPartition is a healthy data directory with one partition, orders-0,
// of two segments: batches of 10 records, an index and time index entry per
// batch after the first of each segment, a leader-epoch-checkpoint and a
// recovery-point-offset-checkpoint.
type testPartition struct {
	root, dir string
	logs      []string // segment .log paths
	sizes     []int64  // their sizes
	batchPos  [][]int  // batch start positions per segment
	logEnd    int64
}

const (
	tpBatches = 6 // per segment
	tpRecords = 10
	tpTs      = 1700000300000
)

func makePartition(t *testing.T) *testPartition {
	t.Helper()
	root := t.TempDir()
	p := &testPartition{root: root, dir: filepath.Join(root, "orders-0")}
	if err := os.Mkdir(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	for s := 0; s < 2; s++ {
		base := off
		var log, ix, tix []byte
		var starts []int
		for b := 0; b < tpBatches; b++ {
			opts := record.DefaultBatchOptions()
			opts.BaseOffset, opts.LeaderEpoch = off, 4
			if b%2 == 1 {
				opts.Codec = record.CodecLZ4
			}
			var recs []record.Record
			for i := 0; i < tpRecords; i++ {
				recs = append(recs, record.Record{Timestamp: tpTs + off + int64(i), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(strings.Repeat("v", 40))})
			}
			pos := len(log)
			starts = append(starts, pos)
			log = must(record.AppendBatch(log, opts, recs))
			off += tpRecords
			if b > 0 {
				ix = ixEntryBytes(ix, base, off-1, pos)
				tix = tixEntryBytes(tix, base, tpTs+off-1, off-1)
			}
		}
		name := fmt.Sprintf("%020d", base)
		write(t, filepath.Join(p.dir, name+".log"), log)
		write(t, filepath.Join(p.dir, name+".index"), ix)
		write(t, filepath.Join(p.dir, name+".timeindex"), tix)
		p.logs = append(p.logs, filepath.Join(p.dir, name+".log"))
		p.sizes = append(p.sizes, int64(len(log)))
		p.batchPos = append(p.batchPos, starts)
	}
	p.logEnd = off
	write(t, filepath.Join(p.dir, "leader-epoch-checkpoint"), []byte("0\n1\n4 0\n"))
	write(t, filepath.Join(root, "recovery-point-offset-checkpoint"), []byte(fmt.Sprintf("0\n1\norders 0 %d\n", off)))
	return p
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// jsonProblems runs verify --json on path and returns its problems.
func jsonProblems(t *testing.T, path string) ([]map[string]any, int) {
	t.Helper()
	stdout, stderr, code := run(t, "verify", "--json", path)
	var probs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q (%v)\nstderr: %s", line, err, stderr)
		}
		if m["type"] == "problem" {
			probs = append(probs, m)
		}
	}
	return probs, code
}

func TestVerifyClean(t *testing.T) {
	p := makePartition(t)
	for _, path := range []string{p.root, p.dir, p.logs[1], p.root + string(filepath.Separator)} {
		stdout, stderr, code := run(t, "verify", path)
		if code != ExitOK || stderr != "" || !strings.Contains(stdout, "no problems") {
			t.Errorf("verify %s: exit %d\n%s%s", path, code, stdout, stderr)
		}
	}
	stdout, _, _ := run(t, "verify", "--json", p.root)
	if !strings.Contains(stdout, `"type":"summary","partitions":1,"segments":2,"batches":12,`) {
		t.Errorf("summary:\n%s", stdout)
	}
	// Read-only: nothing changed, nothing created.
	before := snapshotDir(t, p.root)
	run(t, "verify", p.root)
	if after := snapshotDir(t, p.root); after != before {
		t.Errorf("verify changed the directory:\n%s\n%s", before, after)
	}
}

// snapshotDir lists every file with its size and modification time.
func snapshotDir(t *testing.T, root string) string {
	var b strings.Builder
	filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", path, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// TestVerifyDamage: one fixture per kind of damage; each must exit 1 and
// report the right kind at the right byte position of the right file.
func TestVerifyDamage(t *testing.T) {
	type want struct {
		file string // base name
		kind string
		pos  int64
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, p *testPartition) want
	}{
		{"torn batch header", func(t *testing.T, p *testPartition) want {
			b, _ := os.ReadFile(p.logs[1])
			appendTo(t, p.logs[1], b[:10])
			return want{filepath.Base(p.logs[1]), kindTornEntry, p.sizes[1]}
		}},
		{"torn body", func(t *testing.T, p *testPartition) want {
			b, _ := os.ReadFile(p.logs[1])
			appendTo(t, p.logs[1], b[:40])
			return want{filepath.Base(p.logs[1]), kindTornEntry, p.sizes[1]}
		}},
		{"torn body, cut short", func(t *testing.T, p *testPartition) want {
			last := p.batchPos[1][tpBatches-1]
			if err := os.Truncate(p.logs[1], p.sizes[1]-5); err != nil {
				t.Fatal(err)
			}
			return want{filepath.Base(p.logs[1]), kindTornEntry, int64(last)}
		}},
		{"garbage after the last batch", func(t *testing.T, p *testPartition) want {
			appendTo(t, p.logs[1], []byte(strings.Repeat("\xab garbage", 20)))
			return want{filepath.Base(p.logs[1]), kindCorruptEntry, p.sizes[1]}
		}},
		{"zeroed tail", func(t *testing.T, p *testPartition) want {
			appendTo(t, p.logs[1], make([]byte, 4096))
			return want{filepath.Base(p.logs[1]), kindZeroedTail, p.sizes[1]}
		}},
		{"crc mismatch", func(t *testing.T, p *testPartition) want {
			b, _ := os.ReadFile(p.logs[0])
			pos := p.batchPos[0][2]
			b[pos+record.BatchHeaderSize+3] ^= 0x55
			write(t, p.logs[0], b)
			return want{filepath.Base(p.logs[0]), kindCRC, int64(pos)}
		}},
		{"deleted index", func(t *testing.T, p *testPartition) want {
			ix := strings.TrimSuffix(p.logs[0], ".log") + ".index"
			os.Remove(ix)
			return want{filepath.Base(ix), kindIndexMissing, 0}
		}},
		{"zero-filled index", func(t *testing.T, p *testPartition) want {
			ix := strings.TrimSuffix(p.logs[1], ".log") + ".index"
			fi, _ := os.Stat(ix)
			write(t, ix, make([]byte, fi.Size()+80))
			return want{filepath.Base(ix), kindIndexZeroPad, 8}
		}},
		{"index past the log end", func(t *testing.T, p *testPartition) want {
			ix := strings.TrimSuffix(p.logs[1], ".log") + ".index"
			fi, _ := os.Stat(ix)
			appendTo(t, ix, ixEntryBytes(nil, 60, p.logEnd+5, int(p.sizes[1])+100))
			return want{filepath.Base(ix), kindIndexPastEnd, fi.Size()}
		}},
		{"index position inside a batch", func(t *testing.T, p *testPartition) want {
			ix := strings.TrimSuffix(p.logs[0], ".log") + ".index"
			b, _ := os.ReadFile(ix)
			b[8+7]++ // entry 1's position, one byte into its batch
			write(t, ix, b)
			return want{filepath.Base(ix), kindIndexPosition, 8}
		}},
		{"time index timestamp from the future", func(t *testing.T, p *testPartition) want {
			tix := strings.TrimSuffix(p.logs[0], ".log") + ".timeindex"
			b, _ := os.ReadFile(tix)
			b[12+5] = 0xff // entry 1's timestamp, much larger
			write(t, tix, b)
			return want{filepath.Base(tix), kindIndexTimestamp, 12}
		}},
		{"checkpoint with garbage", func(t *testing.T, p *testPartition) want {
			write(t, filepath.Join(p.root, "recovery-point-offset-checkpoint"), []byte("0\n1\n\x00\x13garbage!\n"))
			return want{"recovery-point-offset-checkpoint", kindCheckpoint, 4}
		}},
		{"checkpoint past the log end", func(t *testing.T, p *testPartition) want {
			write(t, filepath.Join(p.root, "recovery-point-offset-checkpoint"), []byte(fmt.Sprintf("0\n2\nother 0 5\norders 0 %d\n", p.logEnd+1)))
			return want{"recovery-point-offset-checkpoint", kindCheckpoint, int64(len("0\n2\nother 0 5\n"))}
		}},
		{"leader epoch past the log end", func(t *testing.T, p *testPartition) want {
			write(t, filepath.Join(p.dir, "leader-epoch-checkpoint"), []byte(fmt.Sprintf("0\n2\n4 0\n5 %d\n", p.logEnd+10)))
			return want{"leader-epoch-checkpoint", kindCheckpoint, int64(len("0\n2\n4 0\n"))}
		}},
		{"leftover swap", func(t *testing.T, p *testPartition) want {
			sw := p.logs[1] + ".swap"
			write(t, sw, []byte("x"))
			return want{filepath.Base(sw), kindLeftover, 0}
		}},
		{"producer snapshot with a bad CRC", func(t *testing.T, p *testPartition) want {
			snap := filepath.Join(p.dir, fmt.Sprintf("%020d.snapshot", p.logEnd))
			b := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0} // version 1, CRC 0 (wrong: CRC-32C of the count is not 0), no producers
			write(t, snap, b)
			return want{filepath.Base(snap), kindSnapshot, 2}
		}},
		{"offsets going back", func(t *testing.T, p *testPartition) want {
			b, _ := os.ReadFile(p.logs[1])
			pos := p.batchPos[1][3]
			record.Batch(b[pos:]).SetBaseOffset(3) // not covered by the CRC
			write(t, p.logs[1], b)
			return want{filepath.Base(p.logs[1]), kindOffsetOrder, int64(pos)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := makePartition(t)
			w := tc.damage(t, p)
			probs, code := jsonProblems(t, p.root)
			if code != ExitProblems {
				t.Errorf("exit %d, want 1", code)
			}
			found := false
			for _, pr := range probs {
				if filepath.Base(pr["file"].(string)) == w.file && pr["kind"] == w.kind && pr["position"] == float64(w.pos) {
					found = true
				}
			}
			if !found {
				t.Errorf("want a %s problem in %s at position %d; got %v", w.kind, w.file, w.pos, probs)
			}
			// The human output names the same position.
			stdout, _, code := run(t, "verify", p.dir, filepath.Join(p.root, "recovery-point-offset-checkpoint"))
			if code != ExitProblems && w.file != "recovery-point-offset-checkpoint" {
				t.Errorf("verify of the partition dir: exit %d", code)
			}
			if !strings.Contains(stdout, "PROBLEM "+w.kind) && w.file != "recovery-point-offset-checkpoint" {
				t.Errorf("human output lacks the problem:\n%s", stdout)
			}
		})
	}
}

// TestVerifyCompactedGapsAreNotProblems: gaps between batches (and inside
// them) are counted, not reported.
func TestVerifyCompactedGapsAreNotProblems(t *testing.T) {
	stdout, _, code := run(t, "verify", "--json", filepath.Join("testdata", "compacted"))
	if code != ExitOK || !strings.Contains(stdout, `"problems":0`) {
		t.Errorf("exit %d\n%s", code, stdout)
	}
	dir := filepath.Join(t.TempDir(), "t-0")
	os.Mkdir(dir, 0o755)
	var log []byte
	opts := record.DefaultBatchOptions()
	for _, base := range []int64{0, 20, 21, 40} {
		opts.BaseOffset = base
		log = must(record.AppendBatch(log, opts, []record.Record{{Timestamp: tpTs, Value: []byte("v")}}))
	}
	write(t, filepath.Join(dir, seg0+".log"), log)
	write(t, filepath.Join(dir, seg0+".index"), nil)
	write(t, filepath.Join(dir, seg0+".timeindex"), nil)
	stdout, _, code = run(t, "verify", "--json", dir)
	if code != ExitOK || !strings.Contains(stdout, `"offset_gaps":2,"problems":0`) {
		t.Errorf("exit %d\n%s", code, stdout)
	}
}

func TestVerifyUsage(t *testing.T) {
	if _, _, code := run(t, "verify"); code != ExitUsage {
		t.Errorf("no path: exit %d", code)
	}
	if _, stderr, code := run(t, "verify", filepath.Join(t.TempDir(), "nope")); code != ExitUsage || stderr == "" {
		t.Errorf("missing path: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := run(t, "verify", "--no-such-flag", "."); code != ExitUsage {
		t.Errorf("unknown flag: exit %d", code)
	}
	stdout, _, code := run(t, "verify", "--help")
	if code != ExitOK || !strings.Contains(stdout, "Examples:") {
		t.Errorf("--help: exit %d\n%s", code, stdout)
	}
	stdout, _, code = run(t, "dumplog", "--help")
	if code != ExitOK || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "--print-data-log") {
		t.Errorf("dumplog --help: exit %d\n%s", code, stdout)
	}
	if _, _, code := run(t, "dumplog"); code != ExitUsage {
		t.Errorf("dumplog without files: exit %d", code)
	}
	if _, _, code := run(t, "dumplog", "--data-encoding", "rot13", "x.log"); code != ExitUsage {
		t.Errorf("bad encoding: exit %d", code)
	}
	if _, _, code := run(t, "dumplog", filepath.Join(t.TempDir(), seg0+".log")); code != ExitUsage {
		t.Errorf("missing file: exit %d", code)
	}
}

// TestVerifyFlagsAfterPath: --json after the path behaves as before it.
func TestVerifyFlagsAfterPath(t *testing.T) {
	p := makePartition(t)
	appendTo(t, p.logs[1], make([]byte, 100))
	strip := func(s string) string { // the timing fields differ run to run
		i := strings.Index(s, `"seconds"`)
		if i < 0 {
			return s
		}
		return s[:i]
	}
	before, _, c1 := run(t, "verify", "--json", p.root)
	after, _, c2 := run(t, "verify", p.root, "--json")
	if strip(before) != strip(after) || c1 != c2 || !strings.HasPrefix(after, "{") {
		t.Errorf("flags after the path differ:\n%s\n%s", before, after)
	}
	_, _, c1 = run(t, "verify", "--max-message-size", "100", p.dir)
	after, _, c2 = run(t, "verify", p.dir, "--max-message-size", "100")
	if c1 != ExitProblems || c1 != c2 || !strings.Contains(after, "exceeds the maximum 100") {
		t.Errorf("--max-message-size after the path: %d %d\n%s", c1, c2, after)
	}
}

// TestNoProgressWhenNotATerminal: stderr stays empty on a clean run when it
// is not a terminal (a buffer, a pipe).
func TestNoProgressWhenNotATerminal(t *testing.T) {
	p := makePartition(t)
	_, stderr, _ := run(t, "verify", p.root)
	if stderr != "" {
		t.Errorf("stderr: %q", stderr)
	}
	if newProgress(os.Stderr, 1, "x") != nil && os.Getenv("CI") != "" {
		t.Log("stderr is a terminal here")
	}
}

// TestBinaryExitCodes builds strata and runs it as a subprocess: real exit
// statuses, stdout and stderr kept apart.
func TestBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "strata")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, "github.com/stratalog/strata")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p := makePartition(t)
	status := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), so.String(), se.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, so.String(), se.String()
	}
	if code, so, se := status("verify", p.root); code != 0 || se != "" || !strings.Contains(so, "no problems") {
		t.Errorf("clean verify: %d\n%s%s", code, so, se)
	}
	if code, so, _ := status("dumplog", p.logs[0], "--deep-iteration"); code != 0 || !strings.Contains(so, "| offset: 59") {
		t.Errorf("dumplog: %d", code)
	}
	appendTo(t, p.logs[1], []byte("torn"))
	if code, so, se := status("verify", p.root); code != 1 || !strings.Contains(so, "PROBLEM torn_entry") || !strings.Contains(se, "problem found") {
		t.Errorf("damaged verify: %d\n%s%s", code, so, se)
	}
	if code, _, _ := status("dumplog", p.logs[1]); code != 1 {
		t.Errorf("dumplog of a torn log: exit %d, want 1", code)
	}
	if code, _, se := status("verify", filepath.Join(p.root, "missing")); code != 2 || se == "" {
		t.Errorf("missing path: %d %q", code, se)
	}
	if code, _, _ := status("dumplog", "--bogus", p.logs[0]); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
}
