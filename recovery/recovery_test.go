package recovery

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// dirState maps every file below dir to a hash of its content.
func dirState(t testing.TB, fsys vfs.FS, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	var walk func(string)
	walk = func(d string) {
		names, err := fsys.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := filepath.Join(d, n)
			st, err := fsys.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if st.IsDir() {
				walk(p)
				continue
			}
			out[p] = sha256.Sum256(readFile(t, fsys, p))
		}
	}
	walk(dir)
	return out
}

// recoverCase builds a clean data directory with one partition t-0 of 30
// batches over several segments, lets damage break it, then checks that
// Inspect predicts exactly what OpenDataDir then does without touching a file,
// calls check on the report, and finally verifies the result in full and that
// a second, full recovery changes nothing.
type recoverCase struct {
	fsys   vfs.FS
	dir    string
	pdir   string
	end    int64    // log end offset before the damage
	logs   []string // .log files before the damage
	before []batchRange
}

func newCase(t *testing.T) *recoverCase {
	t.Helper()
	c := &recoverCase{fsys: vfs.OS, dir: t.TempDir()}
	c.pdir = filepath.Join(c.dir, "t-0")
	c.end = buildDataDir(t, c.fsys, c.dir, []string{"t-0"}, 30)["t-0"]
	c.logs = logFiles(t, c.fsys, c.pdir)
	if len(c.logs) < 3 {
		t.Fatalf("want at least 3 segments, have %d", len(c.logs))
	}
	c.before = verifyPartition(t, c.fsys, c.pdir)
	return c
}

func (c *recoverCase) open(t *testing.T, opts *Options) (*PartitionReport, *Report) {
	t.Helper()
	if opts == nil {
		opts = testOpts(c.fsys)
	}
	st0 := dirState(t, c.fsys, c.dir)
	irep, err := Inspect(c.dir, opts)
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if st1 := dirState(t, c.fsys, c.dir); !reflect.DeepEqual(st0, st1) {
		t.Fatal("Inspect changed files")
	}
	d, rep, err := OpenDataDir(c.dir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	if _, err := c.fsys.Stat(filepath.Join(c.dir, CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker still there after open: %v", err)
	}
	p, ip := onePartition(t, rep), onePartition(t, irep)
	if ip.LogEndOffset != p.LogEndOffset || ip.BytesTruncated != p.BytesTruncated || ip.IndexesRebuilt != p.IndexesRebuilt ||
		ip.SegmentsRemoved != p.SegmentsRemoved || !reflect.DeepEqual(ip.Truncations, p.Truncations) ||
		!reflect.DeepEqual(ip.TempFilesRemoved, p.TempFilesRemoved) || !reflect.DeepEqual(ip.SwapsCompleted, p.SwapsCompleted) ||
		!reflect.DeepEqual(ip.SideFilesTrimmed, p.SideFilesTrimmed) || irep.CleanShutdown != rep.CleanShutdown {
		t.Fatalf("Inspect predicted\n%+v\nOpenDataDir did\n%+v", *ip, *p)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return p, rep
}

// finish verifies the recovered partition and that a second recovery with a
// full scan changes nothing; it returns the batches.
func (c *recoverCase) finish(t *testing.T) []batchRange {
	t.Helper()
	got := verifyPartition(t, c.fsys, c.pdir)
	crashMarker(t, c.fsys, c.dir)
	if err := c.fsys.Remove(filepath.Join(c.dir, checkpoint.RecoveryPointFile)); err != nil {
		t.Fatal(err)
	}
	d, rep, err := OpenDataDir(c.dir, testOpts(c.fsys))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed() || rep.Totals.SegmentsScanned != len(logFiles(t, c.fsys, c.pdir)) {
		t.Fatalf("second recovery: %+v", rep.Totals)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return got
}

func wantCut(t *testing.T, p *PartitionReport, i int, file string, pos, first, bytes int64) {
	t.Helper()
	if len(p.Truncations) <= i {
		t.Fatalf("no truncation %d: %+v", i, p.Truncations)
	}
	c := p.Truncations[i]
	if c.File != file || c.Position != pos || c.FirstOffset != first || c.Bytes != bytes {
		t.Fatalf("truncation %d = %+v, want %s at %d, first offset %d, %d bytes", i, c, file, pos, first, bytes)
	}
}

// tailCase appends tail to the last .log after an unclean shutdown and checks
// that exactly those bytes are cut.
func tailCase(t *testing.T, tail func(c *recoverCase) []byte) {
	c := newCase(t)
	crashMarker(t, c.fsys, c.dir)
	last := c.logs[len(c.logs)-1]
	old := fileSize(t, c.fsys, last)
	extra := tail(c)
	if extra != nil {
		appendFile(t, c.fsys, last, extra)
	}
	grown := fileSize(t, c.fsys, last) - old
	p, rep := c.open(t, nil)
	if rep.CleanShutdown {
		t.Fatal("marker reported present")
	}
	if len(p.Truncations) != 1 || p.BytesTruncated != grown || p.SegmentsRemoved != 0 || p.LogEndOffset != c.end {
		t.Fatalf("report %+v", *p)
	}
	wantCut(t, p, 0, last, old, c.end, grown)
	if sz := fileSize(t, c.fsys, last); sz != old {
		t.Fatalf("%s is %d bytes, want %d", last, sz, old)
	}
	if got := c.finish(t); !slices.Equal(got, c.before) {
		t.Fatalf("batches changed: %v, want %v", got, c.before)
	}
}

func TestTornBatchHeader(t *testing.T) {
	tailCase(t, func(c *recoverCase) []byte {
		b := batch(t, 99, 3, 60)
		record.Batch(b).SetBaseOffset(c.end)
		return b[:30]
	})
}

func TestTornBatchBody(t *testing.T) {
	tailCase(t, func(c *recoverCase) []byte {
		b := batch(t, 99, 3, 60)
		record.Batch(b).SetBaseOffset(c.end)
		return b[:len(b)-10]
	})
}

func TestGarbageAfterLastBatch(t *testing.T) {
	tailCase(t, func(c *recoverCase) []byte {
		g := make([]byte, 100)
		for i := range g {
			g[i] = byte(i*131 + 7)
		}
		return g
	})
}

func TestZeroedTail(t *testing.T) {
	tailCase(t, func(c *recoverCase) []byte {
		// The size grew, the data never reached the disk.
		last := c.logs[len(c.logs)-1]
		if err := os.Truncate(last, fileSize(t, c.fsys, last)+4096); err != nil {
			t.Fatal(err)
		}
		return nil
	})
}

// indexCase damages the first segment's offset index (below the recovery
// point) and checks that it is rebuilt byte for byte, nothing else changing.
func indexCase(t *testing.T, clean bool, damage func(c *recoverCase, idx string)) {
	c := newCase(t)
	if !clean {
		crashMarker(t, c.fsys, c.dir)
	}
	idx := strings.TrimSuffix(c.logs[0], segment.LogSuffix) + segment.IndexSuffix
	orig := readFile(t, c.fsys, idx)
	if len(orig) == 0 {
		t.Fatal("first segment has an empty index")
	}
	damage(c, idx)
	p, rep := c.open(t, nil)
	if rep.CleanShutdown != clean {
		t.Fatalf("clean shutdown %v", rep.CleanShutdown)
	}
	if p.IndexesRebuilt != 1 || p.BytesTruncated != 0 || len(p.Truncations) != 0 || p.LogEndOffset != c.end {
		t.Fatalf("report %+v", *p)
	}
	if got := readFile(t, c.fsys, idx); !slices.Equal(got, orig) {
		t.Fatalf("rebuilt index differs: %x, want %x", got, orig)
	}
	if got := c.finish(t); !slices.Equal(got, c.before) {
		t.Fatal("batches changed")
	}
}

func TestDeletedIndex(t *testing.T) {
	for _, clean := range []bool{true, false} {
		indexCase(t, clean, func(c *recoverCase, idx string) {
			if err := os.Remove(idx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestZeroFilledIndex(t *testing.T) {
	indexCase(t, true, func(c *recoverCase, idx string) {
		writeFile(t, c.fsys, idx, make([]byte, len(readFile(t, c.fsys, idx))))
	})
}

func TestIndexPastLogEnd(t *testing.T) {
	indexCase(t, true, func(c *recoverCase, idx string) {
		b := readFile(t, c.fsys, idx)
		binary.BigEndian.PutUint32(b[len(b)-4:], uint32(fileSize(t, c.fsys, c.logs[0])+1000))
		writeFile(t, c.fsys, idx, b)
	})
}

func TestIndexTornLength(t *testing.T) {
	indexCase(t, true, func(c *recoverCase, idx string) {
		b := readFile(t, c.fsys, idx)
		writeFile(t, c.fsys, idx, b[:len(b)-3])
	})
}

// A recovery point below the truth makes recovery scan from the segment that
// holds it, and so find a corruption a trusting load would miss; everything
// after the first corruption goes.
func TestStaleRecoveryPoint(t *testing.T) {
	c := newCase(t)
	crashMarker(t, c.fsys, c.dir)
	base1, _, _ := segment.ParseFileName(filepath.Base(c.logs[1]))
	if err := checkpoint.WriteOffsets(c.fsys, filepath.Join(c.dir, checkpoint.RecoveryPointFile),
		map[checkpoint.TopicPartition]int64{{Topic: "t", Partition: 0}: base1 + 1}); err != nil {
		t.Fatal(err)
	}
	old := fileSize(t, c.fsys, c.logs[1])
	appendFile(t, c.fsys, c.logs[1], make([]byte, 50))
	p, _ := c.open(t, nil)
	if p.SegmentsScanned != 1 || p.SegmentsRemoved != len(c.logs)-2 || len(p.Truncations) != len(c.logs)-1 {
		t.Fatalf("report %+v", *p)
	}
	base2, _, _ := segment.ParseFileName(filepath.Base(c.logs[2]))
	wantCut(t, p, 0, c.logs[1], old, base2, 50)
	wantCut(t, p, 1, c.logs[2], 0, base2, fileSize(t, vfs.OS, c.logs[1])*0+p.Truncations[1].Bytes)
	if p.Truncations[1].EndOffset <= base2 {
		t.Fatalf("removed segment's offset range not reported: %+v", p.Truncations[1])
	}
	if p.LogEndOffset != base2 {
		t.Fatalf("log end %d, want %d", p.LogEndOffset, base2)
	}
	got := c.finish(t)
	var want []batchRange
	for _, b := range c.before {
		if b.base < base2 {
			want = append(want, b)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
}

// A recovery point of 0 (partition missing from the checkpoint) scans all.
func TestMissingFromCheckpointScansAll(t *testing.T) {
	c := newCase(t)
	crashMarker(t, c.fsys, c.dir)
	if err := checkpoint.WriteOffsets(c.fsys, filepath.Join(c.dir, checkpoint.RecoveryPointFile),
		map[checkpoint.TopicPartition]int64{{Topic: "other", Partition: 0}: 5}); err != nil {
		t.Fatal(err)
	}
	p, _ := c.open(t, nil)
	if p.SegmentsScanned != len(c.logs) || p.RecoveryPoint != 0 {
		t.Fatalf("report %+v", *p)
	}
	c.finish(t)
}

func TestGarbageCheckpoint(t *testing.T) {
	c := newCase(t)
	crashMarker(t, c.fsys, c.dir)
	cp := filepath.Join(c.dir, checkpoint.RecoveryPointFile)
	writeFile(t, c.fsys, cp, []byte("0\n1\nt 0 12x\n"))
	var logs logCapture
	opts := testOpts(c.fsys)
	opts.Logger = logs.logger()
	p, rep := c.open(t, opts)
	if len(rep.CheckpointErrors) != 1 || !strings.Contains(rep.CheckpointErrors[0], cp) {
		t.Fatalf("checkpoint errors %v", rep.CheckpointErrors)
	}
	if !logs.has("level=ERROR") || !logs.has("unreadable checkpoint") || !logs.has(cp) {
		t.Fatalf("no clear error logged:\n%s", logs.String())
	}
	if p.SegmentsScanned != len(c.logs) || p.RecoveryPoint != 0 {
		t.Fatalf("not a full scan: %+v", *p)
	}
	c.finish(t)
}

// TestGarbageCheckpointAfterCleanShutdown: garbage in the recovery-point
// checkpoint of a cleanly shut down directory makes every partition scanned in
// full (the ERROR line said so and then segments_scanned was 0), and the log
// line quotes only a short, escaped prefix of the garbage. Garbage in the
// log-start checkpoint alone scans nothing and says what it does instead.
func TestGarbageCheckpointAfterCleanShutdown(t *testing.T) {
	c := newCase(t)
	cp := filepath.Join(c.dir, checkpoint.RecoveryPointFile)
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i*31 + 7)
	}
	writeFile(t, c.fsys, cp, junk)
	var logs logCapture
	opts := testOpts(c.fsys)
	opts.Logger = logs.logger()
	p, rep := c.open(t, opts)
	if !rep.CleanShutdown || !rep.FullScan || len(rep.CheckpointErrors) != 1 {
		t.Fatalf("report: clean %v, full scan %v, checkpoint errors %v", rep.CleanShutdown, rep.FullScan, rep.CheckpointErrors)
	}
	if p.SegmentsScanned != len(c.logs) || p.BatchesScanned != len(c.before) {
		t.Fatalf("not a full scan: %d of %d segments, %d of %d batches", p.SegmentsScanned, len(c.logs), p.BatchesScanned, len(c.before))
	}
	if !logs.has("level=ERROR") || !logs.has("every partition is scanned in full") || !logs.has(cp) {
		t.Fatalf("no clear error logged:\n%s", logs.String())
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "unreadable checkpoint") && len(l) > 600 {
			t.Fatalf("log line of %d bytes quotes the garbage: %.300s", len(l), l)
		}
	}
	if got := verifyPartition(t, c.fsys, c.pdir); !slices.Equal(got, c.before) {
		t.Fatalf("batches %v, want %v", got, c.before)
	}

	// The log-start checkpoint alone: nothing to scan after a clean shutdown.
	logs.Reset()
	writeFile(t, c.fsys, filepath.Join(c.dir, checkpoint.LogStartOffsetFile), junk)
	p, rep = c.open(t, opts)
	if rep.FullScan || p.SegmentsScanned != 0 || len(rep.CheckpointErrors) != 1 {
		t.Fatalf("log-start checkpoint garbage: full scan %v, %d segments scanned, %v", rep.FullScan, p.SegmentsScanned, rep.CheckpointErrors)
	}
	if !logs.has("each log starts at its first segment") {
		t.Fatalf("no clear error logged:\n%s", logs.String())
	}
}

// swapCase leaves a .log.swap replacing the first two segments (a finished
// compaction whose renames were interrupted); with cleaned also a .cleaned file,
// which makes the swap part of an unfinished operation.
func swapCase(t *testing.T, cleaned bool) (*recoverCase, *PartitionReport) {
	c := newCase(t)
	merged := append(readFile(t, c.fsys, c.logs[0]), readFile(t, c.fsys, c.logs[1])...)
	swap := c.logs[0] + segment.SwapSuffix
	writeFile(t, c.fsys, swap, merged)
	if cleaned {
		writeFile(t, c.fsys, c.logs[0]+segment.CleanedSuffix, merged[:100])
	}
	p, _ := c.open(t, nil)
	return c, p
}

func TestSwapRollForward(t *testing.T) {
	c, p := swapCase(t, false)
	n0, n1 := filepath.Base(c.logs[0]), filepath.Base(c.logs[1])
	if !slices.Equal(p.SwapsCompleted, []string{n0 + segment.SwapSuffix}) {
		t.Fatalf("swaps %v", p.SwapsCompleted)
	}
	var replaced []string
	for _, f := range p.TempFilesRemoved {
		if strings.HasSuffix(f, "(replaced by a swap)") {
			replaced = append(replaced, strings.Fields(f)[0])
		}
	}
	slices.Sort(replaced)
	i0, i1 := strings.TrimSuffix(n0, ".log"), strings.TrimSuffix(n1, ".log")
	want := []string{i0 + ".index", i0 + ".log", i0 + ".timeindex", i1 + ".index", i1 + ".log", i1 + ".timeindex"}
	if !slices.Equal(replaced, want) || p.IndexesRebuilt != 1 || p.BytesTruncated != 0 {
		t.Fatalf("replaced %v, want %v; report %+v", replaced, want, *p)
	}
	logs := logFiles(t, c.fsys, c.pdir)
	if len(logs) != len(c.logs)-1 || logs[0] != c.logs[0] {
		t.Fatalf("logs %v", logs)
	}
	if got := c.finish(t); !slices.Equal(got, c.before) {
		t.Fatal("batches changed")
	}
}

func TestSwapRollBack(t *testing.T) {
	c, p := swapCase(t, true)
	if len(p.SwapsCompleted) != 0 || len(p.TempFilesRemoved) != 2 ||
		!strings.Contains(p.TempFilesRemoved[0], "unfinished cleaning output") ||
		!strings.Contains(p.TempFilesRemoved[1], "swap of an unfinished operation") {
		t.Fatalf("report %+v", *p)
	}
	if logs := logFiles(t, c.fsys, c.pdir); !slices.Equal(logs, c.logs) {
		t.Fatalf("logs %v, want %v", logs, c.logs)
	}
	if got := c.finish(t); !slices.Equal(got, c.before) {
		t.Fatal("batches changed")
	}
}

// The marker goes before anything is loaded, durably: a crash while loading
// makes the next start unclean.
func TestMarkerGoneBeforeLoading(t *testing.T) {
	mem := vfs.NewMem()
	buildDataDir(t, mem, "/d", []string{"t-0", "t-1"}, 20)
	if _, err := mem.Stat("/d/" + CleanShutdownFile); err != nil {
		t.Fatal("no marker after a clean close")
	}
	boom := errors.New("boom")
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpOpen && strings.HasSuffix(op.Path, segment.LogSuffix) {
			return boom
		}
		return nil
	}))
	_, _, err := OpenDataDir("/d", testOpts(fsys))
	if !errors.Is(err, boom) || !errors.Is(err, ErrPartitionLoad) {
		t.Fatalf("open with failing loads: %v", err)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	if _, err := crashed.Stat("/d/" + CleanShutdownFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker survived a crash during loading: %v", err)
	}
	d, rep, err := OpenDataDir("/d", testOpts(crashed))
	if err != nil {
		t.Fatal(err)
	}
	if rep.CleanShutdown || rep.Totals.SegmentsScanned < 2 {
		t.Fatalf("next open not unclean: %+v", rep.Totals)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/d/t-0", "/d/t-1"} {
		verifyPartition(t, crashed, p)
	}
}

func TestSecondOpenerLocked(t *testing.T) {
	dir := t.TempDir()
	d, _, err := OpenDataDir(dir, testOpts(vfs.OS))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenDataDir(dir, testOpts(vfs.OS))
	if !errors.Is(err, ErrLocked) || !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second opener: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, _, err = OpenDataDir(dir, testOpts(vfs.OS))
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	d.Close()
}
