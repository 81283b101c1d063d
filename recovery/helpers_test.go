package recovery

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

var quiet = slog.New(slog.DiscardHandler)

// Small segments and a dense index so a few batches make several segments
// and index entries.
func testSegOpts() *segment.Options {
	return &segment.Options{SegmentBytes: 2048, IndexIntervalBytes: 200, SegmentIndexBytes: 4096, Logger: quiet}
}

func testOpts(fsys vfs.FS) *Options {
	return &Options{FS: fsys, OptionsFor: func(string) *segment.Options { return testSegOpts() }, Logger: quiet}
}

// batch encodes n records of about size value bytes each, named by id.
func batch(t testing.TB, id, n, size int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		v := fmt.Appendf(nil, "b%d-r%d-", id, i)
		for len(v) < size {
			v = append(v, byte('a'+(id+i+len(v))%26))
		}
		recs[i] = record.Record{Timestamp: 1_700_000_000_000 + int64(id), Key: fmt.Appendf(nil, "k%d", i), Value: v}
	}
	b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildDataDir creates data dir dir with the given partitions, appends batches
// to each and shuts down cleanly. It returns the log end offsets.
func buildDataDir(t testing.TB, fsys vfs.FS, dir string, parts []string, batches int) map[string]int64 {
	t.Helper()
	d, _, err := OpenDataDir(dir, testOpts(fsys))
	if err != nil {
		t.Fatal(err)
	}
	ends := map[string]int64{}
	for _, p := range parts {
		tp, ok := ParsePartitionDir(p)
		if !ok {
			t.Fatalf("bad partition %q", p)
		}
		so := testSegOpts()
		so.FS = fsys
		l, err := segment.Open(d.PartitionDir(tp), so)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < batches; i++ {
			if _, err := l.Append(batch(t, i, 1+i%4, 60)); err != nil {
				t.Fatal(err)
			}
		}
		ends[p] = l.LogEndOffset()
		if err := d.AddLog(tp, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return ends
}

// logFiles returns the .log files of a partition directory, oldest first.
func logFiles(t testing.TB, fsys vfs.FS, pdir string) []string {
	t.Helper()
	names, err := fsys.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, suf, ok := segment.ParseFileName(n); ok && suf == segment.LogSuffix {
			out = append(out, filepath.Join(pdir, n))
		}
	}
	sort.Strings(out)
	return out
}

func fileSize(t testing.TB, fsys vfs.FS, path string) int64 {
	t.Helper()
	st, err := fsys.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func readFile(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	b, err := readAll(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fsys.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func appendFile(t testing.TB, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt(data, st.Size()); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// crashMarker removes the clean-shutdown marker: the next open is unclean.
func crashMarker(t testing.TB, fsys vfs.FS, dir string) {
	t.Helper()
	if err := fsys.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
}

// batchRange is one batch found by verifyLogs.
type batchRange struct{ base, last int64 }

// verifyPartition checks a recovered partition directory in full: a read-only
// load with a full scan finds nothing to cut, rebuild, remove or rename, and
// reading every .log with CRCs (and a deep batch validation) finds only valid
// batches with increasing offsets. It returns the batches.
func verifyPartition(t testing.TB, fsys vfs.FS, pdir string) []batchRange {
	t.Helper()
	lr, err := segment.Inspect(pdir, &segment.Options{FS: fsys, Logger: quiet, SegmentIndexBytes: 4096})
	if err != nil {
		t.Fatalf("verify %s: %v", pdir, err)
	}
	if lr.BytesTruncated != 0 || len(lr.Cuts) != 0 || lr.IndexesRebuilt != 0 || len(lr.TempFilesRemoved) != 0 || len(lr.SwapsCompleted) != 0 || lr.SegmentsRemoved != 0 {
		t.Fatalf("verify %s: a full rescan would still change things: %+v", pdir, lr)
	}
	var out []batchRange
	next := int64(-1)
	for _, p := range logFiles(t, fsys, pdir) {
		base, _, _ := segment.ParseFileName(filepath.Base(p))
		f, err := fsys.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		sc := record.NewFileScanner(f, 0, st.Size(), record.ScanOptions{VerifyCRC: true})
		var end int64
		for sc.Next() {
			h := sc.Header()
			if h.Offset < base || h.Offset < next {
				t.Fatalf("verify %s: batch at %d offset %d below %d (segment base %d)", p, sc.Pos(), h.Offset, next, base)
			}
			if err := sc.Batch().Validate(sc.Pos()); err != nil {
				t.Fatalf("verify %s: %v", p, err)
			}
			out = append(out, batchRange{h.Offset, h.LastOffset})
			next = h.LastOffset + 1
			end = sc.Pos() + h.TotalSize()
		}
		f.Close()
		if err := sc.Err(); err != nil || end != st.Size() {
			t.Fatalf("verify %s: scan stopped at %d of %d: %v", p, end, st.Size(), err)
		}
	}
	return out
}

// onePartition returns the only partition report.
func onePartition(t testing.TB, rep *Report) *PartitionReport {
	t.Helper()
	if len(rep.Partitions) != 1 {
		t.Fatalf("%d partitions in the report, want 1", len(rep.Partitions))
	}
	return &rep.Partitions[0]
}

// logCapture is a slog handler target.
type logCapture struct{ bytes.Buffer }

func (c *logCapture) logger() *slog.Logger { return slog.New(slog.NewTextHandler(&c.Buffer, nil)) }

func (c *logCapture) has(s string) bool { return strings.Contains(c.String(), s) }
