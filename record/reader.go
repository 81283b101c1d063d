package record

// RecordReader decodes the records of one v2 batch in order, without
// allocating per record beyond header keys (strings). It decompresses into a
// buffer it reuses across batches and holds its first error, like a kbin
// reader: loop on Next, then check Err once.
//
//	var rr record.RecordReader
//	rr.Reset(batch, pos)
//	for rec, ok := rr.Next(); ok; rec, ok = rr.Next() { ... }
//	if err := rr.Err(); err != nil { ... }
//
// A Record's Key, Value and header values alias the batch or the reader's
// decompression buffer and stay valid until the next Reset; its Headers slice
// is reused by the next call to Next.
type RecordReader struct {
	b      Batch
	pos    int64
	data   []byte // records: the batch tail or dbuf
	dbuf   []byte
	hdrs   []Header
	count  int32
	i      int32
	base   int64
	baseTs int64
	logApp bool
	maxTs  int64
	err    error
}

// Reset starts reading b (a whole batch; pos is its position for errors). It
// checks the header shallowly (magic, length field, count) but not the CRC:
// call b.Validate for that, or use ValidateDeep. Errors surface through Err.
func (r *RecordReader) Reset(b Batch, pos int64) {
	*r = RecordReader{dbuf: r.dbuf[:0], hdrs: r.hdrs[:0], b: b, pos: pos}
	if err := checkHeader(b, pos); err != nil {
		r.err = err
		return
	}
	r.count = b.NumRecords()
	r.base = b.BaseOffset()
	r.baseTs = b.BaseTimestamp()
	r.logApp = b.IsLogAppendTime()
	r.maxTs = b.MaxTimestamp()
	r.data = b.RecordsBytes()
	if c := b.Codec(); c != CodecNone && (r.count > 0 || len(r.data) > 0) {
		var err error
		r.dbuf, err = Decompress(c, r.dbuf[:0], r.data)
		if err != nil {
			r.err = Corrupt(ErrCompression, pos, r.base, "%v", err)
			return
		}
		r.data = r.dbuf
	}
	if r.count == 0 && len(r.data) > 0 {
		r.err = Corrupt(ErrBadCount, pos, r.base, "record count 0 but %d bytes of records", len(r.data))
	}
}

// checkHeader is Validate without the CRC.
func checkHeader(b Batch, pos int64) error {
	if len(b) < BatchHeaderSize {
		return Corrupt(ErrTruncated, pos, -1, "batch of %d bytes is shorter than the %d-byte header", len(b), BatchHeaderSize)
	}
	off := b.BaseOffset()
	if m := b.Magic(); m != 2 {
		return Corrupt(ErrBadMagic, pos, off, "magic %d, want 2", m)
	}
	if n := int64(b.Length()) + LogOverhead; n != int64(len(b)) {
		return Corrupt(ErrBadSize, pos, off, "batch length field says %d bytes, have %d", n, len(b))
	}
	if c := b.NumRecords(); c < 0 {
		return Corrupt(ErrBadCount, pos, off, "record count %d", c)
	}
	return nil
}

// Next returns the next record, or false at the end or on error.
func (r *RecordReader) Next() (Record, bool) {
	if r.err != nil || r.i >= r.count {
		return Record{}, false
	}
	if len(r.data) == 0 {
		r.err = Corrupt(ErrBadCount, r.pos, r.base, "record count %d but the records end after %d", r.count, r.i)
		return Record{}, false
	}
	var raw rawRecord
	n, hdrs, detail := decodeRecord(r.data, &raw, r.hdrs[:0])
	r.hdrs = hdrs
	if detail != "" {
		r.err = Corrupt(ErrBadRecord, r.pos, r.base, "record %d of %d: %s", r.i, r.count, detail)
		return Record{}, false
	}
	r.data = r.data[n:]
	r.i++
	if r.i == r.count && len(r.data) != 0 {
		r.err = Corrupt(ErrBadCount, r.pos, r.base, "%d bytes left after the %d declared records", len(r.data), r.count)
		return Record{}, false
	}
	ts := r.baseTs + raw.tsDelta
	if r.logApp {
		ts = r.maxTs
	}
	return Record{
		Offset:    r.base + int64(raw.offDelta),
		Timestamp: ts,
		Key:       raw.key,
		Value:     raw.value,
		Headers:   raw.headers,
	}, true
}

// minRecordSize is the smallest encoded record: seven one-byte fields.
const minRecordSize = 7

// Err returns the first error met, nil after a clean end.
func (r *RecordReader) Err() error { return r.err }

// Records decodes all records of b, appending them to dst. Unlike
// RecordReader, each record's Headers slice is its own. Keys and values alias
// b (or a fresh decompression buffer). Structure is fully checked (lengths,
// count, trailing bytes); the CRC is not (see Validate and ValidateDeep).
func (b Batch) Records(dst []Record) ([]Record, error) {
	start := len(dst)
	if err := checkHeader(b, -1); err != nil {
		return dst, err
	}
	base, baseTs, maxTs, logApp := b.BaseOffset(), b.BaseTimestamp(), b.MaxTimestamp(), b.IsLogAppendTime()
	data := b.RecordsBytes()
	if c := b.Codec(); c != CodecNone && (b.NumRecords() > 0 || len(data) > 0) {
		var err error
		if data, err = Decompress(c, nil, data); err != nil {
			return dst, Corrupt(ErrCompression, -1, base, "%v", err)
		}
	}
	count := b.NumRecords()
	if int64(count)*minRecordSize > int64(len(data)) {
		return dst, Corrupt(ErrBadCount, -1, base, "record count %d with %d bytes of records", count, len(data))
	}
	var hdrs []Header
	for i := int32(0); i < count; i++ {
		if len(data) == 0 {
			return dst[:start], Corrupt(ErrBadCount, -1, base, "record count %d but the records end after %d", count, i)
		}
		var raw rawRecord
		n, h, detail := decodeRecord(data, &raw, hdrs)
		if detail != "" {
			return dst[:start], Corrupt(ErrBadRecord, -1, base, "record %d of %d: %s", i, count, detail)
		}
		hdrs = h
		data = data[n:]
		ts := baseTs + raw.tsDelta
		if logApp {
			ts = maxTs
		}
		dst = append(dst, Record{Offset: base + int64(raw.offDelta), Timestamp: ts, Key: raw.key, Value: raw.value, Headers: raw.headers})
	}
	if len(data) != 0 {
		return dst[:start], Corrupt(ErrBadCount, -1, base, "%d bytes left after the %d declared records", len(data), count)
	}
	return dst, nil
}
