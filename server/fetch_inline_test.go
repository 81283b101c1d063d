package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestFetchInlineSmall: a fetch of at most fetchInlineMax record bytes is
// copied into the frame (one write); a larger one goes through sendfile.
// Both decode to the records produced.
func TestFetchInlineSmall(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := newTopic(t, s, "inl", 1)
	small := makeBatch(t, 3, 10)
	r.roundTrip(produceRequest("inl", 0, small, 9), 2)
	big := makeBatch(t, 100, 1000) // > fetchInlineMax on its own
	if len(big) <= fetchInlineMax {
		t.Fatalf("batch of %d bytes is not above fetchInlineMax", len(big))
	}
	r.roundTrip(produceRequest("inl", 0, big, 9), 3)

	fetch := func(offset int64, partMax int32, corr int32) (records int, inlined, sent int64) {
		t.Helper()
		in0, sf0 := inlineFetchBytes.Load(), sendfileBytes.Load()
		req := fetchRequest(12, "inl", 0, offset)
		req.Topics[0].Partitions[0].PartitionMaxBytes = partMax
		p := r.roundTrip(req, corr).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != 103 {
			t.Fatalf("fetch at %d: code %d, high watermark %d", offset, p.ErrorCode, p.HighWatermark)
		}
		for b := p.RecordBatches; len(b) > 0; {
			h, err := record.ParseEntryHeader(b, 0)
			if err != nil || h.TotalSize() > int64(len(b)) {
				t.Fatalf("fetch at %d: batch header: %v", offset, err)
			}
			if err := record.Batch(b[:h.TotalSize()]).Validate(0); err != nil {
				t.Fatalf("fetch at %d: %v", offset, err)
			}
			records += int(h.LastOffset - h.Offset + 1)
			b = b[h.TotalSize():]
		}
		return records, inlineFetchBytes.Load() - in0, sendfileBytes.Load() - sf0
	}
	// The small batch alone (the big one is over the partition limit, and
	// only the first batch may exceed it).
	if n, in, sf := fetch(0, 100, 4); n != 3 || in != int64(len(small)) || sf != 0 {
		t.Errorf("small fetch: %d records, %d bytes inlined, %d by sendfile; want 3, %d, 0", n, in, sf, len(small))
	}
	if n, in, sf := fetch(3, 1<<20, 5); n != 100 || in != 0 || sf != int64(len(big)) {
		t.Errorf("large fetch: %d records, %d bytes inlined, %d by sendfile; want 100, 0, %d", n, in, sf, len(big))
	}
}
