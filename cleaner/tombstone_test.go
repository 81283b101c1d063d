package cleaner

import (
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// tombstones counts the tombstones a log holds, and the batches holding
// them without a delete horizon.
func tombstones(t *testing.T, l *segment.Log) (n, unstamped int) {
	t.Helper()
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := r.ReadInto(nil)
		r.Release()
		if err != nil || len(buf) == 0 {
			t.Fatalf("read at %d: %d bytes, %v", off, len(buf), err)
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		for it.Next() {
			b := it.Batch()
			recs, err := b.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			_, stamped := b.DeleteHorizon()
			for _, rc := range recs {
				if rc.Value == nil && rc.Offset >= off {
					n++
					if !stamped {
						unstamped++
					}
				}
			}
			off = b.LastOffset() + 1
		}
	}
	return n, unstamped
}

// TestDeleteRetentionZeroOffline: delete.retention.ms 0 means 0, not the 24 h
// default: the first offline pass stamps the tombstones' batches with the
// horizon now, and a second pass (from the start, as `strata compact
// --from-start` runs it) removes them, on a controlled clock that never moves.
func TestDeleteRetentionZeroOffline(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/data/topic-3"
	compactFixture(t, fsys, dir, record.CodecLZ4)
	now := int64(50_000)
	opts := &CompactOptions{FS: fsys, SegmentIndexBytes: 4096, DeleteRetentionMs: 0, FromStart: true,
		Now: func() int64 { return now }, Logger: quiet}
	open := func() *segment.Log {
		l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	rep, err := CompactDir(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	l := open()
	n, unstamped := tombstones(t, l)
	l.Close()
	if rep.TombstonesRemoved != 0 || n != 1 || unstamped != 0 {
		t.Fatalf("first pass: %d removed, %d left, %d without a horizon", rep.TombstonesRemoved, n, unstamped)
	}
	rep, err = CompactDir(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	l = open()
	defer l.Close()
	if n, _ := tombstones(t, l); rep.TombstonesRemoved != 1 || n != 0 {
		t.Fatalf("second pass at the horizon: %d removed, %d left", rep.TombstonesRemoved, n)
	}
	if l.LogEndOffset() != 90 {
		t.Fatalf("log end %d, want 90", l.LogEndOffset())
	}
	// The zero value of the options is 0 too; nil options are Kafka's 24 h.
	if o := (&CompactOptions{}).ensureDefaults(); o.DeleteRetentionMs != 0 {
		t.Fatalf("CompactOptions{} delete retention %d", o.DeleteRetentionMs)
	}
	if o := (*CompactOptions)(nil).ensureDefaults(); o.DeleteRetentionMs != DefaultDeleteRetentionMs {
		t.Fatalf("nil CompactOptions delete retention %d", o.DeleteRetentionMs)
	}
}

// TestDeleteRetentionZeroManager: the broker's cleaner with a topic's
// delete.retention.ms=0 and min.cleanable.dirty.ratio=0: the first pass stamps
// the tombstones, the next pass (after more writes, one millisecond later on a
// controlled clock) removes them. Before, both zeros were taken as unset (24 h,
// 0.5).
func TestDeleteRetentionZeroManager(t *testing.T) {
	fsys := vfs.NewMem()
	now := int64(100_000)
	m, err := NewManager(&Config{FS: fsys, Logger: quiet, DedupeBufferBytes: 1 << 20, Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := segment.Open("/data/t-0", &segment.Options{FS: fsys, SegmentBytes: 512, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	write := func(n int) {
		for i := 0; i < n; i++ {
			k := int(l.LogEndOffset() % 5)
			v := []byte("value")
			if k == 4 {
				v = nil // key 4 is always deleted
			}
			if _, err := appendBatch(l, batchOf(t, record.CodecNone, []record.Record{{Timestamp: now, Key: key(k), Value: v}})); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	write(40)
	tp := checkpoint.TopicPartition{Topic: "t"}
	cfg := DefaultLogConfig()
	cfg.CleanupPolicy, cfg.DeleteRetentionMs, cfg.MinCleanableDirtyRatio = "compact", 0, 0
	if err := m.Register(tp, l, &cfg); err != nil {
		t.Fatal(err)
	}
	st, ok := m.CleanOnce()
	if !ok {
		t.Fatal("first pass did not run")
	}
	if n, unstamped := tombstones(t, l); st.TombstonesRemoved != 0 || n != 1 || unstamped != 0 {
		t.Fatalf("first pass: %d removed, %d left, %d without a horizon", st.TombstonesRemoved, n, unstamped)
	}
	now++
	write(3) // a little dirt: ratio 0 cleans it
	st, ok = m.CleanOnce()
	if !ok {
		t.Fatal("second pass did not run (min.cleanable.dirty.ratio=0 taken as 0.5?)")
	}
	if n, _ := tombstones(t, l); st.TombstonesRemoved != 1 || n != 0 {
		t.Fatalf("second pass past the horizon: %d removed, %d left", st.TombstonesRemoved, n)
	}
}
