package segment

import (
	"errors"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// TestReplaceSegments swaps a cleaned copy of the first two segments in: new
// readers see the copy, a reader holding the old snapshot keeps reading the old
// files, the active segment is refused unless allowed, a list changed since
// the segments were taken is refused, and the result survives a reopen with no
// temporary files left.
func TestReplaceSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		o := &Options{FS: fsys, SegmentBytes: 600, SegmentIndexBytes: 4096, FileDeleteDelayMs: 60000, Logger: quiet}
		l, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { l.Close() }()
		for i := 0; i < 12; i++ {
			if _, err := l.Append(makeBatch(t, i, 2, 1, record.CodecNone, 100)); err != nil {
				t.Fatal(err)
			}
		}
		segs := l.Segments()
		if len(segs) < 4 {
			t.Fatalf("%d segments", len(segs))
		}
		old := segs[:2]
		snap := l.Snapshot()

		// A cleaned copy holding only the last batch of the two segments.
		c, err := l.CreateCleaned(old[0].Base())
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Read(old[1].NextOffset()-2, 1)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := r.ReadInto(nil)
		r.Release()
		last = last[:record.Batch(last).Length()+record.LogOverhead]
		if err := c.Append(last); err != nil {
			t.Fatal(err)
		}
		if err := l.ReplaceSegments([]*Cleaned{c}, old, false); err == nil {
			t.Fatal("replaced with an unsealed segment")
		}
		if err := c.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := l.ReplaceSegments([]*Cleaned{c}, segs[len(segs)-1:], false); !errors.Is(err, ErrSegmentsChanged) {
			t.Fatalf("replacing the active segment: %v", err)
		}
		if err := l.ReplaceSegments([]*Cleaned{c}, old, false); err != nil {
			t.Fatal(err)
		}
		if got := len(l.Segments()); got != len(segs)-1 {
			t.Fatalf("%d segments after replacing 2 by 1 (had %d)", got, len(segs))
		}
		// New readers: offset 0 now reads the kept batch.
		r, err = l.Read(0, 1)
		if err != nil || r.FirstOffset != old[1].NextOffset()-2 {
			t.Fatalf("read 0 after replace: first offset %d, %v", r.FirstOffset, err)
		}
		r.Release()
		// The old snapshot still reads offset 0 from the old files.
		r, err = snap.Read(0, 1)
		if err != nil || r.FirstOffset != 0 {
			t.Fatalf("old snapshot read 0: %d, %v", r.FirstOffset, err)
		}
		r.Release()
		// The replaced segments are gone from the list: replacing them again fails.
		c2, _ := l.CreateCleaned(old[0].Base())
		c2.Seal()
		if err := l.ReplaceSegments([]*Cleaned{c2}, old, false); !errors.Is(err, ErrSegmentsChanged) {
			t.Fatalf("replacing stale segments: %v", err)
		}
		c2.Abort()
		end := l.LogEndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		names, _ := fsys.ReadDir(dir)
		for _, n := range names {
			if _, suf, ok := ParseFileName(n); ok && (hasTemp(suf, CleanedSuffix) || hasTemp(suf, SwapSuffix) || hasTemp(suf, DeletedSuffix)) {
				t.Fatalf("left %s", n)
			}
		}
		if l, err = Open(dir, o); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != end || len(l.Segments()) != len(segs)-1 || l.Segments()[0].Base() != 0 {
			t.Fatalf("after reopen: end %d (was %d), %d segments", l.LogEndOffset(), end, len(l.Segments()))
		}
	})
}
