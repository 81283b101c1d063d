package segment

import (
	"bytes"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// fileSize is the size of a segment's .log file on fsys.
func fileSize(t *testing.T, fsys vfs.FS, s *Segment) int64 {
	t.Helper()
	st, err := fsys.Stat(s.Path(LogSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// A preallocated active segment's file runs ahead of its logical size; reads
// stop at the logical end; a roll and a clean close trim every file to its
// logical size; a reopened log appends after the last batch.
func TestPreallocateRollCloseReopen(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		opts := &Options{FS: fsys, Preallocate: true, SegmentBytes: 8 << 10, IndexIntervalBytes: 512, Logger: quiet}
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		for i := range 40 {
			if _, err := l.Append(makeBatch(t, i, 3, int64(1000+i), record.CodecNone, 200)); err != nil {
				t.Fatal(err)
			}
		}
		segs := l.Segments()
		if len(segs) < 3 {
			t.Fatalf("%d segments, want rolls", len(segs))
		}
		for _, s := range segs[:len(segs)-1] {
			if got := fileSize(t, fsys, s); got != s.Size() {
				t.Fatalf("sealed %s: file %d bytes, logical %d", s.Path(LogSuffix), got, s.Size())
			}
		}
		act := segs[len(segs)-1]
		if got := fileSize(t, fsys, act); got != opts.SegmentBytes || act.Size() >= got {
			t.Fatalf("active segment file %d bytes (logical %d), want preallocated to %d", got, act.Size(), opts.SegmentBytes)
		}
		// Reads end at the logical end, never in the zero-filled reserve.
		for off := act.Base(); off <= l.LogEndOffset(); off++ {
			r, err := l.Read(off, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if r.Len > 0 && r.Pos+r.Len > act.Size() && r.Pos < act.Size() {
				t.Fatalf("Read(%d) region [%d, %d) beyond the logical end %d", off, r.Pos, r.Pos+r.Len, act.Size())
			}
			if off == l.LogEndOffset() && r.Len != 0 {
				t.Fatalf("Read at the log end returned %d bytes", r.Len)
			}
			r.Release()
		}
		want = readAll(t, l, 0, 1<<20)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l, rep, err := OpenWithReport(dir, &Options{FS: fsys, Preallocate: true, SegmentBytes: 8 << 10, IndexIntervalBytes: 512, Logger: quiet, CleanShutdown: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if rep.BytesTruncated != 0 || rep.BytesPreallocatedTrimmed != 0 {
			t.Fatalf("clean reopen trimmed: %+v", rep)
		}
		for _, s := range l.Segments() {
			if got := fileSize(t, fsys, s); got != s.Size() {
				t.Fatalf("after close %s: file %d bytes, logical %d", s.Path(LogSuffix), got, s.Size())
			}
		}
		end := l.LogEndOffset()
		if _, err := l.Append(makeBatch(t, 99, 2, 2000, record.CodecNone, 50)); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, l, 0, 1<<20)
		if len(got) != len(want)+1 {
			t.Fatalf("%d batches after reopen and append, want %d", len(got), len(want)+1)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("batch %d changed across reopen", i)
			}
		}
		if h, _ := record.ParseEntryHeader(got[len(want)], 0); h.Offset != end {
			t.Fatalf("appended batch at offset %d, want %d", h.Offset, end)
		}
		// A truncation inside the active segment drops the reserve; the next
		// append reserves again and lands right after the cut.
		if err := l.TruncateTo(end); err != nil {
			t.Fatal(err)
		}
		act = l.Segments()[len(l.Segments())-1]
		if _, err := l.Append(makeBatch(t, 100, 2, 2001, record.CodecNone, 50)); err != nil {
			t.Fatal(err)
		}
		if fs := fileSize(t, fsys, act); fs <= act.Size() {
			t.Fatalf("no reserve after truncate and append: file %d, logical %d", fs, act.Size())
		}
		if got := readAll(t, l, 0, 1<<20); len(got) != len(want)+1 {
			t.Fatalf("%d batches after truncate and append, want %d", len(got), len(want)+1)
		}
	})
}

// A preallocated log that crashes mid-append keeps every flushed batch; the
// zero-filled reserve is trimmed and reported as such, not as corruption.
func TestPreallocateCrashRecoversFlushed(t *testing.T) {
	mem := newDataDirMem()
	opts := Options{FS: mem, Preallocate: true, SegmentBytes: 64 << 10, IndexIntervalBytes: 512, Logger: quiet}
	l, err := Open(crashDir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := l.Append(makeBatch(t, i, 2, int64(1000+i), record.CodecNone, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := l.LogEndOffset()
	want := readAll(t, l, 0, 1<<20)
	// Unflushed appends: a crash may lose them, tear them or keep them.
	for i := range 5 {
		if _, err := l.Append(makeBatch(t, 100+i, 2, int64(2000+i), record.CodecNone, 100)); err != nil {
			t.Fatal(err)
		}
	}
	sawTrim, n := false, 0
	for i, c := range mem.AllCrashStates(vfs.CrashOptions{}) {
		n++
		o := opts
		o.FS = c
		o.RecoveryPoint = flushed
		rl, rep, err := OpenWithReport(crashDir, &o)
		if err != nil {
			t.Fatalf("state %s: %v", i, err)
		}
		if rl.LogEndOffset() < flushed {
			t.Fatalf("state %s: log end %d below the flushed offset %d", i, rl.LogEndOffset(), flushed)
		}
		got := readAll(t, rl, 0, 1<<20)
		for j := range want {
			if !bytes.Equal(got[j], want[j]) {
				t.Fatalf("state %s: flushed batch %d lost or changed", i, j)
			}
		}
		act := rl.Segments()[len(rl.Segments())-1]
		if fs := fileSize(t, c, act); fs != act.Size() {
			t.Fatalf("state %s: file %d bytes after recovery, logical %d", i, fs, act.Size())
		}
		if rep.BytesPreallocatedTrimmed > 0 {
			sawTrim = true
			if len(rep.Cuts) != 0 && rep.BytesTruncated == 0 {
				t.Fatalf("state %s: a preallocated tail reported as a cut: %+v", i, rep.Cuts)
			}
		}
		rl.Close()
	}
	if n < 2 {
		t.Fatalf("%d crash states", n)
	}
	if !sawTrim {
		t.Fatal("no crash state left a preallocated tail to trim")
	}
}
