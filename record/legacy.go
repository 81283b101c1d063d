package record

import (
	"encoding/binary"
	"hash/crc32"
	"math"
)

// TimestampType says what a timestamp means.
type TimestampType int8

const (
	NoTimestampType   TimestampType = -1 // magic 0: no timestamps
	CreateTime        TimestampType = 0
	LogAppendTimeType TimestampType = 1
)

// String returns Kafka's name for t.
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTimeType:
		return "LogAppendTime"
	}
	return "NO_TIMESTAMP_TYPE"
}

// Legacy message layout after the 12-byte log overhead.
const (
	legacyPosCRC       = LogOverhead
	legacyPosMagic     = LogOverhead + 4
	legacyPosAttrs     = LogOverhead + 5
	legacyPosTimestamp = LogOverhead + 6
	// LegacyOverheadV0 and V1 are the message sizes with empty key and value
	// fields (the size field's minimum).
	LegacyOverheadV0 = 14
	LegacyOverheadV1 = 22
	legacyAttrTime   = 0x08
	legacyAttrUnused = 0xf0
)

// LegacyMessage is one decoded v0/v1 message.
type LegacyMessage struct {
	Offset        int64 // absolute (inner messages of a wrapper included)
	Magic         int8
	Attributes    int8
	CRC           uint32 // stored CRC
	Timestamp     int64  // -1 for magic 0
	TimestampType TimestampType
	Key, Value    []byte // nil = null; alias the entry or decompressed bytes
	Valid         bool   // stored CRC matches (CRC-32 IEEE over magic..end)
}

// Codec is the compression codec in the attributes (non-zero for wrappers).
func (m *LegacyMessage) Codec() Codec { return Codec(m.Attributes & AttrCodecMask) }

// parseLegacy decodes a v0/v1 entry's fields and checks its framing (but
// reports the CRC in Valid rather than failing).
func parseLegacy(e []byte, pos int64) (LegacyMessage, error) {
	var m LegacyMessage
	if len(e) < HeaderSizeUpToMagic {
		return m, Corrupt(ErrTruncated, pos, -1, "%d bytes, a legacy message needs at least %d", len(e), LogOverhead+LegacyOverheadV0)
	}
	be := binary.BigEndian
	m.Offset = int64(be.Uint64(e))
	size := int64(int32(be.Uint32(e[posLength:])))
	m.Magic = int8(e[legacyPosMagic])
	min := int64(LegacyOverheadV0)
	switch m.Magic {
	case 0:
	case 1:
		min = LegacyOverheadV1
	default:
		return m, Corrupt(ErrBadMagic, pos, m.Offset, "magic %d in a legacy message", m.Magic)
	}
	if size < min {
		return m, Corrupt(ErrBadSize, pos, m.Offset, "v%d message size %d below the minimum %d", m.Magic, size, min)
	}
	if size+LogOverhead > int64(len(e)) {
		return m, Corrupt(ErrTruncated, pos, m.Offset, "message of %d bytes, have %d", size+LogOverhead, len(e))
	}
	if size+LogOverhead < int64(len(e)) {
		return m, Corrupt(ErrBadSize, pos, m.Offset, "message of %d bytes in a slice of %d", size+LogOverhead, len(e))
	}
	m.CRC = be.Uint32(e[legacyPosCRC:])
	m.Attributes = int8(e[legacyPosAttrs])
	if uint8(m.Attributes)&legacyAttrUnused != 0 {
		return m, Corrupt(ErrBadRecord, pos, m.Offset, "attributes %#x use bits 4-7", uint8(m.Attributes))
	}
	p := legacyPosTimestamp
	m.Timestamp, m.TimestampType = NoTimestamp, NoTimestampType
	if m.Magic == 1 {
		m.Timestamp = int64(be.Uint64(e[p:]))
		m.TimestampType = CreateTime
		if m.Attributes&legacyAttrTime != 0 {
			m.TimestampType = LogAppendTimeType
		}
		p += 8
	}
	var ok bool
	if m.Key, p, ok = legacyBytes(e, p); !ok {
		return m, Corrupt(ErrBadRecord, pos, m.Offset, "key length runs past the message")
	}
	if m.Value, p, ok = legacyBytes(e, p); !ok {
		return m, Corrupt(ErrBadRecord, pos, m.Offset, "value length runs past the message")
	}
	if p != len(e) {
		return m, Corrupt(ErrBadRecord, pos, m.Offset, "%d bytes after the value", len(e)-p)
	}
	m.Valid = crc32.ChecksumIEEE(e[legacyPosMagic:]) == m.CRC
	return m, nil
}

// legacyBytes reads an int32-length-prefixed field at e[p:].
func legacyBytes(e []byte, p int) ([]byte, int, bool) {
	if len(e)-p < 4 {
		return nil, p, false
	}
	l := int64(int32(binary.BigEndian.Uint32(e[p:])))
	p += 4
	if l == -1 {
		return nil, p, true
	}
	if l < 0 || l > int64(len(e)-p) {
		return nil, p, false
	}
	return e[p : p+int(l) : p+int(l)], p + int(l), true
}

// ValidateLegacy checks a whole v0/v1 entry shallowly: size, magic,
// attributes, key and value framing, and the CRC. It does not decompress.
func ValidateLegacy(entry []byte, pos int64) error {
	m, err := parseLegacy(entry, pos)
	if err != nil {
		return err
	}
	if !m.Valid {
		return Corrupt(ErrCRC, pos, m.Offset, "stored CRC %d, computed %d", m.CRC, crc32.ChecksumIEEE(entry[legacyPosMagic:]))
	}
	return nil
}

// DecodeLegacy decodes a whole v0/v1 entry, calling fn for each message: the
// entry itself when uncompressed, else every inner message of the wrapper,
// with absolute offsets (v1: wrapperOffset - lastInnerRelative +
// innerRelative, or the relative offset when the wrapper offset is 0) and, in
// v1 with LogAppendTime, the wrapper's timestamp. A CRC mismatch does not stop
// decoding: the message is passed with Valid false and DecodeLegacy returns
// an ErrCRC corruption at the end. Structural errors, bad compression, nested
// compression, an inner magic differing from the wrapper's and an empty inner
// set stop it. An error returned by fn stops it and is returned as is.
func DecodeLegacy(entry []byte, pos int64, fn func(LegacyMessage) error) error {
	w, err := parseLegacy(entry, pos)
	if err != nil {
		return err
	}
	var crcErr error
	if !w.Valid {
		crcErr = Corrupt(ErrCRC, pos, w.Offset, "stored CRC %d, computed %d", w.CRC, crc32.ChecksumIEEE(entry[legacyPosMagic:]))
	}
	c := w.Codec()
	if c == CodecNone {
		if err := fn(w); err != nil {
			return err
		}
		return crcErr
	}
	switch {
	case c > CodecZstd:
		return Corrupt(ErrUnknownCodec, pos, w.Offset, "codec %d in a v%d wrapper", c, w.Magic)
	case c == CodecZstd:
		return Corrupt(ErrCompression, pos, w.Offset, "zstd is not allowed with magic %d", w.Magic)
	case w.Value == nil:
		return Corrupt(ErrBadRecord, pos, w.Offset, "compressed wrapper with a null value")
	}
	inner, err := DecompressLegacy(w.Magic, c, nil, w.Value)
	if err != nil {
		return Corrupt(ErrCompression, pos, w.Offset, "%v", err)
	}
	// First pass: framing of the inner set and its last offset.
	var lastInner int64
	n := 0
	for p := 0; p < len(inner); n++ {
		if len(inner)-p < LogOverhead {
			return Corrupt(ErrBadRecord, pos, w.Offset, "inner message %d: %d bytes left", n, len(inner)-p)
		}
		size := int64(int32(binary.BigEndian.Uint32(inner[p+posLength:])))
		if size < LegacyOverheadV0 || size > int64(len(inner)-p-LogOverhead) {
			return Corrupt(ErrBadRecord, pos, w.Offset, "inner message %d: size %d with %d bytes left", n, size, len(inner)-p-LogOverhead)
		}
		lastInner = int64(binary.BigEndian.Uint64(inner[p:]))
		p += LogOverhead + int(size)
	}
	if n == 0 {
		return Corrupt(ErrBadRecord, pos, w.Offset, "compressed wrapper holds no messages")
	}
	base := int64(0)
	if w.Magic == 1 && w.Offset != 0 {
		base = w.Offset - lastInner
	}
	for p, i := 0, 0; p < len(inner); i++ {
		size := int(int32(binary.BigEndian.Uint32(inner[p+posLength:])))
		e := inner[p : p+LogOverhead+size]
		p += LogOverhead + size
		m, err := parseLegacy(e, pos)
		if err != nil {
			return Corrupt(ErrBadRecord, pos, w.Offset, "inner message %d: %v", i, err)
		}
		if m.Magic != w.Magic {
			return Corrupt(ErrBadRecord, pos, w.Offset, "inner message %d has magic %d in a v%d wrapper", i, m.Magic, w.Magic)
		}
		if m.Codec() != CodecNone {
			return Corrupt(ErrBadRecord, pos, w.Offset, "inner message %d is compressed (nested compression)", i)
		}
		if w.Magic == 1 {
			m.Offset += base
			if w.TimestampType == LogAppendTimeType {
				m.Timestamp, m.TimestampType = w.Timestamp, LogAppendTimeType
			}
		}
		if !m.Valid && crcErr == nil {
			crcErr = Corrupt(ErrCRC, pos, w.Offset, "inner message %d (offset %d): CRC mismatch", i, m.Offset)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return crcErr
}

// AppendLegacyMessage appends m as a v0 or v1 log entry (m.Magic), computing
// size and CRC; m.CRC and m.Valid are ignored, and so is m.Timestamp for
// magic 0. Meant for fixtures and tools.
func AppendLegacyMessage(dst []byte, m LegacyMessage) []byte {
	be := binary.BigEndian
	start := len(dst)
	dst = be.AppendUint64(dst, uint64(m.Offset))
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // size, crc
	dst = append(dst, byte(m.Magic), byte(m.Attributes))
	if m.Magic >= 1 {
		dst = be.AppendUint64(dst, uint64(m.Timestamp))
	}
	dst = be.AppendUint32(dst, uint32(lenOrNull(m.Key)))
	dst = append(dst, m.Key...)
	dst = be.AppendUint32(dst, uint32(lenOrNull(m.Value)))
	dst = append(dst, m.Value...)
	e := dst[start:]
	be.PutUint32(e[posLength:], uint32(len(e)-LogOverhead))
	be.PutUint32(e[legacyPosCRC:], crc32.ChecksumIEEE(e[legacyPosMagic:]))
	return dst
}

// AppendLegacyWrapper appends a compressed v0/v1 wrapper entry holding inner
// (their Offset fields are absolute; v1 stores them relative to the first),
// compressed with c the way Kafka did for that magic. The wrapper's offset is
// the last inner offset, its timestamp ts and, with logAppendTime (v1), its
// attribute bit 3 is set. Meant for fixtures and tools.
func AppendLegacyWrapper(dst []byte, magic int8, c Codec, logAppendTime bool, ts int64, inner []LegacyMessage) ([]byte, error) {
	if magic != 0 && magic != 1 {
		return dst, ErrBadOptions
	}
	if len(inner) == 0 || c == CodecNone || len(inner) > math.MaxInt32 {
		return dst, ErrBadOptions
	}
	var set []byte
	first := inner[0].Offset
	for _, m := range inner {
		m.Magic = magic
		m.Attributes &^= AttrCodecMask
		if magic == 1 {
			m.Offset -= first
		}
		set = AppendLegacyMessage(set, m)
	}
	value, err := CompressLegacy(magic, c, nil, set)
	if err != nil {
		return dst, err
	}
	attrs := int8(c)
	if logAppendTime && magic == 1 {
		attrs |= legacyAttrTime
	}
	return AppendLegacyMessage(dst, LegacyMessage{
		Offset: inner[len(inner)-1].Offset, Magic: magic, Attributes: attrs, Timestamp: ts, Value: value,
	}), nil
}
