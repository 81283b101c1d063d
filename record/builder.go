package record

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

var zeroHeader [BatchHeaderSize]byte

// encState tracks what the header needs while records are encoded.
type encState struct {
	opts      BatchOptions
	count     int32
	lastDelta int32 // -1 before the first record
	baseTs    int64
	maxTs     int64
}

func (s *encState) reset(opts BatchOptions) {
	s.opts = opts
	s.count = 0
	s.lastDelta = -1
	s.baseTs = NoTimestamp
	if opts.DeleteHorizon != NoTimestamp {
		s.baseTs = opts.DeleteHorizon
	}
	s.maxTs = NoTimestamp
}

// appendRecord encodes r as the next record of the batch.
func (s *encState) appendRecord(dst []byte, r *Record) ([]byte, error) {
	if s.count == math.MaxInt32 {
		return dst, fmt.Errorf("%w: too many records", ErrBadOptions)
	}
	delta := int64(s.count)
	if s.opts.KeepOffsets {
		delta = r.Offset - s.opts.BaseOffset
		if delta <= int64(s.lastDelta) || delta > math.MaxInt32 {
			return dst, fmt.Errorf("%w: record offset %d after delta %d from base %d", ErrBadOptions, r.Offset, s.lastDelta, s.opts.BaseOffset)
		}
	}
	if s.count == 0 && s.opts.DeleteHorizon == NoTimestamp {
		s.baseTs = r.Timestamp
	}
	dst, err := appendRecord(dst, r, int32(delta), r.Timestamp-s.baseTs)
	if err != nil {
		return dst, err
	}
	if s.count == 0 || r.Timestamp > s.maxTs {
		s.maxTs = r.Timestamp
	}
	s.count++
	s.lastDelta = int32(delta)
	return dst, nil
}

// finish fills in the header of b, a whole batch whose records are in place,
// and computes its CRC.
func (s *encState) finish(b []byte) error {
	o := &s.opts
	if int64(len(b))-LogOverhead > math.MaxInt32 {
		return fmt.Errorf("%w: batch of %d bytes is too large", ErrBadOptions, len(b))
	}
	last := o.LastOffsetDelta
	if last == -1 {
		last = max(s.lastDelta, 0)
	} else if last < s.lastDelta {
		return fmt.Errorf("%w: last offset delta %d below the last record's %d", ErrBadOptions, last, s.lastDelta)
	}
	maxTs := s.maxTs
	if o.LogAppendTime {
		maxTs = o.AppendTime
	}
	be := binary.BigEndian
	be.PutUint64(b[posBaseOffset:], uint64(o.BaseOffset))
	be.PutUint32(b[posLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[posLeaderEpoch:], uint32(o.LeaderEpoch))
	b[posMagic] = 2
	be.PutUint16(b[posAttributes:], uint16(o.attributes()))
	be.PutUint32(b[posLastOffsetDelta:], uint32(last))
	be.PutUint64(b[posBaseTimestamp:], uint64(s.baseTs))
	be.PutUint64(b[posMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[posProducerID:], uint64(o.ProducerID))
	be.PutUint16(b[posProducerEpoch:], uint16(o.ProducerEpoch))
	be.PutUint32(b[posBaseSequence:], uint32(o.BaseSequence))
	be.PutUint32(b[posRecordsCount:], uint32(s.count))
	Batch(b).UpdateCRC()
	return nil
}

var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// AppendBatch appends one complete v2 batch holding recs to dst. With
// CodecNone it encodes in place and does not allocate when dst has room. On
// error dst is returned unchanged (same length).
func AppendBatch(dst []byte, opts BatchOptions, recs []Record) ([]byte, error) {
	if err := opts.check(); err != nil {
		return dst, err
	}
	start := len(dst)
	var s encState
	s.reset(opts)
	dst = append(dst, zeroHeader[:]...)
	var err error
	if opts.Codec == CodecNone {
		for i := range recs {
			if dst, err = s.appendRecord(dst, &recs[i]); err != nil {
				return dst[:start], err
			}
		}
	} else {
		sp := scratchPool.Get().(*[]byte)
		raw := (*sp)[:0]
		for i := range recs {
			if raw, err = s.appendRecord(raw, &recs[i]); err != nil {
				*sp = raw[:0]
				scratchPool.Put(sp)
				return dst[:start], err
			}
		}
		dst, err = compressLevel(opts.Codec, opts.Level, dst, raw)
		*sp = raw[:0]
		scratchPool.Put(sp)
		if err != nil {
			return dst[:start], err
		}
	}
	if err := s.finish(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// Builder assembles one batch at a time, record by record, reusing its
// buffers: after the first few batches, building allocates nothing for
// CodecNone and only what the compressor needs otherwise. Not safe for
// concurrent use.
type Builder struct {
	s   encState
	raw []byte // 61 reserved header bytes + uncompressed records
	out []byte // header + compressed records
	err error
}

// NewBuilder returns a Builder ready for a batch with opts.
func NewBuilder(opts BatchOptions) *Builder {
	b := new(Builder)
	b.Reset(opts)
	return b
}

// Reset starts a new batch, invalidating the last Build result.
func (b *Builder) Reset(opts BatchOptions) {
	b.s.reset(opts)
	b.err = opts.check()
	b.raw = append(b.raw[:0], zeroHeader[:]...)
}

// Add appends a record. Errors are held and also returned by Build.
func (b *Builder) Add(r *Record) error {
	if b.err != nil {
		return b.err
	}
	n := len(b.raw)
	b.raw, b.err = b.s.appendRecord(b.raw, r)
	if b.err != nil {
		b.raw = b.raw[:n]
	}
	return b.err
}

// AddKV appends a record with a timestamp, key and value and no headers.
func (b *Builder) AddKV(ts int64, key, value []byte) error {
	r := Record{Timestamp: ts, Key: key, Value: value}
	return b.Add(&r)
}

// Len is the number of records added since Reset.
func (b *Builder) Len() int { return int(b.s.count) }

// Size is the uncompressed size of the batch so far, header included.
func (b *Builder) Size() int { return len(b.raw) }

// Build completes the batch. The result aliases the Builder's buffers and is
// valid until the next Reset or Build.
func (b *Builder) Build() (Batch, error) {
	if b.err != nil {
		return nil, b.err
	}
	out := b.raw
	if c := b.s.opts.Codec; c != CodecNone {
		var err error
		b.out = append(b.out[:0], zeroHeader[:]...)
		if b.out, err = compressLevel(c, b.s.opts.Level, b.out, b.raw[BatchHeaderSize:]); err != nil {
			return nil, err
		}
		out = b.out
	}
	if err := b.s.finish(out); err != nil {
		return nil, err
	}
	return Batch(out), nil
}
