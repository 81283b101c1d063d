package record

import "encoding/binary"

// In-place patches of a v2 batch. SetBaseOffset and SetLeaderEpoch (batch.go)
// touch fields outside the CRC; the ones here change covered fields and
// recompute the CRC.

// SetLogAppendTime switches b to LogAppendTime with timestamp ts, as a Kafka
// leader does on append for topics with message.timestamp.type=LogAppendTime:
// attribute bit 3 is set, maxTimestamp becomes ts (readers then report it
// for every record), record deltas stay, and the CRC is recomputed. b must
// be a whole batch.
func (b Batch) SetLogAppendTime(ts int64) {
	a := uint16(b.Attributes()) | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[posAttributes:], a)
	b.setMaxTimestamp(ts)
	b.UpdateCRC()
}

// SetMaxTimestamp rewrites maxTimestamp and recomputes the CRC.
func (b Batch) SetMaxTimestamp(ts int64) {
	b.setMaxTimestamp(ts)
	b.UpdateCRC()
}

// AppendWithDeleteHorizon appends to dst a copy of b rebuilt with a delete
// horizon (KIP-534), as the compaction cleaner writes once it has removed a
// batch's tombstones' time to live: attribute bit 6 set, the horizon stored
// as the base timestamp and every record's timestamp delta re-encoded
// against it, so record timestamps are unchanged. Because the deltas' varint
// sizes change, this is a rebuild (records are decoded and re-encoded with
// the same codec), not an in-place patch. Offsets, lastOffsetDelta, producer
// fields and the leader epoch are kept; with LogAppendTime the records
// (as Records reports them, all at maxTimestamp) keep maxTimestamp. horizon = NoTimestamp removes it.
func (b Batch) AppendWithDeleteHorizon(dst []byte, horizon int64) ([]byte, error) {
	recs, err := b.Records(nil)
	if err != nil {
		return dst, err
	}
	opts := b.Options()
	opts.DeleteHorizon = horizon
	return AppendBatch(dst, opts, recs)
}
