package cleaner

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

var quiet = slog.New(slog.DiscardHandler)

// refRec is a record as the reference log holds it.
type refRec struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte // nil: tombstone
	AppendMs  int64  // wall clock at append
}

// batchOf encodes records (offsets assigned by Append) with codec c.
func batchOf(t testing.TB, c record.Codec, recs []record.Record) []byte {
	t.Helper()
	o := record.DefaultBatchOptions()
	o.Codec = c
	o.ProducerID, o.ProducerEpoch, o.BaseSequence = 7, 1, 0
	o.LeaderEpoch = 3
	b, err := record.AppendBatch(nil, o, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appendBatch appends b, one of batchOf's batches, at the log end as a
// follower copies a leader's batch (AppendAssigned). batchOf's batches all
// carry producer 7's fields at sequence 0, for the cleaner to keep; the
// log checks sequences only on a leader's appends of a client's batches
// (Append), as Kafka does, where they would be refused as out of order or
// answered as retries and not stored.
func appendBatch(l *segment.Log, b []byte) (segment.AppendInfo, error) {
	record.Batch(b).SetBaseOffset(l.LogEndOffset())
	return l.AppendAssigned(b)
}

// readAll reads every record from the log start, checking batch framing and
// CRCs, and returns the records and the batches' (base, last) offsets.
func readAll(t testing.TB, l *segment.Log) ([]record.Record, [][2]int64) {
	t.Helper()
	var out []record.Record
	var batches [][2]int64
	off := l.LogStartOffset()
	for {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if r.Len == 0 {
			r.Release()
			return out, batches
		}
		buf, err := r.ReadInto(nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		n := 0
		for it.Next() {
			b := it.Batch()
			batches = append(batches, [2]int64{b.BaseOffset(), b.LastOffset()})
			recs, err := b.Records(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, rc := range recs {
				if rc.Offset >= off {
					out = append(out, rc)
				}
			}
			off = b.LastOffset() + 1
			n++
		}
		if n == 0 {
			t.Fatalf("read at %d returned no whole batch (%d bytes): %v", off, len(buf), it.Err())
		}
	}
}

// checkSubsequence checks that got is an in-order subsequence of ref with
// offsets and contents unchanged.
func checkSubsequence(t testing.TB, got []record.Record, ref []refRec) {
	t.Helper()
	byOff := make(map[int64]*refRec, len(ref))
	for i := range ref {
		byOff[ref[i].Offset] = &ref[i]
	}
	prev := int64(-1)
	for _, g := range got {
		if g.Offset <= prev {
			t.Fatalf("offset %d after %d: order broken", g.Offset, prev)
		}
		prev = g.Offset
		r, ok := byOff[g.Offset]
		if !ok {
			t.Fatalf("offset %d not in the reference", g.Offset)
		}
		if !bytes.Equal(g.Key, r.Key) || !bytes.Equal(g.Value, r.Value) || (g.Value == nil) != (r.Value == nil) {
			t.Fatalf("offset %d: got %q=%q, appended %q=%q", g.Offset, g.Key, g.Value, r.Key, r.Value)
		}
		if g.Timestamp != r.Timestamp {
			t.Fatalf("offset %d: timestamp %d, appended %d", g.Offset, g.Timestamp, r.Timestamp)
		}
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "key-%04d", i) }
