package record

import (
	"encoding/binary"
	"testing"
)

// rawBatch wraps hand-made record bytes in a valid header (correct length and
// CRC) declaring count records, compressed with c.
func rawBatch(t *testing.T, c Codec, count int32, lastDelta int32, records []byte) Batch {
	t.Helper()
	opts := DefaultBatchOptions()
	opts.Codec = c
	opts.LastOffsetDelta = lastDelta
	var s encState
	s.reset(opts)
	s.count = count
	b := append([]byte(nil), zeroHeader[:]...)
	if c == CodecNone {
		b = append(b, records...)
	} else {
		var err error
		if b, err = Compress(c, b, records); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.finish(b); err != nil {
		t.Fatal(err)
	}
	return Batch(b)
}

// rec builds a record body from raw fields (no length prefix).
func recBody(tsDelta int64, offDelta int32, key, value []byte, hdrs int32) []byte {
	b := []byte{0}
	b = appendVarlong(b, tsDelta)
	b = appendVarint(b, offDelta)
	b = appendVarint(b, lenOrNull(key))
	b = append(b, key...)
	b = appendVarint(b, lenOrNull(value))
	b = append(b, value...)
	return appendVarint(b, hdrs)
}

func withLen(body []byte, l int32) []byte { return append(appendVarint(nil, l), body...) }

func TestBadBatches(t *testing.T) {
	good := recBody(0, 0, []byte("k"), []byte("v"), 0)
	rec1 := recBody(0, 1, nil, []byte("v"), 0)
	overlong := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00} // 6-byte varint
	cases := []struct {
		name  string
		b     Batch
		want  error
		deep  bool // only ValidateDeep (not Records) catches it
		codec Codec
	}{
		{"length too long", rawBatch(t, 0, 1, 0, withLen(good, int32(len(good)+1))), ErrBadRecord, false, 0},
		{"length too short", rawBatch(t, 0, 1, 0, append(withLen(good[:len(good)-1], int32(len(good)-1)), good[len(good)-1])), ErrBadRecord, false, 0},
		{"length leaves bytes", rawBatch(t, 0, 1, 0, withLen(append(good, 0), int32(len(good)+1))), ErrBadRecord, false, 0},
		{"negative length", rawBatch(t, 0, 1, 0, withLen(good, -3)), ErrBadRecord, false, 0},
		{"overlong length varint", rawBatch(t, 0, 1, 0, append(overlong, good...)), ErrBadRecord, false, 0},
		{"overlong offset delta", rawBatch(t, 0, 1, 0, withLen(append(append([]byte{0, 0}, overlong...), 1, 1, 0), 10)), ErrBadRecord, false, 0},
		{"key length -2", rawBatch(t, 0, 1, 0, withLen([]byte{0, 0, 0, 3, 0, 0}, 6)), ErrBadRecord, false, 0},
		{"header count -1", rawBatch(t, 0, 1, 0, withLen(recBody(0, 0, nil, nil, -1), int32(len(recBody(0, 0, nil, nil, -1))))), ErrBadRecord, false, 0},
		{"header count huge", rawBatch(t, 0, 1, 0, withLen(recBody(0, 0, nil, nil, 1000), int32(len(recBody(0, 0, nil, nil, 1000))))), ErrBadRecord, false, 0},
		{"null header key", rawBatch(t, 0, 1, 0, withLen(append(recBody(0, 0, nil, nil, 1), 1, 0), int32(len(recBody(0, 0, nil, nil, 1))+2))), ErrBadRecord, false, 0},
		{"count above records", rawBatch(t, 0, 2, 1, withLen(good, int32(len(good)))), ErrBadCount, false, 0},
		{"count above records (lz4)", rawBatch(t, CodecLZ4, 2, 1, withLen(good, int32(len(good)))), ErrBadCount, false, 0},
		{"records after count", rawBatch(t, 0, 1, 1, append(withLen(good, int32(len(good))), withLen(rec1, int32(len(rec1)))...)), ErrBadCount, false, 0},
		{"records after count (zstd)", rawBatch(t, CodecZstd, 1, 1, append(withLen(good, int32(len(good))), withLen(rec1, int32(len(rec1)))...)), ErrBadCount, false, 0},
		{"count 0 with records", rawBatch(t, 0, 0, 0, withLen(good, int32(len(good)))), ErrBadCount, false, 0},
		{"offsets backwards", rawBatch(t, 0, 2, 1, append(withLen(rec1, int32(len(rec1))), withLen(good, int32(len(good)))...)), ErrBadRecord, true, 0},
		{"offset past lastOffsetDelta", rawBatch(t, 0, 1, 0, withLen(rec1, int32(len(rec1)))), ErrBadRecord, true, 0},
		{"gzip garbage", rawBatch(t, CodecNone, 1, 0, []byte("garbage that is not gzip")), ErrCompression, false, CodecGzip},
		{"snappy garbage", rawBatch(t, CodecNone, 1, 0, []byte("\x82SNAPPY\x00garbage that is not snappy")), ErrCompression, false, CodecSnappy},
		{"lz4 garbage", rawBatch(t, CodecNone, 1, 0, []byte("garbage that is not lz4")), ErrCompression, false, CodecLZ4},
		{"zstd garbage", rawBatch(t, CodecNone, 1, 0, []byte("garbage that is not zstd")), ErrCompression, false, CodecZstd},
		{"codec 6", rawBatch(t, CodecNone, 1, 0, []byte("whatever")), ErrCompression, false, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.b
			if c.codec != 0 { // relabel the codec after the fact
				binary.BigEndian.PutUint16(b[posAttributes:], uint16(c.codec))
				b.UpdateCRC()
			}
			if err := b.Validate(0); err != nil {
				t.Fatalf("shallow validation should pass: %v", err)
			}
			wantCorrupt(t, b.ValidateDeep(0), c.want)
			_, err := b.Records(nil)
			var rr RecordReader
			rr.Reset(b, 0)
			for _, ok := rr.Next(); ok; _, ok = rr.Next() {
			}
			if c.deep {
				if err != nil || rr.Err() != nil {
					t.Fatalf("decode should pass: %v / %v", err, rr.Err())
				}
				return
			}
			wantCorrupt(t, err, c.want)
			wantCorrupt(t, rr.Err(), c.want)
		})
	}
}

func TestBadBatchHeaders(t *testing.T) {
	good := mustBatch(t, DefaultBatchOptions(), kvRecords(3, 10))
	mut := func(f func(b Batch) Batch) Batch { return f(append(Batch(nil), good...)) }
	cases := map[string]struct {
		b    Batch
		want error
	}{
		"short":       {good[:60], ErrTruncated},
		"truncated":   {good[:len(good)-1], ErrBadSize},
		"magic 1":     {mut(func(b Batch) Batch { b[posMagic] = 1; return b }), ErrBadMagic},
		"crc":         {mut(func(b Batch) Batch { b[len(b)-1] ^= 1; return b }), ErrCRC},
		"length -1":   {mut(func(b Batch) Batch { binary.BigEndian.PutUint32(b[posLength:], 0xffffffff); return b }), ErrBadSize},
		"length huge": {mut(func(b Batch) Batch { binary.BigEndian.PutUint32(b[posLength:], 1<<31-1); return b }), ErrBadSize},
		"count negative": {mut(func(b Batch) Batch {
			binary.BigEndian.PutUint32(b[posRecordsCount:], 0x80000000)
			b.UpdateCRC()
			return b
		}), ErrBadCount},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			wantCorrupt(t, c.b.Validate(3), c.want)
			wantCorrupt(t, c.b.ValidateDeep(3), c.want)
			if name != "crc" {
				_, err := c.b.Records(nil)
				wantCorrupt(t, err, c.want)
			}
		})
	}
	// ValidateEntry on v2 with a slice that disagrees with the size.
	wantCorrupt(t, ValidateEntry(good[:len(good)-1], 0), ErrTruncated)
	wantCorrupt(t, ValidateEntry(append(append(Batch(nil), good...), 0), 0), ErrBadSize)
}
