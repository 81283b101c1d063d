package record

import "fmt"

// Sentinel values of the v2 batch header fields.
const (
	NoPartitionLeaderEpoch int32 = -1
	NoProducerID           int64 = -1
	NoProducerEpoch        int16 = -1
	NoSequence             int32 = -1
	NoTimestamp            int64 = -1
)

// BatchOptions describes the header of a batch to encode. Start from
// DefaultBatchOptions: the zero value is not the Kafka default, because
// producer id 0 and epoch 0 are legal values.
type BatchOptions struct {
	// BaseOffset is the batch's base offset (patchable later without a CRC
	// change).
	BaseOffset int64
	// LeaderEpoch is the partition leader epoch; default NoPartitionLeaderEpoch.
	LeaderEpoch int32
	// Codec compresses the records. Level is the codec's level, 0 for its
	// default (gzip 6, lz4 fast, zstd 3; snappy has none).
	Codec Codec
	Level int
	// LogAppendTime sets attribute bit 3; the batch's max timestamp is then
	// AppendTime and readers report it as every record's timestamp. Records
	// keep their own timestamp deltas, as after Kafka's in-place rewrite.
	LogAppendTime bool
	AppendTime    int64
	// Transactional and Control set attribute bits 4 and 5.
	Transactional bool
	Control       bool
	// Producer fields; defaults NoProducerID, NoProducerEpoch, NoSequence.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// DeleteHorizon, when not NoTimestamp, sets attribute bit 6 and becomes
	// the base timestamp; record timestamp deltas are taken relative to it.
	DeleteHorizon int64
	// KeepOffsets takes each record's offset delta from Record.Offset -
	// BaseOffset instead of its index, so a compacted batch keeps its offsets.
	KeepOffsets bool
	// LastOffsetDelta overrides the header's lastOffsetDelta when >= 0 (it
	// must not be below the last record's delta); -1 takes the last record's
	// delta (0 for an empty batch). A compacted batch keeps its original one.
	LastOffsetDelta int32
}

// DefaultBatchOptions returns options for a plain uncompressed batch at base
// offset 0 with no producer, no leader epoch and no delete horizon.
func DefaultBatchOptions() BatchOptions {
	return BatchOptions{
		LeaderEpoch:     NoPartitionLeaderEpoch,
		AppendTime:      NoTimestamp,
		ProducerID:      NoProducerID,
		ProducerEpoch:   NoProducerEpoch,
		BaseSequence:    NoSequence,
		DeleteHorizon:   NoTimestamp,
		LastOffsetDelta: -1,
	}
}

// attributes returns the attribute bits the options ask for.
func (o *BatchOptions) attributes() int16 {
	a := int16(o.Codec) & AttrCodecMask
	if o.LogAppendTime {
		a |= AttrLogAppendTime
	}
	if o.Transactional {
		a |= AttrTransactional
	}
	if o.Control {
		a |= AttrControl
	}
	if o.DeleteHorizon != NoTimestamp {
		a |= AttrDeleteHorizon
	}
	return a
}

// check rejects options that cannot be encoded.
func (o *BatchOptions) check() error {
	if o.Codec < CodecNone || o.Codec > CodecZstd {
		return fmt.Errorf("%w: %w: %d", ErrBadOptions, ErrUnknownCodec, o.Codec)
	}
	if o.LastOffsetDelta < -1 {
		return fmt.Errorf("%w: last offset delta %d", ErrBadOptions, o.LastOffsetDelta)
	}
	if o.DeleteHorizon < NoTimestamp {
		return fmt.Errorf("%w: delete horizon %d", ErrBadOptions, o.DeleteHorizon)
	}
	return nil
}

// Options returns the options that rebuild b's header: every field but the
// record-derived ones (timestamps, count), with KeepOffsets set and
// LastOffsetDelta preserved. b must hold at least the 61-byte header.
func (b Batch) Options() BatchOptions {
	o := DefaultBatchOptions()
	o.BaseOffset = b.BaseOffset()
	o.LeaderEpoch = b.PartitionLeaderEpoch()
	o.Codec = b.Codec()
	o.LogAppendTime = b.IsLogAppendTime()
	if o.LogAppendTime {
		o.AppendTime = b.MaxTimestamp()
	}
	o.Transactional = b.IsTransactional()
	o.Control = b.IsControl()
	o.ProducerID = b.ProducerID()
	o.ProducerEpoch = b.ProducerEpoch()
	o.BaseSequence = b.BaseSequence()
	if h, ok := b.DeleteHorizon(); ok {
		o.DeleteHorizon = h
	}
	o.KeepOffsets = true
	o.LastOffsetDelta = b.LastOffsetDelta()
	return o
}
