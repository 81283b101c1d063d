package cleaner

import (
	"github.com/stratalog/strata/internal/checkpoint"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// batchesOf returns every batch of the log, copied.
func batchesOf(t *testing.T, l *segment.Log) []record.Batch {
	t.Helper()
	var out []record.Batch
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
			out = append(out, append(record.Batch(nil), b...))
			off = b.LastOffset() + 1
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// producerBatch encodes recs as one batch of producer pid with codec c.
func producerBatch(t *testing.T, c record.Codec, pid int64, seq int32, recs []record.Record) []byte {
	t.Helper()
	o := record.DefaultBatchOptions()
	o.Codec, o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.LeaderEpoch = c, pid, 2, seq, 4
	b, err := record.AppendBatch(nil, o, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEmptyBatchesAsKafka: a batch that loses every record is dropped unless
// Kafka's cleaner keeps it (the last batch of an active producer; the last
// batch of the round), and a kept one is Kafka's bare 61-byte header:
// uncompressed whatever its codec, no records, first timestamp -1, its max
// timestamp, producer fields, leader epoch and offsets kept. Before, an lz4
// batch was kept as a 72-byte lz4 batch of zero records (librdkafka aborts
// on it) and the producers' last batches were dropped.
func TestEmptyBatchesAsKafka(t *testing.T) {
	const now = int64(10_000_000)
	fsys := vfs.NewMem()
	dir := "/data/t-0"
	// The log's clock is the test's: producer 7 is active at now, and its
	// second batch follows its first (at the real time it would have
	// expired, and the batch be refused as an unknown producer's).
	l, err := segment.Open(dir, &segment.Options{FS: fsys, SegmentBytes: 700, SegmentIndexBytes: 4096, Logger: quiet,
		Now: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	add := func(b []byte) {
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	val := func(s string) []byte { return []byte(s + "-some-value-bytes") }
	rec := func(ts int64, k int, v string) record.Record {
		var key []byte
		if k >= 0 {
			key = [][]byte{[]byte("a"), []byte("b"), []byte("c")}[k]
		}
		return record.Record{Timestamp: ts, Key: key, Value: val(v)}
	}
	// Keyless lz4 data: all of it goes.
	for i := 0; i < 10; i++ {
		add(producerBatch(t, record.CodecLZ4, -1, -1, []record.Record{rec(now-5, -1, "x"), rec(now-4, -1, "y")}))
	}
	// Producer 7 (active: its last batch is recent) writes a, b twice; its
	// last batch (offsets 22-23) is superseded by producer 8 below.
	add(producerBatch(t, record.CodecLZ4, 7, 0, []record.Record{rec(now-100, 0, "p7"), rec(now-99, 1, "p7")}))
	add(producerBatch(t, record.CodecLZ4, 7, 2, []record.Record{rec(now-98, 0, "p7"), rec(now-97, 1, "p7")}))
	// Producer 9, expired (its last batch is older than
	// producer.id.expiration.ms), writes c; superseded below.
	old := now - DefaultProducerIDExpirationMs - 1
	add(producerBatch(t, record.CodecSnappy, 9, 0, []record.Record{rec(old, 2, "p9")}))
	// Producer 8 overwrites a, b, c; then keyless lz4 data ends the log.
	add(producerBatch(t, record.CodecNone, 8, 0, []record.Record{rec(now-10, 0, "p8"), rec(now-9, 1, "p8"), rec(now-8, 2, "p8")}))
	add(producerBatch(t, record.CodecLZ4, -1, -1, []record.Record{rec(now-7, -1, "z"), rec(now-6, -1, "z")}))
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	rep, err := CompactDir(dir, &CompactOptions{FS: fsys, SegmentIndexBytes: 4096, DeleteRetentionMs: 0,
		Now: func() int64 { return now }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	l, err = segment.Open(dir, &segment.Options{FS: fsys, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bs := batchesOf(t, l)
	type want struct {
		base, last int64
		n          int32
		pid        int64
	}
	wants := []want{
		{22, 23, 0, 7},            // producer 7's last batch: kept empty
		{25, 27, 3, 8},            // producer 8's records stay
		{end - 2, end - 1, 0, -1}, // the round's last batch: kept empty
	}
	if len(bs) != len(wants) || l.LogEndOffset() != end || rep.BatchesKeptEmpty != 2 {
		for _, b := range bs {
			t.Logf("batch [%d, %d] %d records, producer %d, codec %v, %d bytes", b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.ProducerID(), b.Codec(), len(b))
		}
		t.Fatalf("%d batches, log end %d (want %d), %d kept empty", len(bs), l.LogEndOffset(), end, rep.BatchesKeptEmpty)
	}
	for i, w := range wants {
		b := bs[i]
		if b.BaseOffset() != w.base || b.LastOffset() != w.last || b.NumRecords() != w.n || b.ProducerID() != w.pid {
			t.Fatalf("batch %d: [%d, %d] %d records producer %d, want %+v", i, b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.ProducerID(), w)
		}
		if w.n != 0 {
			continue
		}
		if len(b) != record.BatchHeaderSize || b.Codec() != record.CodecNone || b.BaseTimestamp() != record.NoTimestamp ||
			b.HasDeleteHorizon() || b.ComputeCRC() != b.CRC() {
			t.Errorf("empty batch %d: %d bytes, codec %v, first timestamp %d, horizon %v, crc ok %v", i, len(b), b.Codec(),
				b.BaseTimestamp(), b.HasDeleteHorizon(), b.ComputeCRC() == b.CRC())
		}
		if err := b.ValidateDeep(0); err != nil {
			t.Errorf("empty batch %d: %v", i, err)
		}
	}
	if p7 := bs[0]; p7.MaxTimestamp() != now-97 || p7.ProducerEpoch() != 2 || p7.BaseSequence() != 2 || p7.PartitionLeaderEpoch() != 4 {
		t.Errorf("producer 7's empty batch: max timestamp %d, epoch %d, base sequence %d, leader epoch %d",
			p7.MaxTimestamp(), p7.ProducerEpoch(), p7.BaseSequence(), p7.PartitionLeaderEpoch())
	}
	if last := bs[2]; last.MaxTimestamp() != now-6 {
		t.Errorf("last empty batch: max timestamp %d, want %d", last.MaxTimestamp(), now-6)
	}
}

// TestGroupEndKeptForRollForward: a background pass over groups whose
// segments lose every record keeps, per group, just the bare last batch, so
// that each cleaned segment's next offset passes the base of every old
// segment it replaces: what the loader's swap roll-forward needs to remove
// them all after a crash. A group whose last segment keeps a record needs no
// empty batch.
func TestGroupEndKeptForRollForward(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := segment.Open("/data/t-0", &segment.Options{FS: fsys, SegmentBytes: 700, SegmentIndexBytes: 4096, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for b := 0; b < 40; b++ {
		recs := make([]record.Record, 3)
		for i := range recs {
			k := i
			if b == 17 && i == 2 {
				k = 9 // a key written once: its segment keeps a record
			}
			recs[i] = record.Record{Timestamp: 1000, Key: key(k), Value: []byte("value")}
		}
		if _, err := appendBatch(l, batchOf(t, record.CodecLZ4, recs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	var oldBases []int64
	for _, s := range l.Segments() {
		oldBases = append(oldBases, s.Base())
	}
	m, err := NewManager(&Config{FS: fsys, Logger: quiet, DedupeBufferBytes: 1 << 20, Now: func() int64 { return 5000 }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := DefaultLogConfig()
	cfg.CleanupPolicy, cfg.MinCleanableDirtyRatio, cfg.SegmentBytes = "compact", 0, 1400
	if err := m.Register(checkpoint.TopicPartition{Topic: "t"}, l, &cfg); err != nil {
		t.Fatal(err)
	}
	st, ok := m.CleanOnce()
	if !ok || st.SegmentsOut < 3 {
		t.Fatalf("pass: ran %v, %+v", ok, st)
	}
	segs := l.Segments()
	for i, s := range segs[:len(segs)-1] {
		limit := segs[i+1].Base()
		for _, ob := range oldBases {
			if ob >= s.Base() && ob < limit && ob >= s.NextOffset() {
				t.Errorf("cleaned segment %d ends at %d, below the replaced segment %d: a roll-forward would keep it", s.Base(), s.NextOffset(), ob)
			}
		}
	}
	// Per cleaned segment: records and no empty batch, or one empty batch.
	empty := 0
	for i, s := range segs[:len(segs)-1] {
		var withRecs, bare int
		for _, b := range batchesOf(t, l) {
			if b.BaseOffset() < s.Base() || (i+1 < len(segs) && b.BaseOffset() >= segs[i+1].Base()) {
				continue
			}
			if b.NumRecords() > 0 {
				withRecs++
				continue
			}
			bare++
			if len(b) != record.BatchHeaderSize || b.Codec() != record.CodecNone {
				t.Errorf("empty batch [%d, %d]: %d bytes, codec %v", b.BaseOffset(), b.LastOffset(), len(b), b.Codec())
			}
		}
		if withRecs > 0 && bare > 0 || withRecs == 0 && bare != 1 {
			t.Errorf("cleaned segment %d: %d batches with records, %d empty", s.Base(), withRecs, bare)
		}
		empty += bare
	}
	if empty < 2 || int(st.BatchesKeptEmpty) != empty {
		t.Errorf("%d empty batches (stats: %d) over %d groups", empty, st.BatchesKeptEmpty, st.SegmentsOut)
	}
}
