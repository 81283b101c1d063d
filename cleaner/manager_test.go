package cleaner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// Records of the concurrency test are a function of their offset, so readers
// can check what they see without sharing state with the writer.
const concKeys = 13

func concKey(off int64) []byte   { return key(int(off % concKeys)) }
func concValue(off int64) []byte { return strconv.AppendInt([]byte("v"), off, 10) }

// TestManagerConcurrent runs the background cleaner (two threads) and the
// retention checker while a writer appends and readers read from the start,
// under -race: readers never see a changed offset, a reordered record or a
// gap at the head, and after the writer stops every key's final value is
// there, also after a reopen.
func TestManagerConcurrent(t *testing.T) {
	for _, fc := range []struct {
		name string
		fs   func() (vfs.FS, string)
	}{
		{"mem", func() (vfs.FS, string) { return vfs.NewMem(), "/data/t-0" }},
		{"os", func() (vfs.FS, string) { return vfs.OS, t.TempDir() + "/t-0" }},
	} {
		t.Run(fc.name, func(t *testing.T) {
			fsys, dir := fc.fs()
			lopts := &segment.Options{FS: fsys, SegmentBytes: 2048, SegmentIndexBytes: 4096, FileDeleteDelayMs: 20, Logger: quiet}
			l, err := segment.Open(dir, lopts)
			if err != nil {
				t.Fatal(err)
			}
			m, err := NewManager(&Config{Threads: 2, BackoffMs: 1, RetentionCheckIntervalMs: 5, FS: fsys, Logger: quiet, DedupeBufferBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			tp := checkpoint.TopicPartition{Topic: "t", Partition: 0}
			if err := m.Register(tp, l, &LogConfig{CleanupPolicy: "compact,delete", MinCleanableDirtyRatio: -1, DeleteRetentionMs: -1}); err != nil {
				t.Fatal(err)
			}
			m.Start()
			var stop atomic.Bool
			var wg sync.WaitGroup
			errc := make(chan error, 8)
			for r := 0; r < 3; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						if err := readCheck(l); err != nil {
							errc <- err
							return
						}
					}
				}()
			}
			codecs := []record.Codec{record.CodecNone, record.CodecSnappy}
			for b := 0; b < 400; b++ {
				next := l.LogEndOffset()
				recs := make([]record.Record, 1+b%4)
				for i := range recs {
					o := next + int64(i)
					recs[i] = record.Record{Timestamp: time.Now().UnixMilli(), Key: concKey(o), Value: concValue(o)}
				}
				if _, err := appendBatch(l, batchOf(t, codecs[b%2], recs)); err != nil {
					t.Fatal(err)
				}
				if b%50 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
			// Let the cleaner catch up with a rolled log.
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				fd, ok := m.FirstDirtyOffset(tp)
				if ok && fd == l.Segments()[len(l.Segments())-1].Base() || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			if u := m.Uncleanable(); len(u) > 0 {
				t.Fatalf("uncleanable: %v", u)
			}
			m.Close()
			end := l.LogEndOffset()
			checkFinal(t, l, end)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, err = segment.Open(dir, lopts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.LogEndOffset() != end {
				t.Fatalf("log end %d after reopen, was %d", l.LogEndOffset(), end)
			}
			checkFinal(t, l, end)
		})
	}
}

// readCheck reads the log from its start once, checking offsets, order and
// contents, and that nothing is missing from the first dirty... head: the last
// concKeys offsets read are all present (a caught-up reader sees every record).
func readCheck(l *segment.Log) error {
	off := l.LogStartOffset()
	prev := int64(-1)
	var rr record.RecordReader
	var buf []byte
	for {
		r, err := l.Read(off, 64<<10)
		if err != nil {
			if errors.Is(err, segment.ErrOffsetOutOfRange) {
				return nil // retention moved the start: start over
			}
			return err
		}
		if r.Len == 0 {
			r.Release()
			return nil
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			return err
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		n := 0
		for it.Next() {
			n++
			b := it.Batch()
			rr.Reset(b, 0)
			for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
				if rec.Offset <= prev {
					return fmt.Errorf("offset %d after %d", rec.Offset, prev)
				}
				prev = rec.Offset
				if !bytes.Equal(rec.Key, concKey(rec.Offset)) || !bytes.Equal(rec.Value, concValue(rec.Offset)) {
					return fmt.Errorf("offset %d holds %q=%q", rec.Offset, rec.Key, rec.Value)
				}
			}
			if err := rr.Err(); err != nil {
				return err
			}
			off = b.LastOffset() + 1
		}
		if n == 0 {
			return fmt.Errorf("no whole batch at %d: %v", off, it.Err())
		}
	}
}

// checkFinal checks that the last record of every key below end is present.
func checkFinal(t *testing.T, l *segment.Log, end int64) {
	t.Helper()
	got, _ := readAll(t, l)
	present := map[int64]bool{}
	for _, r := range got {
		present[r.Offset] = true
		if !bytes.Equal(r.Value, concValue(r.Offset)) {
			t.Fatalf("offset %d holds %q", r.Offset, r.Value)
		}
	}
	for o := max(end-concKeys, 0); o < end; o++ {
		if !present[o] {
			t.Fatalf("final value of key %s at %d missing", concKey(o), o)
		}
	}
	if int64(len(got)) > end/2 && end > 200 {
		t.Errorf("%d of %d records left: nothing was cleaned", len(got), end)
	}
}

// TestManagerUncleanable: a partition whose pass fails (a batch with a bad
// CRC in a segment to recopy) is marked uncleanable with the reason, and
// the cleaner goes on with the others, a transactional partition among
// them: it is cleaned (its aborted records removed), where it used to be
// marked uncleanable.
func TestManagerUncleanable(t *testing.T) {
	fsys := vfs.NewMem()
	m, err := NewManager(&Config{FS: fsys, Logger: quiet, DedupeBufferBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	open := func(dir string) *segment.Log {
		l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentBytes: 1024, SegmentIndexBytes: 4096, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	txn, bad := open("/data/txn-0"), open("/data/bad-0")
	app := func(l *segment.Log, o record.BatchOptions, v string, i int) {
		t.Helper()
		b, err := record.AppendBatch(nil, o, []record.Record{{Timestamp: time.Now().UnixMilli(), Key: key(i % 3), Value: []byte(v)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40; i++ {
		// Producer 1 writes one record per transaction, aborting every
		// third.
		o := record.DefaultBatchOptions()
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = 1, 0, int32(i), true
		app(txn, o, fmt.Sprint("t", i), i)
		mo := record.DefaultBatchOptions()
		mo.ProducerID, mo.ProducerEpoch = 1, 0
		mb, err := record.AppendEndTxnBatch(nil, mo, i%3 != 0, 1, time.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Append(mb); err != nil {
			t.Fatal(err)
		}
		app(bad, record.DefaultBatchOptions(), "y", i)
	}
	// A flipped byte in the first segment's first record: its CRC fails.
	f, err := fsys.OpenFile(bad.Segments()[0].Path(segment.LogSuffix), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, record.BatchHeaderSize+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfg := &LogConfig{CleanupPolicy: "compact", MinCleanableDirtyRatio: -1}
	tpT, tpB := checkpoint.TopicPartition{Topic: "txn"}, checkpoint.TopicPartition{Topic: "bad"}
	m.Register(tpT, txn, cfg)
	m.Register(tpB, bad, cfg)
	for i := 0; i < 4; i++ {
		m.CleanOnce()
	}
	u := m.Uncleanable()
	if _, ok := u[tpB]; !ok || len(u) != 1 {
		t.Fatalf("uncleanable %v", u)
	}
	if fd, ok := m.FirstDirtyOffset(tpT); !ok || fd == 0 {
		t.Fatalf("the transactional partition was not cleaned (first dirty %d)", fd)
	}
	ck, err := checkpoint.ReadOffsets(fsys, "/data/"+checkpoint.CleanerOffsetFile)
	if err != nil || ck[tpT] == 0 {
		t.Fatalf("checkpoint %v: %v", ck, err)
	}
	if _, ok := ck[tpB]; ok {
		t.Fatalf("checkpoint holds the uncleanable partition: %v", ck)
	}
	got, _ := readAll(t, txn)
	for _, r := range got {
		v, isData := strings.CutPrefix(string(r.Value), "t") // not a marker
		if i, err := strconv.Atoi(v); isData && err == nil && i%3 == 0 && r.Offset < ck[tpT] {
			t.Fatalf("aborted record %s=%s at %d still there after cleaning", r.Key, r.Value, r.Offset)
		}
	}
}

// TestDirtyRatioSelection: the log with the highest dirty ratio above
// min.cleanable.dirty.ratio is cleaned first; min.compaction.lag.ms holds
// recent segments back; max.compaction.lag.ms forces a log below the ratio.
func TestDirtyRatioSelection(t *testing.T) {
	fsys := vfs.NewMem()
	now := int64(100_000)
	m, err := NewManager(&Config{FS: fsys, Logger: quiet, DedupeBufferBytes: 1 << 20, Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mk := func(dir string, batches, keys int, ts int64) *segment.Log {
		l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentBytes: 512, SegmentIndexBytes: 4096, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		for i := 0; i < batches; i++ {
			if _, err := appendBatch(l, batchOf(t, record.CodecNone, []record.Record{{Timestamp: ts, Key: key(i % keys), Value: make([]byte, 50)}})); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	a, b := mk("/d/a-0", 60, 20, 1000), mk("/d/b-0", 30, 2, now-10)
	tpA, tpB := checkpoint.TopicPartition{Topic: "a"}, checkpoint.TopicPartition{Topic: "b"}
	compact := func(set func(*LogConfig)) *LogConfig {
		c := DefaultLogConfig() // min.cleanable.dirty.ratio 0.5
		c.CleanupPolicy = "compact"
		set(&c)
		return &c
	}
	m.Register(tpA, a, compact(func(*LogConfig) {}))
	m.Register(tpB, b, compact(func(c *LogConfig) { c.MinCompactionLagMs = 1000 }))
	if d, _ := m.DirtyOf(tpB); d.CleanableBytes != 0 {
		t.Fatalf("b's segments are younger than min.compaction.lag.ms but cleanable: %+v", d)
	}
	st, ok := m.CleanOnce()
	if !ok || st.EndOffset == 0 {
		t.Fatal("nothing cleaned")
	}
	if fd, _ := m.FirstDirtyOffset(tpA); fd != st.EndOffset {
		t.Fatalf("a not cleaned first")
	}
	if _, ok := m.CleanOnce(); ok {
		t.Fatal("a clean log or a lagged one was picked")
	}
	// Append a little to a: ratio now far below 0.5.
	for i := 0; i < 1; i++ {
		appendBatch(a, batchOf(t, record.CodecNone, []record.Record{{Timestamp: 1000, Key: key(1), Value: make([]byte, 50)}}))
	}
	a.Roll()
	if d, _ := m.DirtyOf(tpA); d.Ratio() >= 0.5 || d.CleanableBytes == 0 {
		t.Fatalf("dirty %+v", d)
	}
	if _, ok := m.CleanOnce(); ok {
		t.Fatal("cleaned below min.cleanable.dirty.ratio")
	}
	m.Register(tpA, a, compact(func(c *LogConfig) { c.MaxCompactionLagMs = 5000 }))
	if _, ok := m.CleanOnce(); !ok {
		t.Fatal("max.compaction.lag.ms did not force a pass")
	}
}
