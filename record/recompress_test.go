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
