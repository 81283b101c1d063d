package record

// Zig-zag varints as Kafka writes them (protobuf sint32/sint64 in LEB128).
// Kafka rejects encodings longer than 5 bytes for an int32 field and 10 bytes
// for an int64 field; so do we, and we also reject a last byte whose bits would
// overflow the field.

const (
	maxVarintLen32 = 5
	maxVarintLen64 = 10
)

// Results of readVarint / readVarlong besides the value.
const (
	varintShort    = 0  // ran out of bytes
	varintOverlong = -1 // too many bytes or overflowing last byte
)

// appendVarint appends v zig-zag encoded.
func appendVarint(dst []byte, v int32) []byte {
	u := uint32(v<<1) ^ uint32(v>>31)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// appendVarlong appends v zig-zag encoded.
func appendVarlong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// sizeVarint is the encoded length of v.
func sizeVarint(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// sizeVarlong is the encoded length of v.
func sizeVarlong(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// readVarint decodes a zig-zag int32 from the start of b. n > 0 is the number
// of bytes used; n == varintShort means b ended first, n == varintOverlong
// that the encoding is longer than 5 bytes or overflows 32 bits.
func readVarint(b []byte) (v int32, n int) {
	var u uint32
	for i := 0; i < maxVarintLen32; i++ {
		if i >= len(b) {
			return 0, varintShort
		}
		c := b[i]
		if i == maxVarintLen32-1 && c > 0x0f {
			return 0, varintOverlong
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, varintOverlong
}

// readVarlong decodes a zig-zag int64 like readVarint, allowing 10 bytes.
func readVarlong(b []byte) (v int64, n int) {
	var u uint64
	for i := 0; i < maxVarintLen64; i++ {
		if i >= len(b) {
			return 0, varintShort
		}
		c := b[i]
		if i == maxVarintLen64-1 && c > 0x01 {
			return 0, varintOverlong
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, varintOverlong
}
