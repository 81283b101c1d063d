package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestRoundTripEveryCodec(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := DefaultBatchOptions()
			opts.BaseOffset = 1000
			opts.LeaderEpoch = 7
			opts.Codec = c
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 42, 3, 17
			recs := sampleRecords()
			b := mustBatch(t, opts, recs)
			if err := b.Validate(5); err != nil {
				t.Fatal(err)
			}
			if err := b.ValidateDeep(5); err != nil {
				t.Fatal(err)
			}
			if err := b.ValidateProduce(5); err != nil {
				t.Fatal(err)
			}
			if b.Codec() != c || b.BaseOffset() != 1000 || b.PartitionLeaderEpoch() != 7 || b.NumRecords() != 5 ||
				b.LastOffsetDelta() != 4 || b.ProducerID() != 42 || b.ProducerEpoch() != 3 || b.BaseSequence() != 17 {
				t.Fatalf("header: codec %v base %d epoch %d count %d lod %d pid %d", b.Codec(), b.BaseOffset(), b.PartitionLeaderEpoch(), b.NumRecords(), b.LastOffsetDelta(), b.ProducerID())
			}
			if b.BaseTimestamp() != recs[0].Timestamp || b.MaxTimestamp() != 1700000000100 {
				t.Fatalf("timestamps %d %d", b.BaseTimestamp(), b.MaxTimestamp())
			}
			got, err := b.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			recordsEqual(t, got, recs, 1000, nil)

			var rr RecordReader
			rr.Reset(b, 0)
			var viaReader []Record
			for r, ok := rr.Next(); ok; r, ok = rr.Next() {
				r.Headers = append([]Header(nil), r.Headers...)
				viaReader = append(viaReader, r)
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
			recordsEqual(t, viaReader, recs, 1000, nil)

			// The Builder produces identical bytes.
			bl := NewBuilder(opts)
			for i := range recs {
				if err := bl.Add(&recs[i]); err != nil {
					t.Fatal(err)
				}
			}
			built, err := bl.Build()
			if err != nil {
				t.Fatal(err)
			}
			if c == CodecNone && !bytes.Equal(built, b) {
				t.Fatal("Builder and AppendBatch disagree")
			}
			if got2, err := built.Records(nil); err != nil {
				t.Fatal(err)
			} else {
				recordsEqual(t, got2, recs, 1000, nil)
			}
		})
	}
}

func TestAppendBatchAppends(t *testing.T) {
	prefix := []byte("prefix")
	out, err := AppendBatch(prefix, DefaultBatchOptions(), kvRecords(3, 10))
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:6]) != "prefix" {
		t.Fatal("prefix clobbered")
	}
	if err := Batch(out[6:]).ValidateDeep(6); err != nil {
		t.Fatal(err)
	}
	// Errors leave dst's length alone.
	opts := DefaultBatchOptions()
	opts.Codec = 7
	out2, err := AppendBatch(prefix, opts, kvRecords(1, 1))
	if !errors.Is(err, ErrBadOptions) || len(out2) != len(prefix) {
		t.Fatalf("err %v len %d", err, len(out2))
	}
}

func TestEmptyBatch(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec = c
		opts.BaseOffset = 50
		b := mustBatch(t, opts, nil)
		if c == CodecNone && len(b) != BatchHeaderSize {
			t.Fatalf("empty batch of %d bytes", len(b))
		}
		if err := b.ValidateDeep(0); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if b.NumRecords() != 0 || b.BaseTimestamp() != -1 || b.MaxTimestamp() != -1 || b.LastOffsetDelta() != 0 {
			t.Fatalf("%v: header %d %d %d", c, b.NumRecords(), b.BaseTimestamp(), b.MaxTimestamp())
		}
		if recs, err := b.Records(nil); err != nil || len(recs) != 0 {
			t.Fatalf("%v: %v %d", c, err, len(recs))
		}
		if err := b.ValidateProduce(0); !errors.Is(err, ErrProduce) {
			t.Fatalf("%v: ValidateProduce of an empty batch: %v", c, err)
		}
	}
	// An empty batch keeping a compacted batch's last offset.
	opts := DefaultBatchOptions()
	opts.LastOffsetDelta = 9
	b := mustBatch(t, opts, nil)
	if b.LastOffset() != 9 || b.ValidateDeep(0) != nil {
		t.Fatal("empty batch with lastOffsetDelta")
	}
}

func TestOffsetGaps(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec = c
		opts.BaseOffset = 100
		opts.KeepOffsets = true
		opts.LastOffsetDelta = 20
		recs := kvRecords(3, 5)
		offs := []int64{101, 105, 119}
		for i := range recs {
			recs[i].Offset = offs[i]
		}
		b := mustBatch(t, opts, recs)
		if err := b.ValidateDeep(0); err != nil {
			t.Fatal(err)
		}
		if b.LastOffset() != 120 || b.NumRecords() != 3 {
			t.Fatalf("last offset %d count %d", b.LastOffset(), b.NumRecords())
		}
		got, err := b.Records(nil)
		if err != nil {
			t.Fatal(err)
		}
		recordsEqual(t, got, recs, 0, offs)
		if err := b.ValidateProduce(0); !errors.Is(err, ErrProduce) {
			t.Fatalf("gappy batch passed ValidateProduce: %v", err)
		}
		// Rebuild from Options keeps everything.
		again, err := AppendBatch(nil, b.Options(), got)
		if err != nil {
			t.Fatal(err)
		}
		if c == CodecNone && !bytes.Equal(again, b) {
			t.Fatal("rebuild from Options differs")
		}
	}
	// Offsets must increase.
	opts := DefaultBatchOptions()
	opts.KeepOffsets = true
	recs := kvRecords(2, 1)
	recs[0].Offset, recs[1].Offset = 5, 5
	if _, err := AppendBatch(nil, opts, recs); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("repeated offset: %v", err)
	}
	recs[0].Offset, recs[1].Offset = 1, 3
	opts.LastOffsetDelta = 2
	if _, err := AppendBatch(nil, opts, recs); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("lastOffsetDelta below the last record: %v", err)
	}
}

func TestControlBatch(t *testing.T) {
	opts := DefaultBatchOptions()
	opts.BaseOffset = 77
	opts.ProducerID, opts.ProducerEpoch = 9, 1
	b, err := AppendEndTxnBatch(nil, opts, true, 5, 1234)
	if err != nil {
		t.Fatal(err)
	}
	bb := Batch(b)
	if len(bb) != 78 {
		t.Errorf("commit marker batch of %d bytes, Kafka's is 78", len(bb))
	}
	if !bb.IsControl() || !bb.IsTransactional() || bb.ValidateDeep(0) != nil {
		t.Fatal("not a valid control batch")
	}
	recs, err := bb.Records(nil)
	if err != nil || len(recs) != 1 {
		t.Fatal(err)
	}
	v, typ, err := ParseControlKey(recs[0].Key)
	if err != nil || v != 0 || typ != ControlCommit || typ.String() != "COMMIT" {
		t.Fatalf("key: %d %v %v", v, typ, err)
	}
	m, err := ParseEndTxnMarker(recs[0].Value)
	if err != nil || m.CoordinatorEpoch != 5 {
		t.Fatalf("marker %+v %v", m, err)
	}
	if err := bb.ValidateProduce(0); !errors.Is(err, ErrProduce) {
		t.Fatal("control batch accepted from a producer")
	}
	for typ, name := range map[ControlType]string{ControlAbort: "ABORT", ControlLeaderChange: "LEADER_CHANGE",
		ControlSnapshotHeader: "SNAPSHOT_HEADER", ControlSnapshotFooter: "SNAPSHOT_FOOTER",
		ControlKRaftVersion: "KRAFT_VERSION", ControlKRaftVoters: "KRAFT_VOTERS", 42: "UNKNOWN(42)"} {
		if typ.String() != name {
			t.Errorf("%d: %s", typ, typ.String())
		}
	}
	if _, _, err := ParseControlKey([]byte{0, 0, 1}); !errors.Is(err, ErrBadRecord) {
		t.Fatal("short control key accepted")
	}
	if _, err := ParseEndTxnMarker([]byte{0, 0, 1}); !errors.Is(err, ErrBadRecord) {
		t.Fatal("short marker accepted")
	}
	// A control batch whose record key is not a control key fails deep validation.
	opts.Control = true
	bad := mustBatch(t, opts, []Record{{Key: []byte{1}, Value: []byte{}}})
	wantCorrupt(t, bad.ValidateDeep(0), ErrBadRecord)
}

func TestLogAppendTime(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec = c
		b := mustBatch(t, opts, sampleRecords())
		b.SetBaseOffset(10)
		b.SetLeaderEpoch(3)
		if err := b.Validate(0); err != nil {
			t.Fatal("base offset / epoch patch broke the CRC")
		}
		b.SetLogAppendTime(1800000000000)
		if err := b.ValidateDeep(0); err != nil {
			t.Fatal(err)
		}
		if !b.IsLogAppendTime() || b.MaxTimestamp() != 1800000000000 {
			t.Fatal("not patched")
		}
		recs, err := b.Records(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Timestamp != 1800000000000 {
				t.Fatalf("record timestamp %d", r.Timestamp)
			}
		}
		// Built directly with LogAppendTime.
		opts.LogAppendTime, opts.AppendTime = true, 99
		b2 := mustBatch(t, opts, sampleRecords())
		recs, _ = b2.Records(nil)
		if b2.MaxTimestamp() != 99 || recs[2].Timestamp != 99 {
			t.Fatal("LogAppendTime option")
		}
	}
}

func TestDeleteHorizon(t *testing.T) {
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec = c
		opts.BaseOffset = 30
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 5, 0, 0
		recs := sampleRecords()
		b := mustBatch(t, opts, recs)
		out, err := b.AppendWithDeleteHorizon(nil, 1900000000000)
		if err != nil {
			t.Fatal(err)
		}
		nb := Batch(out)
		if err := nb.ValidateDeep(0); err != nil {
			t.Fatal(err)
		}
		h, ok := nb.DeleteHorizon()
		if !ok || h != 1900000000000 || nb.Codec() != c || nb.ProducerID() != 5 || nb.BaseOffset() != 30 {
			t.Fatalf("horizon %d %v codec %v", h, ok, nb.Codec())
		}
		got, err := nb.Records(nil)
		if err != nil {
			t.Fatal(err)
		}
		recordsEqual(t, got, recs, 30, nil)
		if nb.MaxTimestamp() != b.MaxTimestamp() {
			t.Fatal("max timestamp changed")
		}
		// And removed again.
		out, err = nb.AppendWithDeleteHorizon(nil, NoTimestamp)
		if err != nil || Batch(out).HasDeleteHorizon() {
			t.Fatal(err)
		}
		if c == CodecNone && !bytes.Equal(out, b) {
			t.Fatal("horizon round trip changed the batch")
		}
	}
}

func TestAppendBatchZeroAllocs(t *testing.T) {
	recs := kvRecords(100, 100)
	for i := range recs {
		recs[i].Headers = []Header{{Key: "h", Value: []byte("v")}}
	}
	buf := make([]byte, 0, 64<<10)
	opts := DefaultBatchOptions()
	allocs := testing.AllocsPerRun(100, func() {
		out, err := AppendBatch(buf[:0], opts, recs)
		if err != nil || len(out) == 0 {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AppendBatch allocates %.1f times per call", allocs)
	}
	bl := NewBuilder(opts)
	allocs = testing.AllocsPerRun(100, func() {
		bl.Reset(opts)
		for i := range recs {
			_ = bl.Add(&recs[i])
		}
		if _, err := bl.Build(); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Builder allocates %.1f times per batch", allocs)
	}
}

func TestRecordReaderAllocs(t *testing.T) {
	b := mustBatch(t, DefaultBatchOptions(), kvRecords(100, 100))
	var rr RecordReader
	allocs := testing.AllocsPerRun(100, func() {
		rr.Reset(b, 0)
		for _, ok := rr.Next(); ok; _, ok = rr.Next() {
		}
		if rr.Err() != nil {
			panic(rr.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("RecordReader allocates %.1f times per batch", allocs)
	}
}
