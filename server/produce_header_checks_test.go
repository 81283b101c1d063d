package server

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestCheapChecksAlways: the header-only produce checks (count > 0,
// lastOffsetDelta + 1 == count, no control batch, a base sequence with a
// producer id) apply to compressed batches whatever
// strata.produce.validation says. Without them, validation=header let one
// 80-byte gzip batch that claims lastOffsetDelta 2^31-2 move the log end by
// 2^31-1 offsets. Each refused batch leaves the log end where it was, so the
// valid batch after them starts at offset 0.
func TestCheapChecksAlways(t *testing.T) {
	patch := func(name string, f func(b record.Batch)) (string, []byte) {
		b := keyedBatch(t, record.CodecGzip, []byte("k"))
		f(record.Batch(b))
		record.Batch(b).UpdateCRC()
		return name, b
	}
	bad := [][2]any{}
	for _, c := range []struct {
		name string
		f    func(b record.Batch)
	}{
		{"burn 2^31 offsets", func(b record.Batch) { binary.BigEndian.PutUint32(b[23:], 1<<31-2) }},
		{"count 0", func(b record.Batch) { binary.BigEndian.PutUint32(b[57:], 0) }},
		{"count disagrees", func(b record.Batch) { binary.BigEndian.PutUint32(b[57:], 5) }},
		{"control batch", func(b record.Batch) { b[22] |= byte(record.AttrControl) }},
		{"producer id without sequence", func(b record.Batch) { binary.BigEndian.PutUint64(b[43:], 7) }},
	} {
		n, b := patch(c.name, c.f)
		bad = append(bad, [2]any{n, b})
	}
	for _, mode := range []string{"header", "full"} {
		t.Run(mode, func(t *testing.T) {
			s := startServer(t, t.TempDir(), "strata.produce.validation="+mode)
			r := newTopic(t, s, "cheap", 1)
			for i, c := range bad {
				name, b := c[0].(string), c[1].([]byte)
				if err := record.Batch(b).Validate(0); err != nil {
					t.Fatalf("%s: the test batch is not valid on its own: %v", name, err)
				}
				p := r.roundTrip(produceRequest("cheap", 0, b, 9), int32(10+i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				if p.ErrorCode != kerr.InvalidRecord.Code {
					t.Errorf("%s: code %d, want INVALID_RECORD (%d)", name, p.ErrorCode, kerr.InvalidRecord.Code)
				}
				if end := s.topics.partition("cheap", 0).log.LogEndOffset(); end != 0 {
					t.Fatalf("%s: log end offset %d after a refused batch", name, end)
				}
			}
			p := r.roundTrip(produceRequest("cheap", 0, keyedBatch(t, record.CodecGzip, []byte("a"), []byte("b")), 9), 99).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.BaseOffset != 0 {
				t.Fatalf("valid batch: code %d, base offset %d", p.ErrorCode, p.BaseOffset)
			}
		})
	}
}
