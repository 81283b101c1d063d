package cleaner

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// retentionLog opens a log on fsys with small segments and the manager's
// retention checker over it.
func retentionLog(t *testing.T, fsys vfs.FS, dir string, o segment.Options, now *atomic.Int64) (*segment.Log, *Manager) {
	t.Helper()
	o.FS, o.SegmentBytes, o.SegmentIndexBytes, o.Logger = fsys, 300, 4096, quiet
	o.Now = now.Load
	l, err := segment.Open(dir, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	m, err := NewManager(&Config{FS: fsys, Logger: quiet, Now: o.Now, DisableCleaner: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Register(checkpoint.TopicPartition{Topic: "r"}, l, &LogConfig{CleanupPolicy: "delete"}); err != nil {
		t.Fatal(err)
	}
	return l, m
}

func appendTs(t *testing.T, l *segment.Log, ts int64, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := appendBatch(l, batchOf(t, record.CodecNone, []record.Record{{Timestamp: ts, Key: key(i), Value: make([]byte, 100)}})); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRetentionByTime(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	now := clock.Load()
	l, m := retentionLog(t, vfs.NewMem(), "/data/r-0", segment.Options{RetentionMs: 60_000, FileDeleteDelayMs: -1}, &clock)
	appendTs(t, l, now-120_000, 6) // old
	l.Roll()
	appendTs(t, l, now-1000, 6) // recent
	old := l.Segments()
	if n := m.CheckRetention(); n == 0 {
		t.Fatal("nothing deleted")
	}
	for _, s := range l.Segments() {
		if s.MaxTimestamp() >= 0 && s.MaxTimestamp() < now-60_000 {
			t.Fatalf("segment %d with max timestamp %d kept", s.Base(), s.MaxTimestamp())
		}
	}
	if l.LogStartOffset() != 6 || len(l.Segments()) >= len(old) {
		t.Fatalf("log start %d, %d segments", l.LogStartOffset(), len(l.Segments()))
	}
	// Everything expires: the log rolls and keeps an empty active segment.
	now += 120_000
	clock.Store(now)
	m.CheckRetention()
	if s := l.Segments(); len(s) != 1 || s[0].Size() != 0 || l.LogStartOffset() != l.LogEndOffset() {
		t.Fatalf("after full expiry: %d segments, start %d end %d", len(s), l.LogStartOffset(), l.LogEndOffset())
	}
}

func TestRetentionBySize(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	now := clock.Load()
	l, m := retentionLog(t, vfs.NewMem(), "/data/r-0", segment.Options{RetentionBytes: 1000, RetentionMs: -1, FileDeleteDelayMs: -1}, &clock)
	appendTs(t, l, now, 30)
	before := l.Size()
	m.CheckRetention()
	if l.Size() < 1000 || l.Size() >= before {
		t.Fatalf("size %d (was %d), retention.bytes 1000", l.Size(), before)
	}
	// Dropping one more segment would go below retention.bytes.
	if first := l.Segments()[0]; l.Size()-first.Size() >= 1000 {
		t.Fatalf("kept a deletable segment: size %d, oldest %d", l.Size(), first.Size())
	}
}

// TestRetentionFutureTimestamp: a record stamped a century ahead must not pin
// its segment (and every later one) forever: a segment's largest timestamp is
// capped at its file's modification time, so it expires retention.ms after
// the segment was last written.
func TestRetentionFutureTimestamp(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	now := clock.Load()
	l, m := retentionLog(t, vfs.NewMem(), "/data/r-0", segment.Options{RetentionMs: 60_000, FileDeleteDelayMs: -1}, &clock)
	appendTs(t, l, now+100*365*24*3600*1000, 3) // far future
	l.Roll()
	appendTs(t, l, now, 3)
	l.Roll()
	if n := m.CheckRetention(); n != 0 {
		t.Fatalf("deleted %d fresh segments", n)
	}
	now += 120_000 // two minutes after the writes
	clock.Store(now)
	if n := m.CheckRetention(); n < 2 {
		t.Fatalf("deleted %d segments: the future timestamp pinned retention", n)
	}
}

// TestRetentionSnapshotReader: a reader holding an old snapshot keeps reading
// segments that retention deleted until file.delete.delay.ms passes.
func TestRetentionSnapshotReader(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	now := clock.Load()
	fsys := vfs.NewMem()
	l, m := retentionLog(t, fsys, "/data/r-0", segment.Options{RetentionMs: 60_000, FileDeleteDelayMs: 200}, &clock)
	appendTs(t, l, now-120_000, 8)
	l.Roll()
	appendTs(t, l, now, 2)
	snap := l.Snapshot()
	held, err := snap.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.CheckRetention(); n == 0 {
		t.Fatal("nothing deleted")
	}
	if _, err := l.Read(0, 100); err == nil {
		t.Fatal("a new reader still reads offset 0")
	}
	names, _ := fsys.ReadDir("/data/r-0")
	if !hasDeleted(names) {
		t.Fatalf("no .deleted files: %v", names)
	}
	for off := int64(0); off < 8; off++ {
		r, err := snap.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("snapshot read %d: %v", off, err)
		}
		buf, err := r.ReadInto(nil)
		r.Release()
		if err != nil || record.Batch(buf).BaseOffset() != off {
			t.Fatalf("snapshot read %d: %v", off, err)
		}
	}
	// The delete timer removes the files (a loaded machine may fire it
	// late: wait for it, with a deadline)...
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		names, _ = fsys.ReadDir("/data/r-0")
		if !hasDeleted(names) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf(".deleted files left after file.delete.delay.ms: %v", names)
		}
	}
	buf, err := held.ReadInto(nil) // ...and the held region still reads
	held.Release()
	it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
	if err != nil || !it.Next() {
		t.Fatalf("held region unreadable: %v", err)
	}
}

func hasDeleted(names []string) bool {
	for _, n := range names {
		if _, suf, ok := segment.ParseFileName(n); ok && len(suf) > 8 && suf[len(suf)-8:] == segment.DeletedSuffix {
			return true
		}
	}
	return false
}
