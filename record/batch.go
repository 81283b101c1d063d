package record

import (
	"encoding/binary"
	"hash/crc32"
)

// Sizes and field positions of the v2 record batch header (see the package doc).
const (
	LogOverhead         = 12 // offset int64 + size int32 before every entry
	HeaderSizeUpToMagic = 17 // bytes needed to read offset, size and magic
	BatchHeaderSize     = 61 // v2 header including recordsCount
	// EntryHeaderSize is how many leading bytes ParseEntryHeader needs to learn
	// everything it reports for any magic (v2 up to maxTimestamp).
	EntryHeaderSize = 43
	// MinLegacySize is the smallest legal size field (v0 message overhead).
	MinLegacySize = 14

	posBaseOffset      = 0
	posLength          = 8
	posLeaderEpoch     = 12
	posMagic           = 16
	posCRC             = 17
	posAttributes      = 21
	posLastOffsetDelta = 23
	posBaseTimestamp   = 27
	posMaxTimestamp    = 35
	posProducerID      = 43
	posProducerEpoch   = 51
	posBaseSequence    = 53
	posRecordsCount    = 57
)

// Attribute bits of a v2 batch.
const (
	AttrCodecMask     = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
	AttrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C (Castagnoli) of b, as a v2 batch uses.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC32C continues a CRC-32C over more bytes.
func UpdateCRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// EntryHeader is what a shallow scan learns of one log entry from its first bytes,
// whatever its magic.
type EntryHeader struct {
	// Offset is the entry's leading offset field: a v2 batch's base offset, or a
	// legacy message's offset (for a compressed wrapper, its last inner offset).
	Offset int64
	// Size is the size field: bytes after the 12-byte log overhead.
	Size int32
	// Magic is 0, 1 or 2.
	Magic int8
	// LastOffset is the last offset in the entry (v2: base + lastOffsetDelta;
	// legacy: Offset).
	LastOffset int64
	// MaxTimestamp is the v2 max timestamp, the v1 timestamp, or -1 for v0.
	MaxTimestamp int64
}

// TotalSize is the entry's size on disk, log overhead included.
func (h EntryHeader) TotalSize() int64 { return int64(h.Size) + LogOverhead }

// ParseEntryHeader decodes the leading fields of a log entry starting at b[0].
// b must hold at least min(EntryHeaderSize, 12+size) bytes; fewer is ErrTruncated.
// It checks the size field and magic but not the CRC. pos is only used in errors.
func ParseEntryHeader(b []byte, pos int64) (EntryHeader, error) {
	var h EntryHeader
	if len(b) < HeaderSizeUpToMagic {
		return h, Corrupt(ErrTruncated, pos, -1, "%d bytes left, entry header needs %d", len(b), HeaderSizeUpToMagic)
	}
	h.Offset = int64(binary.BigEndian.Uint64(b[posBaseOffset:]))
	h.Size = int32(binary.BigEndian.Uint32(b[posLength:]))
	h.Magic = int8(b[posMagic])
	h.LastOffset = h.Offset
	h.MaxTimestamp = -1
	if h.Size < MinLegacySize {
		return h, Corrupt(ErrBadSize, pos, h.Offset, "size field %d is below the minimum %d", h.Size, MinLegacySize)
	}
	total := int64(h.Size) + LogOverhead
	need := int64(EntryHeaderSize)
	if total < need {
		need = total
	}
	switch h.Magic {
	case 2:
		if total < BatchHeaderSize {
			return h, Corrupt(ErrBadSize, pos, h.Offset, "v2 batch size %d is below the header size %d", total, BatchHeaderSize)
		}
		if int64(len(b)) < need {
			return h, Corrupt(ErrTruncated, pos, h.Offset, "%d bytes left, v2 header needs %d", len(b), need)
		}
		delta := int32(binary.BigEndian.Uint32(b[posLastOffsetDelta:]))
		h.LastOffset = h.Offset + int64(delta)
		h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[posMaxTimestamp:]))
	case 1:
		if total < LogOverhead+22 {
			return h, Corrupt(ErrBadSize, pos, h.Offset, "v1 message size %d is below the minimum 22", h.Size)
		}
		if len(b) < LogOverhead+14 {
			return h, Corrupt(ErrTruncated, pos, h.Offset, "%d bytes left, v1 header needs 26", len(b))
		}
		h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[LogOverhead+6:]))
	case 0:
	default:
		return h, Corrupt(ErrBadMagic, pos, h.Offset, "magic %d", h.Magic)
	}
	return h, nil
}

// Batch is a v2 record batch viewed in place: the bytes from its base offset to
// its last record byte. Accessors do not check bounds beyond the 61-byte header;
// call Validate (or build it with ParseEntryHeader first) before trusting it.
type Batch []byte

func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[posBaseOffset:])) }

// Length is the batchLength field: the batch's size minus the 12-byte overhead.
func (b Batch) Length() int32 { return int32(binary.BigEndian.Uint32(b[posLength:])) }
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[posLeaderEpoch:]))
}
func (b Batch) Magic() int8            { return int8(b[posMagic]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[posCRC:]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[posAttributes:])) }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[posLastOffsetDelta:])) }
func (b Batch) LastOffset() int64      { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[posBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[posMaxTimestamp:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[posProducerID:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[posProducerEpoch:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[posBaseSequence:])) }
func (b Batch) NumRecords() int32      { return int32(binary.BigEndian.Uint32(b[posRecordsCount:])) }

// Codec is the compression codec of the batch.
func (b Batch) Codec() Codec { return Codec(b.Attributes() & AttrCodecMask) }

func (b Batch) IsTransactional() bool    { return b.Attributes()&AttrTransactional != 0 }
func (b Batch) IsControl() bool          { return b.Attributes()&AttrControl != 0 }
func (b Batch) HasDeleteHorizon() bool   { return b.Attributes()&AttrDeleteHorizon != 0 }
func (b Batch) IsLogAppendTime() bool    { return b.Attributes()&AttrLogAppendTime != 0 }
func (b Batch) RecordsBytes() []byte     { return b[BatchHeaderSize:] }
func (b Batch) ComputeCRC() uint32       { return CRC32C(b[posAttributes:]) }
func (b Batch) SetBaseOffset(off int64)  { binary.BigEndian.PutUint64(b[posBaseOffset:], uint64(off)) }
func (b Batch) SetLeaderEpoch(e int32)   { binary.BigEndian.PutUint32(b[posLeaderEpoch:], uint32(e)) }
func (b Batch) setCRC(c uint32)          { binary.BigEndian.PutUint32(b[posCRC:], c) }
func (b Batch) UpdateCRC()               { b.setCRC(b.ComputeCRC()) }
func (b Batch) setMaxTimestamp(ts int64) { binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(ts)) }

// DeleteHorizon returns the delete horizon (KIP-534) when attribute bit 6 is set.
func (b Batch) DeleteHorizon() (int64, bool) {
	if !b.HasDeleteHorizon() {
		return -1, false
	}
	return b.BaseTimestamp(), true
}

// Validate checks a v2 batch shallowly, as Kafka's ensureValid does: the slice is
// exactly one whole batch (length field agrees), magic is 2, the size is at least
// the header, the record count is not negative and the CRC matches. It does not
// decompress. pos is used in errors.
func (b Batch) Validate(pos int64) error {
	if len(b) < BatchHeaderSize {
		return Corrupt(ErrTruncated, pos, -1, "batch of %d bytes is shorter than the %d-byte header", len(b), BatchHeaderSize)
	}
	off := b.BaseOffset()
	if m := b.Magic(); m != 2 {
		return Corrupt(ErrBadMagic, pos, off, "magic %d, want 2", m)
	}
	if n := int64(b.Length()) + LogOverhead; n != int64(len(b)) {
		if n < BatchHeaderSize {
			return Corrupt(ErrBadSize, pos, off, "batch length %d is below the header size", b.Length())
		}
		return Corrupt(ErrBadSize, pos, off, "batch length field says %d bytes, have %d", n, len(b))
	}
	if c := b.NumRecords(); c < 0 {
		return Corrupt(ErrBadCount, pos, off, "record count %d", c)
	}
	if d := b.LastOffsetDelta(); d < 0 {
		return Corrupt(ErrBadSize, pos, off, "last offset delta %d", d)
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return Corrupt(ErrCRC, pos, off, "stored CRC %d, computed %d", want, got)
	}
	return nil
}
