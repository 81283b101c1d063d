package record

import (
	"fmt"
	"math"
)

// Header is a record header. Key is never null on the wire; Value nil means a
// null value (length -1), an empty non-nil slice an empty one.
type Header struct {
	Key   string
	Value []byte
}

// Record is one v2 record.
//
// When decoded, Offset is absolute (base offset + offset delta) and Timestamp
// is absolute (base timestamp + delta, or the batch's max timestamp when the
// batch uses LogAppendTime). Key, Value and header values alias the batch bytes
// (or the decompression buffer) they were decoded from.
//
// When encoded by AppendBatch or Builder, Offset is ignored unless
// BatchOptions.KeepOffsets is set: records then get offset deltas 0, 1, 2, ...
// in order. With KeepOffsets the delta is Offset - BatchOptions.BaseOffset,
// which must increase strictly from record to record (gaps allowed).
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte // nil = null key
	Value     []byte // nil = null value (a tombstone)
	Headers   []Header
}

// IsTombstone reports whether the record has a null value.
func (r *Record) IsTombstone() bool { return r.Value == nil }

// MaxRecordOverhead is the largest size of a record's fixed fields: length
// (5), attributes (1), timestamp delta (10) and offset delta (5).
const MaxRecordOverhead = 21

// lenOrNull is the length field for b: -1 when nil.
func lenOrNull(b []byte) int32 {
	if b == nil {
		return -1
	}
	return int32(len(b))
}

// recordBodySize is the number of bytes after the record's length varint.
func recordBodySize(r *Record, offDelta int32, tsDelta int64) (int, error) {
	if len(r.Key) > math.MaxInt32/2 || len(r.Value) > math.MaxInt32/2 || len(r.Headers) > math.MaxInt32/2 {
		return 0, fmt.Errorf("%w: record too large", ErrBadOptions)
	}
	n := 1 + sizeVarlong(tsDelta) + sizeVarint(offDelta)
	n += sizeVarint(lenOrNull(r.Key)) + len(r.Key)
	n += sizeVarint(lenOrNull(r.Value)) + len(r.Value)
	n += sizeVarint(int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		if len(h.Key) > math.MaxInt32/2 || len(h.Value) > math.MaxInt32/2 {
			return 0, fmt.Errorf("%w: header too large", ErrBadOptions)
		}
		n += sizeVarint(int32(len(h.Key))) + len(h.Key)
		n += sizeVarint(lenOrNull(h.Value)) + len(h.Value)
	}
	if n > math.MaxInt32/2 {
		return 0, fmt.Errorf("%w: record of %d bytes is too large", ErrBadOptions, n)
	}
	return n, nil
}

// appendRecord encodes r with the given deltas.
func appendRecord(dst []byte, r *Record, offDelta int32, tsDelta int64) ([]byte, error) {
	n, err := recordBodySize(r, offDelta, tsDelta)
	if err != nil {
		return dst, err
	}
	dst = appendVarint(dst, int32(n))
	dst = append(dst, 0) // attributes
	dst = appendVarlong(dst, tsDelta)
	dst = appendVarint(dst, offDelta)
	dst = appendVarint(dst, lenOrNull(r.Key))
	dst = append(dst, r.Key...)
	dst = appendVarint(dst, lenOrNull(r.Value))
	dst = append(dst, r.Value...)
	dst = appendVarint(dst, int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendVarint(dst, lenOrNull(h.Value))
		dst = append(dst, h.Value...)
	}
	return dst, nil
}

// rawRecord is a record as stored: deltas rather than absolute values.
type rawRecord struct {
	tsDelta  int64
	offDelta int32
	key      []byte
	value    []byte
	headers  []Header
}

// recordReader reads fields from one record's body, holding its first error.
type fieldReader struct {
	b   []byte
	err string
}

func (f *fieldReader) varint(what string) int32 {
	return f.varintSuffix(what, "")
}

// varintSuffix is varint for a field named what+suffix; the name is only
// built on failure (this runs for every field of every record).
func (f *fieldReader) varintSuffix(what, suffix string) int32 {
	if f.err != "" {
		return 0
	}
	v, n := readVarint(f.b)
	switch n {
	case varintShort:
		f.err = what + suffix + ": varint runs past the record"
		return 0
	case varintOverlong:
		f.err = what + suffix + ": varint longer than 5 bytes or overflowing 32 bits"
		return 0
	}
	f.b = f.b[n:]
	return v
}

func (f *fieldReader) varlong(what string) int64 {
	if f.err != "" {
		return 0
	}
	v, n := readVarlong(f.b)
	switch n {
	case varintShort:
		f.err = what + ": varlong runs past the record"
		return 0
	case varintOverlong:
		f.err = what + ": varlong longer than 10 bytes or overflowing 64 bits"
		return 0
	}
	f.b = f.b[n:]
	return v
}

// bytes reads a length-prefixed field; -1 is null when nullable.
func (f *fieldReader) bytes(what string, nullable bool) []byte {
	l := f.varintSuffix(what, " length")
	if f.err != "" {
		return nil
	}
	if l == -1 && nullable {
		return nil
	}
	if l < 0 {
		f.err = fmt.Sprintf("%s length %d", what, l)
		return nil
	}
	if int(l) > len(f.b) {
		f.err = fmt.Sprintf("%s length %d exceeds the %d bytes left in the record", what, l, len(f.b))
		return nil
	}
	v := f.b[:l:l]
	f.b = f.b[l:]
	return v
}

// decodeRecord decodes the record at the start of b, appending its headers to
// hdrs. It returns the bytes used and, on failure, a description.
func decodeRecord(b []byte, r *rawRecord, hdrs []Header) (int, []Header, string) {
	l, n := readVarint(b)
	switch {
	case n == varintShort:
		return 0, hdrs, "record length varint runs past the batch"
	case n == varintOverlong:
		return 0, hdrs, "record length varint longer than 5 bytes"
	case l < 0:
		return 0, hdrs, fmt.Sprintf("record length %d", l)
	case int64(l) > int64(len(b)-n):
		return 0, hdrs, fmt.Sprintf("record length %d exceeds the %d bytes left in the batch", l, len(b)-n)
	}
	f := fieldReader{b: b[n : n+int(l)]}
	if len(f.b) < 1 {
		return 0, hdrs, "record too short for its attributes"
	}
	f.b = f.b[1:] // attributes: unused
	r.tsDelta = f.varlong("timestamp delta")
	r.offDelta = f.varint("offset delta")
	r.key = f.bytes("key", true)
	r.value = f.bytes("value", true)
	hc := f.varint("headers count")
	if f.err == "" && (hc < 0 || int(hc) > len(f.b)) {
		f.err = fmt.Sprintf("headers count %d with %d bytes left in the record", hc, len(f.b))
	}
	start := len(hdrs)
	for i := int32(0); i < hc && f.err == ""; i++ {
		k := f.bytes("header key", false)
		v := f.bytes("header value", true)
		if f.err == "" {
			hdrs = append(hdrs, Header{Key: string(k), Value: v})
		}
	}
	if f.err != "" {
		return 0, hdrs[:start], f.err
	}
	if len(f.b) != 0 {
		return 0, hdrs[:start], fmt.Sprintf("record length %d leaves %d bytes unread", l, len(f.b))
	}
	if len(hdrs) > start {
		r.headers = hdrs[start:len(hdrs):len(hdrs)]
	} else {
		r.headers = nil
	}
	return n + int(l), hdrs, ""
}
