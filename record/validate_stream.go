package record

import (
	"fmt"
	"io"
)

// streamWindow is how many decompressed bytes a StreamValidator holds.
const streamWindow = 32 << 10

// StreamOptions select the checks of StreamValidator.Validate.
type StreamOptions struct {
	// Produce adds ValidateProduce's checks: CheckProduceHeader and offset
	// deltas 0..count-1.
	Produce bool
	// RequireKeys fails a record with a null key (ErrNullKey), as a
	// compacted topic requires.
	RequireKeys bool
	// MaxDecompressed caps the decompressed bytes (ErrCompression beyond);
	// 0 means MaxDecompressedSize.
	MaxDecompressed int64
}

// StreamValidator checks the records of v2 batches as their records section
// decompresses, one record at a time, the way Kafka's LogValidator walks a
// compressed batch with its skip-key-value iterator: each record's framing
// (length, fields, headers count) is checked against its length, keys,
// values and header bytes are skipped rather than kept, and the count,
// offset deltas and trailing bytes are checked as ValidateDeep checks them.
// The memory held is a 32 KiB window plus the decoder's (StreamMemory),
// whatever the batch decompresses to: a decompression bomb costs time
// bounded by MaxDecompressed, not memory. Decoders are pooled; a
// StreamValidator is for one goroutine at a time and may be reused.
type StreamValidator struct {
	dec   streamDecoder
	win   []byte
	r, w  int
	eof   bool
	err   error // first error; sticky for one Validate
	total int64 // decompressed bytes read
	max   int64
	zero  int // consecutive empty reads

	// per batch, for errors
	pos   int64
	base  int64
	codec Codec
	count int32
	i     int32
	left  int // bytes left in the current record
	rlen  int32
}

// Validate checks b's header shallowly (as RecordReader.Reset does; run
// Validate for the CRC) and its records as a stream. Errors are
// corruption errors with the sentinels ValidateDeep uses (ErrCompression,
// ErrBadRecord, ErrBadCount, ErrProduce) plus ErrNullKey.
func (v *StreamValidator) Validate(b Batch, pos int64, o StreamOptions) error {
	if err := checkHeader(b, pos); err != nil {
		return err
	}
	v.pos, v.base, v.codec, v.count, v.i = pos, b.BaseOffset(), b.Codec(), b.NumRecords(), 0
	if o.Produce {
		if err := b.CheckProduceHeader(pos); err != nil {
			return err
		}
	}
	control := b.IsControl()
	if control && v.count > 1 {
		return Corrupt(ErrBadCount, pos, v.base, "control batch with %d records", v.count)
	}
	data := b.RecordsBytes()
	if v.count == 0 && len(data) == 0 {
		return nil
	}
	if v.win == nil {
		v.win = make([]byte, streamWindow)
	}
	v.r, v.w, v.eof, v.err, v.total, v.zero = 0, 0, false, nil, 0, 0
	v.max = o.MaxDecompressed
	if v.max <= 0 {
		v.max = int64(MaxDecompressedSize)
	}
	defer v.dec.close()
	if err := v.dec.open(v.codec, data); err != nil {
		return v.compression(err)
	}
	last := int64(b.LastOffsetDelta())
	prev := int64(-1)
	var key [ControlKeySize]byte
	for ; v.i < v.count; v.i++ {
		if len(v.fill(1)) == 0 {
			if v.err != nil {
				return v.err
			}
			return Corrupt(ErrBadCount, pos, v.base, "record count %d but the records end after %d", v.count, v.i)
		}
		if !v.recordLength() {
			return v.err
		}
		var d int64
		var kl int
		if v.w-v.r >= v.left { // the whole record is in the window
			off, klen, detail := scanRecord(v.win[v.r : v.r+v.left])
			if detail != "" {
				v.bad(detail)
				return v.err
			}
			v.r += v.left
			v.left = 0
			d, kl = int64(off), klen
		} else if d, kl = v.slowRecord(); v.err != nil {
			return v.err
		}
		if control && kl < ControlKeySize {
			_, _, err := ParseControlKey(key[:max(kl, 0)])
			return Corrupt(ErrBadRecord, pos, v.base, "%v", err)
		}
		if o.RequireKeys && kl < 0 {
			return Corrupt(ErrNullKey, pos, v.base, "record %d of %d has a null key", v.i, v.count)
		}
		if d <= prev || d > last {
			return Corrupt(ErrBadRecord, pos, v.base, "record %d has offset delta %d after %d (last offset delta %d)", v.i, d, prev, last)
		}
		if o.Produce && d != int64(v.i) {
			return Corrupt(ErrProduce, pos, v.base, "record %d has offset delta %d", v.i, d)
		}
		prev = d
	}
	if n := len(v.fill(1)); n > 0 {
		return Corrupt(ErrBadCount, pos, v.base, "bytes left after the %d declared records", v.count)
	}
	return v.err
}

// slowRecord checks the current record field by field as it streams
// through the window (a record longer than the window, or one the window
// does not hold yet at the end of the stream). It returns the offset delta
// and the key length (-1 null).
func (v *StreamValidator) slowRecord() (int64, int) {
	v.left-- // attributes: unused
	v.r++
	v.varlong("timestamp delta")
	d := int64(v.varint("offset delta", ""))
	kl := v.length("key", true)
	v.skip(kl)
	v.skip(v.length("value", true))
	hc := v.varint("headers count", "")
	if v.err == nil && (hc < 0 || int(hc) > v.left) {
		v.bad(fmt.Sprintf("headers count %d with %d bytes left in the record", hc, v.left))
	}
	for j := int32(0); j < hc && v.err == nil; j++ {
		v.skip(v.length("header key", false))
		v.skip(v.length("header value", true))
	}
	if v.err == nil && v.left != 0 {
		v.bad(fmt.Sprintf("record length %d leaves %d bytes unread", v.rlen, v.left))
	}
	return d, kl
}

// scanRecord checks one whole record body (the bytes after its length) as
// decodeRecord does, keeping nothing: it returns the offset delta, the key
// length (-1 null) and, on failure, a description.
func scanRecord(body []byte) (int32, int, string) {
	f := fieldReader{b: body}
	if len(f.b) < 1 {
		return 0, 0, "record too short for its attributes"
	}
	f.b = f.b[1:] // attributes: unused
	f.varlong("timestamp delta")
	off := f.varint("offset delta")
	key := f.bytes("key", true)
	f.bytes("value", true)
	hc := f.varint("headers count")
	if f.err == "" && (hc < 0 || int(hc) > len(f.b)) {
		f.err = fmt.Sprintf("headers count %d with %d bytes left in the record", hc, len(f.b))
	}
	for i := int32(0); i < hc && f.err == ""; i++ {
		f.bytes("header key", false)
		f.bytes("header value", true)
	}
	if f.err != "" {
		return 0, 0, f.err
	}
	if len(f.b) != 0 {
		return 0, 0, fmt.Sprintf("record length %d leaves %d bytes unread", len(body), len(f.b))
	}
	if key == nil {
		return off, -1, ""
	}
	return off, len(key), ""
}

// Decompressed is how many decompressed bytes the last Validate read.
func (v *StreamValidator) Decompressed() int64 { return v.total }

// compression wraps a decoder error as Decompress's are wrapped.
func (v *StreamValidator) compression(err error) error {
	return Corrupt(ErrCompression, v.pos, v.base, "%v", fmt.Errorf("%w: %s: %w", ErrCompression, v.codec, err))
}

// bad records a framing error of the current record.
func (v *StreamValidator) bad(detail string) {
	if v.err == nil {
		v.err = Corrupt(ErrBadRecord, v.pos, v.base, "record %d of %d: %s", v.i, v.count, detail)
	}
}

// fill returns the buffered bytes, reading until at least n are buffered
// or the stream ends (n <= streamWindow).
func (v *StreamValidator) fill(n int) []byte {
	if v.w-v.r >= n || v.eof {
		return v.win[v.r:v.w]
	}
	if v.r > 0 {
		v.w = copy(v.win, v.win[v.r:v.w])
		v.r = 0
	}
	for v.w < n && !v.eof {
		v.read()
	}
	return v.win[v.r:v.w]
}

// read reads once into the free part of the window.
func (v *StreamValidator) read() {
	m, err := v.dec.Read(v.win[v.w:])
	v.w += m
	v.total += int64(m)
	switch {
	case v.total > v.max:
		v.eof = true
		v.setErr(v.compression(errTooLarge))
	case err == io.EOF:
		v.eof = true
	case err != nil:
		v.eof = true
		v.setErr(v.compression(err))
	case m == 0:
		if v.zero++; v.zero > 100 {
			v.eof = true
			v.setErr(v.compression(io.ErrNoProgress))
		}
	default:
		v.zero = 0
	}
}

func (v *StreamValidator) setErr(err error) {
	if v.err == nil {
		v.err = err
	}
}

// ended reports a record that runs past the end of the records (or the
// decoder's error that ended them).
func (v *StreamValidator) ended() {
	if v.err == nil {
		v.bad(fmt.Sprintf("record length %d runs past the end of the records", v.rlen))
	}
}

// recordLength reads the length varint that starts a record.
func (v *StreamValidator) recordLength() bool {
	b := v.fill(5)
	l, n := readVarint(b)
	switch {
	case n == varintShort && v.err != nil:
		return false
	case n == varintShort:
		v.bad("record length varint runs past the batch")
		return false
	case n == varintOverlong:
		v.bad("record length varint longer than 5 bytes")
		return false
	case l < 0:
		v.bad(fmt.Sprintf("record length %d", l))
		return false
	}
	v.r += n
	v.rlen, v.left = l, int(l)
	if v.left < 1 {
		v.bad("record too short for its attributes")
		return false
	}
	if len(v.fill(min(v.left, streamWindow))) == 0 {
		v.ended()
		return false
	}
	return true
}

// varint reads an int32 varint field (named what+suffix in errors) of the
// current record.
func (v *StreamValidator) varint(what, suffix string) int32 {
	if v.err != nil {
		return 0
	}
	b := v.fill(5)
	lim := min(len(b), v.left)
	x, n := readVarint(b[:lim])
	switch n {
	case varintShort:
		if lim == v.left {
			v.bad(what + suffix + ": varint runs past the record")
		} else {
			v.ended()
		}
		return 0
	case varintOverlong:
		v.bad(what + suffix + ": varint longer than 5 bytes or overflowing 32 bits")
		return 0
	}
	v.r += n
	v.left -= n
	return x
}

// varlong reads an int64 varint field of the current record.
func (v *StreamValidator) varlong(what string) int64 {
	if v.err != nil {
		return 0
	}
	b := v.fill(10)
	lim := min(len(b), v.left)
	x, n := readVarlong(b[:lim])
	switch n {
	case varintShort:
		if lim == v.left {
			v.bad(what + ": varlong runs past the record")
		} else {
			v.ended()
		}
		return 0
	case varintOverlong:
		v.bad(what + ": varlong longer than 10 bytes or overflowing 64 bits")
		return 0
	}
	v.r += n
	v.left -= n
	return x
}

// length reads a length-prefixed field's length: -1 for null when
// nullable; it must fit the record. The field's bytes follow (skip).
func (v *StreamValidator) length(what string, nullable bool) int {
	l := v.varint(what, " length")
	if v.err != nil {
		return 0
	}
	if l == -1 && nullable {
		return -1
	}
	if l < 0 {
		v.bad(fmt.Sprintf("%s length %d", what, l))
		return 0
	}
	if int(l) > v.left {
		v.bad(fmt.Sprintf("%s length %d exceeds the %d bytes left in the record", what, l, v.left))
		return 0
	}
	return int(l)
}

// skip consumes n bytes of the current record without keeping them.
func (v *StreamValidator) skip(n int) {
	if v.err != nil || n <= 0 {
		return
	}
	v.left -= n
	for n > 0 {
		if v.r == v.w {
			v.r, v.w = 0, 0
			if v.eof {
				v.ended()
				return
			}
			v.read()
			continue
		}
		k := min(n, v.w-v.r)
		v.r += k
		n -= k
	}
}
