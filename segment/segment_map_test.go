package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/record"
)

// Mapped appends are in the page cache the moment Append returns: a copy of
// the directory taken while the log is open, unflushed and unclosed (what a
// process crash leaves the kernel holding), recovers every record, and the
// copied .log bytes are exactly what pwrite appends produce.
func TestMappedAppendsSurviveProcessCrash(t *testing.T) {
	mappedDir, plainDir := t.TempDir(), t.TempDir()
	mapped, err := Open(mappedDir, &Options{Preallocate: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	plain, err := Open(plainDir, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	// 1-record batches of 0..299 value bytes cross many page boundaries; every
	// 50th batch is larger than MapAppendsBelow and takes pwrite in between.
	for i := range 3000 {
		n := i % 300
		if i%50 == 0 {
			n = 2000
		}
		b := makeBatch(t, i, 1, int64(1000+i), record.CodecNone, n)
		if _, err := mapped.Append(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if mapped.Segments()[0].wmap == nil {
		t.Fatal("the preallocated log did not map its segment")
	}
	// The copy: what the kernel holds for the open, unflushed log.
	name := FilePath("", 0, LogSuffix)
	got, err := os.ReadFile(filepath.Join(mappedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	if err := os.WriteFile(filepath.Join(crashed, name), got, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(plainDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatal("mapped segment bytes differ from the pwrite segment's")
	}
	if tail := got[len(want):]; len(tail) == 0 || !bytes.Equal(tail, make([]byte, len(tail))) {
		t.Fatalf("after the data: %d bytes, want a zero-filled reserve", len(tail))
	}
	l, err := Open(crashed, &Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != mapped.LogEndOffset() || l.Size() != int64(len(want)) {
		t.Fatalf("recovered end %d size %d, want %d and %d", l.LogEndOffset(), l.Size(), mapped.LogEndOffset(), len(want))
	}
}

// A fault in the mapping (here the file is cut behind the log's back, so the
// next mapped write hits a page past the end: SIGBUS) fails that append with an
// error instead of killing the process, the log does not count it, and its
// directory goes offline: what reached the file cannot be known.
func TestMappedAppendFaultIsError(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, &Options{Preallocate: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, 0, 1, 1, record.CodecNone, 100)
	if _, err := l.Append(bytes.Clone(b)); err != nil {
		t.Fatal(err)
	}
	if l.Segments()[0].wmap == nil {
		t.Fatal("the append was not mapped")
	}
	if err := os.Truncate(filepath.Join(dir, FilePath("", 0, LogSuffix)), 0); err != nil {
		t.Fatal(err)
	}
	end, size := l.LogEndOffset(), l.Size()
	_, err = l.Append(bytes.Clone(b))
	if err == nil || !strings.Contains(err.Error(), "fault") || !errors.Is(err, ErrOffline) {
		t.Fatalf("append into a cut mapping: %v, want a fault error taking the log offline", err)
	}
	if l.LogEndOffset() != end || l.Size() != size {
		t.Fatalf("after the failed append: end %d size %d, want %d and %d", l.LogEndOffset(), l.Size(), end, size)
	}
	if _, err := l.Append(bytes.Clone(b)); !errors.Is(err, ErrOffline) {
		t.Fatalf("append after the fault: %v, want ErrOffline", err)
	}
}

// An index file cut behind the log's back faults (SIGBUS) when the next
// entry is written into its mapping. That used to kill the process; it is
// the append's error now, and the directory goes offline.
func TestMappedIndexFaultIsError(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, &Options{IndexIntervalBytes: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Segments()[0].OffsetIndex().IsMapped() {
		t.Skip("the index is not memory-mapped here")
	}
	for i := range 3 {
		if _, err := l.Append(makeBatch(t, i, 1, 1, record.CodecNone, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(filepath.Join(dir, FilePath("", 0, IndexSuffix)), 0); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	_, err = l.Append(makeBatch(t, 3, 1, 1, record.CodecNone, 100))
	if err == nil || !errors.Is(err, ErrOffline) {
		t.Fatalf("append whose index entry faults: %v, want a fault error taking the log offline", err)
	}
	if l.LogEndOffset() != end {
		t.Fatalf("log end %d after the failed append, want %d", l.LogEndOffset(), end)
	}
}

// An fsync every few appends turns mapped appends off (each fsync would
// write-protect the tail page again, and the next mapped write fault); an
// fsync every mapMinAppendsPerFlush appends or more keeps them on.
func TestMappedAppendsFollowFlushRate(t *testing.T) {
	for _, c := range []struct {
		every  int
		mapped bool
	}{{1, false}, {4, false}, {mapMinAppendsPerFlush, true}, {100, true}} {
		l, err := Open(t.TempDir(), &Options{Preallocate: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		b := makeBatch(t, 0, 1, 1, record.CodecNone, 100)
		for i := 1; i <= 5*c.every+1; i++ {
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
			if i%c.every == 0 {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := l.Segments()[0].wmap != nil; got != c.mapped {
			t.Errorf("fsync every %d appends: mapped %v, want %v", c.every, got, c.mapped)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A roll's flush of the segments it sealed does not sync the new active
// segment, so a log that is never flushed keeps mapped appends, and no
// zero-fill, in every segment after the first.
func TestMappedAppendsAfterRoll(t *testing.T) {
	l, err := Open(t.TempDir(), &Options{Preallocate: true, SegmentBytes: 64 << 10, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, 0, 1, 1, record.CodecNone, 100)
	for range 2000 {
		if _, err := l.Append(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want rolls", len(segs))
	}
	l.bg.Wait() // the rolls' background flushes
	act := segs[len(segs)-1]
	if act.wmap == nil || act.zeroed != 0 {
		t.Fatalf("active segment after rolls: mapped %v, zero-filled to %d; want mapped, no zero-fill", act.wmap != nil, act.zeroed)
	}
	if got, want := l.FlushedOffset(), act.Base(); got != want {
		t.Fatalf("flushed offset %d after the rolls, want the active segment's base %d", got, want)
	}
}

// An append of 1–4 KiB is mapped while nobody flushes the log, and written
// with pwrite once flushes come (every 100 appends here), because each
// fdatasync would have to clean every mapped page; appends under 1 KiB stay
// mapped either way.
func TestMappedAppendSizeFollowsFlushing(t *testing.T) {
	for _, c := range []struct {
		size       int
		flushEvery int
		wantMapped bool
	}{{2000, 0, true}, {2000, 100, false}, {100, 100, true}, {5000, 0, false}} {
		l, err := Open(t.TempDir(), &Options{Preallocate: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		b := makeBatch(t, 0, 1, 1, record.CodecNone, c.size)
		const n = 500
		for i := 1; i <= n; i++ {
			if _, err := l.Append(bytes.Clone(b)); err != nil {
				t.Fatal(err)
			}
			if c.flushEvery > 0 && i%c.flushEvery == 0 {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := l.Segments()[0]
		// With flushes, the appends before the first one are mapped.
		if got := s.mappedAppends > n/2; got != c.wantMapped {
			t.Errorf("%d-byte values, flush every %d: %d of %d appends mapped; want mostly mapped = %v", c.size, c.flushEvery, s.mappedAppends, n, c.wantMapped)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
