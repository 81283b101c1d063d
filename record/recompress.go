package record

import (
	"encoding/binary"
	"fmt"
)

// AppendRecompressed appends b (one whole v2 batch) to dst with its records
// recompressed with codec c at level (0: the codec's default), as Kafka's
// LogValidator does when a topic's compression.type differs from the
// producer's codec: the record bytes are identical once decompressed, the
// header keeps every field (base offset, timestamps, producer fields, last
// offset delta, count) but the codec bits and the length, and the CRC is
// recomputed. On error dst is returned unchanged (same length).
func (b Batch) AppendRecompressed(dst []byte, c Codec, level int) ([]byte, error) {
	if err := checkHeader(b, -1); err != nil {
		return dst, err
	}
	if c < CodecNone || c > CodecZstd {
		return dst, fmt.Errorf("%w: %w: %d", ErrBadOptions, ErrUnknownCodec, c)
	}
	start := len(dst)
	dst = append(dst, b[:BatchHeaderSize]...)
	src := b.RecordsBytes()
	var sp *[]byte
	if oc := b.Codec(); oc != CodecNone && len(src) > 0 {
		sp = scratchPool.Get().(*[]byte)
		raw, err := Decompress(oc, (*sp)[:0], src)
		*sp = raw[:0]
		if err != nil {
			scratchPool.Put(sp)
			return dst[:start], Corrupt(ErrCompression, -1, b.BaseOffset(), "%v", err)
		}
		src = raw
	}
	var err error
	if len(src) > 0 || b.NumRecords() > 0 {
		dst, err = compressLevel(c, level, dst, src)
	}
	if sp != nil {
		scratchPool.Put(sp)
	}
	if err != nil {
		return dst[:start], err
	}
	out := Batch(dst[start:])
	if int64(len(out))-LogOverhead > 1<<31-1 {
		return dst[:start], fmt.Errorf("%w: batch of %d bytes is too large", ErrBadOptions, len(out))
	}
	binary.BigEndian.PutUint32(out[posLength:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint16(out[posAttributes:], uint16(b.Attributes()&^AttrCodecMask|int16(c)))
	out.UpdateCRC()
	return dst, nil
}
