package record

// ValidateDeep is Validate plus a full decode: decompression, every record's
// framing, the declared count, and offset deltas strictly increasing within
// [0, lastOffsetDelta]. A control batch must hold at most one record, whose
// key is a control key. This is what a recovery or verify pass that wants
// certainty runs; Kafka's own recovery stops at Validate.
func (b Batch) ValidateDeep(pos int64) error {
	var rr RecordReader
	return b.validateDeep(pos, &rr, false)
}

// ValidateProduce is ValidateDeep plus the checks Kafka applies only to
// batches from producers (LogValidator): at least one record,
// lastOffsetDelta+1 == count with deltas 0..count-1, no control batch, and a
// base sequence when there is a producer id. Violations wrap ErrProduce.
func (b Batch) ValidateProduce(pos int64) error {
	var rr RecordReader
	return b.validateDeep(pos, &rr, true)
}

// CheckProduceHeader is the part of ValidateProduce that reads only the
// header, cheap enough for every batch from a producer whatever else is
// checked: at least one record, lastOffsetDelta+1 == count (else a batch
// could claim up to 2^31 offsets whatever it holds), no control batch, a
// base sequence when there is a producer id. Violations wrap ErrProduce. b
// must hold the 61-byte header.
func (b Batch) CheckProduceHeader(pos int64) error {
	base, count, last := b.BaseOffset(), b.NumRecords(), b.LastOffsetDelta()
	switch {
	case count == 0:
		return Corrupt(ErrProduce, pos, base, "batch holds no records")
	case int64(last)+1 != int64(count):
		return Corrupt(ErrProduce, pos, base, "last offset delta %d with %d records", last, count)
	case b.IsControl():
		return Corrupt(ErrProduce, pos, base, "control batch")
	case b.ProducerID() >= 0 && b.BaseSequence() < 0:
		return Corrupt(ErrProduce, pos, base, "producer id %d without a base sequence", b.ProducerID())
	}
	return nil
}

// ValidateDeepWith is ValidateDeep (or ValidateProduce when produce is true)
// reusing rr's decompression buffer.
func (b Batch) ValidateDeepWith(pos int64, rr *RecordReader, produce bool) error {
	return b.validateDeep(pos, rr, produce)
}

func (b Batch) validateDeep(pos int64, rr *RecordReader, produce bool) error {
	if err := b.Validate(pos); err != nil {
		return err
	}
	return b.ValidateRecordsWith(pos, rr, produce)
}

// ValidateRecordsWith is ValidateDeepWith without Validate's header and CRC
// checks, for a caller that has just run Validate itself (the broker's
// produce path, which must not compute a megabyte's CRC twice).
func (b Batch) ValidateRecordsWith(pos int64, rr *RecordReader, produce bool) error {
	base, count, last := b.BaseOffset(), b.NumRecords(), b.LastOffsetDelta()
	if produce {
		if err := b.CheckProduceHeader(pos); err != nil {
			return err
		}
	}
	if b.IsControl() && count > 1 {
		return Corrupt(ErrBadCount, pos, base, "control batch with %d records", count)
	}
	rr.Reset(b, pos)
	prev := int64(-1)
	i := int64(0)
	for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
		d := rec.Offset - base
		if d <= prev || d > int64(last) {
			return Corrupt(ErrBadRecord, pos, base, "record %d has offset delta %d after %d (last offset delta %d)", i, d, prev, last)
		}
		if produce && d != i {
			return Corrupt(ErrProduce, pos, base, "record %d has offset delta %d", i, d)
		}
		if b.IsControl() {
			if _, _, err := ParseControlKey(rec.Key); err != nil {
				return Corrupt(ErrBadRecord, pos, base, "%v", err)
			}
		}
		prev = d
		i++
	}
	return rr.Err()
}

// ValidateEntry checks one whole log entry shallowly, whatever its magic:
// framing, size and CRC (CRC-32C for v2, CRC-32 IEEE for v0/v1). It does not
// decompress. pos is used in errors.
func ValidateEntry(entry []byte, pos int64) error {
	h, err := ParseEntryHeader(entry, pos)
	if err != nil {
		return err
	}
	if h.TotalSize() != int64(len(entry)) {
		if h.TotalSize() > int64(len(entry)) {
			return Corrupt(ErrTruncated, pos, h.Offset, "entry of %d bytes, have %d", h.TotalSize(), len(entry))
		}
		return Corrupt(ErrBadSize, pos, h.Offset, "entry of %d bytes in a slice of %d", h.TotalSize(), len(entry))
	}
	if h.Magic == 2 {
		return Batch(entry).Validate(pos)
	}
	return ValidateLegacy(entry, pos)
}
