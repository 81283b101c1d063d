package record

import (
	"bytes"
	"errors"
	"testing"
)

// TestAppendRecompressed: every codec to every codec keeps the header fields
// and the decompressed record bytes, sets the codec bits and a valid CRC.
func TestAppendRecompressed(t *testing.T) {
	for _, from := range allCodecs {
		for _, to := range allCodecs {
			opts := DefaultBatchOptions()
			opts.BaseOffset, opts.LeaderEpoch, opts.Codec = 1000, 7, from
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = 42, 3, 17
			recs := sampleRecords()
			b := mustBatch(t, opts, recs)
			prefix := []byte("prefix")
			out, err := b.AppendRecompressed(prefix, to, 0)
			if err != nil {
				t.Fatalf("%v->%v: %v", from, to, err)
			}
			if !bytes.Equal(out[:len(prefix)], prefix) {
				t.Fatalf("%v->%v: prefix changed", from, to)
			}
			nb := Batch(out[len(prefix):])
			if err := nb.ValidateDeep(0); err != nil {
				t.Fatalf("%v->%v: %v", from, to, err)
			}
			if nb.Codec() != to || nb.BaseOffset() != 1000 || nb.PartitionLeaderEpoch() != 7 || nb.NumRecords() != b.NumRecords() ||
				nb.LastOffsetDelta() != b.LastOffsetDelta() || nb.ProducerID() != 42 || nb.ProducerEpoch() != 3 || nb.BaseSequence() != 17 ||
				nb.BaseTimestamp() != b.BaseTimestamp() || nb.MaxTimestamp() != b.MaxTimestamp() ||
				nb.Attributes()&^AttrCodecMask != b.Attributes()&^AttrCodecMask {
				t.Fatalf("%v->%v: header not kept", from, to)
			}
			got, err := nb.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			recordsEqual(t, got, recs, 1000, nil)
			if from == to && to == CodecNone && !bytes.Equal(nb, b) {
				t.Fatal("none->none changed the bytes")
			}
		}
	}
	bad := mustBatch(t, func() BatchOptions { o := DefaultBatchOptions(); o.Codec = CodecGzip; return o }(), sampleRecords())
	bad[len(bad)-3] ^= 0xff // inside the gzip stream's trailer
	if out, err := bad.AppendRecompressed(nil, CodecZstd, 0); !errors.Is(err, ErrCompression) || len(out) != 0 {
		t.Fatalf("corrupt gzip: %v, %d bytes", err, len(out))
	}
	if _, err := Batch(bad[:20]).AppendRecompressed(nil, CodecZstd, 0); err == nil {
		t.Fatal("short batch accepted")
	}
}

// TestAppendRecompressedStreams: batches that decompress to more than the
// in-memory threshold are recompressed through the codecs' streaming
// writers with the same result (records, header), in every pair of codecs.
func TestAppendRecompressedStreams(t *testing.T) {
	n := 30 // ~3 MB of records, compressible
	if raceEnabled {
		n = 12 // still past the 1 MiB in-memory threshold
	}
	recs := kvRecords(n, 100<<10)
	for _, from := range allCodecs[1:] {
		opts := DefaultBatchOptions()
		opts.Codec, opts.BaseOffset, opts.ProducerID, opts.BaseSequence = from, 77, 9, 1
		b := mustBatch(t, opts, recs)
		for _, to := range allCodecs {
			out, err := b.AppendRecompressed([]byte("p"), to, 0)
			if err != nil {
				t.Fatalf("%v->%v: %v", from, to, err)
			}
			nb := Batch(out[1:])
			if err := nb.ValidateDeep(0); err != nil {
				t.Fatalf("%v->%v: %v", from, to, err)
			}
			if nb.Codec() != to || nb.BaseOffset() != 77 || nb.ProducerID() != 9 || nb.NumRecords() != int32(n) {
				t.Fatalf("%v->%v: header not kept", from, to)
			}
			got, err := nb.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			recordsEqual(t, got, recs, 77, nil)
			if _, err := b.AppendRecompressedLimit(nil, to, 0, len(out)-2); !errors.Is(err, ErrRecompressedTooLarge) {
				t.Fatalf("%v->%v one byte under its size: %v", from, to, err)
			}
		}
	}
}

// TestAppendRecompressedBomb: a gzip batch holding one record of 48 MiB of
// zeros (80 KB compressed) is recompressed to every codec without holding
// its decompressed size: the result where it fits 1 MiB, else
// ErrRecompressedTooLarge as soon as the output passes it.
func TestAppendRecompressedBomb(t *testing.T) {
	const mib = 1 << 20
	hdr := mustBatch(t, DefaultBatchOptions(), []Record{{Timestamp: 1, Value: []byte("x")}})
	size := 48 // MiB
	if raceEnabled {
		size = 8 // allocations are not checked under the race detector
	}
	pre, err := Compress(CodecGzip, nil, bigRecordPrefix(size*mib))
	if err != nil {
		t.Fatal(err)
	}
	end, _ := Compress(CodecGzip, nil, []byte{0})
	bomb := streamBatch(hdr, CodecGzip, append(append(pre, gzipMembers(t, size)...), end...), 1, 0)
	for _, to := range allCodecs {
		_, _ = bomb.AppendRecompressedLimit(nil, to, 0, mib) // pools warm
		var out []byte
		var err error
		a := allocated(func() { out, err = bomb.AppendRecompressedLimit(nil, to, 0, mib) })
		switch {
		case err == nil:
			if vb := Batch(out); vb.Codec() != to || vb.ValidateDeep(0) != nil {
				t.Errorf("%v: bad result", to)
			}
		case !errors.Is(err, ErrRecompressedTooLarge):
			t.Errorf("%v: %v", to, err)
		}
		if a > 8*mib && !raceEnabled {
			t.Errorf("%v: %d bytes allocated to recompress a 48 MiB record", to, a)
		}
		t.Logf("%v: %d bytes out, err %v, %d bytes allocated", to, len(out), err, a)
	}
}
