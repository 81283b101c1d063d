package segment

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// TestAppendZeroAllocs proves an append of an already-encoded batch allocates
// nothing (real files, mmapped indexes, index entries being written).
func TestAppendZeroAllocs(t *testing.T) {
	for _, c := range []struct {
		name        string
		preallocate bool
		records     int
	}{{"grow", false, 10}, {"preallocate", true, 10}, {"mapped", true, 1}} {
		t.Run(c.name, func(t *testing.T) { testAppendZeroAllocs(t, c.preallocate, c.records) })
	}
}

func testAppendZeroAllocs(t *testing.T, preallocate bool, records int) {
	l, err := Open(t.TempDir(), &Options{IndexIntervalBytes: 100, Preallocate: preallocate, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, 0, records, 1, record.CodecNone, 100)
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per append, want 0", allocs)
	}
	if n := l.Segments()[0].OffsetIndex().Entries(); n < 100 {
		t.Fatalf("only %d index entries written during the test", n)
	}
	if mapped := l.Segments()[0].wmap != nil; mapped != (preallocate && len(b) < DefaultMapAppendsBelow) {
		t.Fatalf("%d-byte appends, preallocate %v: mapped %v", len(b), preallocate, mapped)
	}
}

// TestAppendBadInput: each malformed append is a clear error and leaves the log
// exactly as it was.
func TestAppendBadInput(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		l, err := Open(dir, &Options{FS: fsys, SegmentBytes: 1 << 20, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		good := makeBatch(t, 0, 3, 1, record.CodecNone, 10)
		if _, err := l.Append(good); err != nil {
			t.Fatal(err)
		}
		mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
		cases := []struct {
			name string
			buf  []byte
			want error
		}{
			{"empty", nil, ErrBadAppend},
			{"truncated", good[:len(good)-5], ErrBadAppend},
			{"header only", good[:20], ErrBadAppend},
			{"wrong magic", mut(func(b []byte) []byte { b[16] = 1; return b }), ErrBadAppend},
			{"unknown magic", mut(func(b []byte) []byte { b[16] = 7; return b }), ErrBadAppend},
			{"negative size", mut(func(b []byte) []byte { b[8] = 0xff; return b }), ErrBadAppend},
			{"absurd size", mut(func(b []byte) []byte { b[8] = 0x7f; return b }), ErrBadAppend},
			{"negative delta", mut(func(b []byte) []byte { b[23] = 0x80; return b }), ErrBadAppend},
			{"good then garbage", append(append([]byte(nil), good...), 1, 2, 3), ErrBadAppend},
			{"too large", make([]byte, 2<<20), ErrTooLarge},
		}
		for _, c := range cases {
			size, end := l.Size(), l.LogEndOffset()
			_, err := l.Append(c.buf)
			if !errors.Is(err, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			}
			if l.Size() != size || l.LogEndOffset() != end {
				t.Errorf("%s: log changed (size %d→%d, end %d→%d)", c.name, size, l.Size(), end, l.LogEndOffset())
			}
		}
		// Assigned offsets must continue the log.
		back := mut(func(b []byte) []byte { record.Batch(b).SetBaseOffset(0); return b })
		if _, err := l.AppendAssigned(back); !errors.Is(err, ErrOffsetMismatch) {
			t.Errorf("offsets going backwards: %v", err)
		}
		ahead := mut(func(b []byte) []byte { record.Batch(b).SetBaseOffset(100); return b })
		if info, err := l.AppendAssigned(ahead); err != nil || info.FirstOffset != 100 || l.LogEndOffset() != 103 {
			t.Errorf("assigned append with a gap: %+v %v end %d", info, err, l.LogEndOffset())
		}
		got := readAll(t, l, 0, 1<<20)
		if len(got) != 2 || record.Batch(got[1]).BaseOffset() != 100 {
			t.Fatalf("read back %d batches", len(got))
		}
	})
}

// TestOffsetForTimestamp checks ListOffsets-by-time against a linear scan.
func TestOffsetForTimestamp(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		l, err := Open(dir, &Options{FS: fsys, SegmentBytes: 2000, IndexIntervalBytes: 200, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		rng := rand.New(rand.NewPCG(3, 4))
		type rec struct{ off, ts int64 }
		var all []rec
		ts := int64(1000)
		for i := 0; i < 200; i++ {
			n := 1 + rng.IntN(4)
			b := makeBatch(t, i, n, ts, codecs[i%len(codecs)], 20)
			info, err := l.Append(b)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < n; k++ {
				all = append(all, rec{info.FirstOffset + int64(k), ts + int64(k)})
			}
			ts += int64(rng.IntN(10)) - 2 // timestamps mostly grow, sometimes go back
		}
		for q := int64(900); q < ts+10; q += 3 {
			want, ok := rec{}, false
			for _, r := range all {
				if r.ts >= q {
					want, ok = r, true
					break
				}
			}
			got, gotOK, err := l.OffsetForTimestamp(q)
			if err != nil {
				t.Fatal(err)
			}
			if gotOK != ok || (ok && (got.Offset != want.off || got.Timestamp != want.ts)) {
				t.Fatalf("timestamp %d: got %+v %v, want %+v %v", q, got, gotOK, want, ok)
			}
		}
	})
}

// TestGroupCommit: concurrent appenders that each ask for durability share
// fsyncs, and every one of them sees its offsets flushed.
func TestGroupCommit(t *testing.T) {
	mem := newDataDir(t)
	var syncs atomic.Int64
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			syncs.Add(1)
			time.Sleep(time.Millisecond) // a disk's fsync takes time: let appends pile up
		}
		return nil
	}))
	l, err := Open("/d/p-0", &Options{FS: fsys, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, 0, 1, 1, record.CodecNone, 10)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := append([]byte(nil), b...)
			for i := 0; i < each; i++ {
				info, err := l.Append(buf)
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.FlushTo(info.LastOffset + 1); err != nil {
					t.Error(err)
					return
				}
				if l.FlushedOffset() <= info.LastOffset {
					t.Errorf("flushed %d after FlushTo(%d)", l.FlushedOffset(), info.LastOffset+1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d appends, %d fsyncs", writers*each, syncs.Load())
	if syncs.Load() > writers*each/2 {
		t.Fatalf("%d fsyncs for %d appends: no grouping", syncs.Load(), writers*each)
	}
	// After a power loss everything flushed is there.
	after := mem.CrashClone(vfs.CrashOptions{})
	l2, err := Open("/d/p-0", &Options{FS: after, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() < l.FlushedOffset() {
		t.Fatalf("after a crash the log ends at %d, flushed was %d", l2.LogEndOffset(), l.FlushedOffset())
	}
}

// TestFlushMessages: flush.messages makes every N records durable.
func TestFlushMessages(t *testing.T) {
	mem := newDataDir(t)
	l, err := Open("/d/p-0", &Options{FS: mem, FlushMessages: 3, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, 0, 1, 1, record.CodecNone, 10)
	for i := 1; i <= 10; i++ {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		if want := int64(i / 3 * 3); l.FlushedOffset() != want {
			t.Fatalf("after %d records flushed %d, want %d", i, l.FlushedOffset(), want)
		}
	}
	l2, err := Open("/d/p-0", &Options{FS: mem.CrashClone(vfs.CrashOptions{}), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != 9 {
		t.Fatalf("after a power loss the log ends at %d, want the 9 flushed", l2.LogEndOffset())
	}
}

// TestRetentionByTime deletes expired segments, never the last unexpired one,
// and rolls when every segment expired.
func TestRetentionByTime(t *testing.T) {
	var clock atomic.Int64 // read by background flushes
	clock.Store(1_000_000)
	now := clock.Load()
	l, err := Open(t.TempDir(), &Options{SegmentBytes: 300, RetentionMs: 1000, FileDeleteDelayMs: -1,
		Now: clock.Load, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 10; i++ {
		if _, err := l.Append(makeBatch(t, i, 2, now-5000+int64(i)*500, record.CodecNone, 50)); err != nil {
			t.Fatal(err)
		}
	}
	before := len(l.Segments())
	n, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Segments() {
		if s.Size() > 0 && now-s.MaxTimestamp() > 1000 {
			t.Fatalf("segment %d with max timestamp %d survived", s.Base(), s.MaxTimestamp())
		}
	}
	if n == 0 || len(l.Segments()) >= before {
		t.Fatalf("deleted %d of %d segments", n, before)
	}
	clock.Add(100_000) // everything expires: the log rolls and keeps an empty segment
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) != 1 || segs[0].Size() != 0 || segs[0].Base() != l.LogEndOffset() || l.LogStartOffset() != l.LogEndOffset() {
		t.Fatalf("after full expiry: %d segments, first size %d base %d, start %d end %d",
			len(segs), segs[0].Size(), segs[0].Base(), l.LogStartOffset(), l.LogEndOffset())
	}
}

// TestReopenCutsTornTail: garbage after the last batch is cut at open.
func TestReopenCutsTornTail(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		l, err := Open(dir, &Options{FS: fsys, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		b := makeBatch(t, 0, 3, 1, record.CodecNone, 10)
		for i := 0; i < 5; i++ {
			if _, err := l.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		f, err := fsys.OpenFile(FilePath(dir, 0, LogSuffix), 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		f.WriteAt(b[:30], st.Size()) // a torn sixth batch
		f.Close()
		l, rep, err := OpenWithReport(dir, &Options{FS: fsys, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.LogEndOffset() != 15 || rep.BytesTruncated != 30 || len(rep.Truncations) != 1 {
			t.Fatalf("end %d, report %+v", l.LogEndOffset(), rep)
		}
		if _, err := l.Append(b); err != nil || len(readAll(t, l, 0, 1<<20)) != 6 {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}

// newDataDir returns a memory filesystem whose data directory /d already exists
// durably, as a broker's log.dirs does.
func newDataDir(t *testing.T) *vfs.MemFS {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mem.SyncAll()
	return mem
}
