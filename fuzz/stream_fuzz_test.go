package fuzz

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stratalog/strata/record"
)

// FuzzStreamValidate: arbitrary bytes as a v2 batch's records section
// behind a valid header (as FuzzRecordReader builds it), optionally
// compressed first; the streaming validator the broker runs on produce must
// accept exactly what the whole-batch decoder accepts, with and without the
// produce checks and the compacted-topic key rule.
func FuzzStreamValidate(f *testing.F) {
	for i, b := range seedBatches(f)[:5] {
		bt := record.Batch(b)
		f.Add(uint8(i), bt.NumRecords(), bytes.Clone(b[record.BatchHeaderSize:]))
		if i == 0 {
			for c := 1; c < 5; c++ {
				f.Add(uint8(c)|0x80, bt.NumRecords(), bytes.Clone(b[record.BatchHeaderSize:]))
			}
		}
	}
	f.Add(uint8(0x81), int32(1), []byte{0})
	f.Add(uint8(0), int32(2), []byte{})
	f.Fuzz(func(t *testing.T, codec uint8, count int32, section []byte) {
		c := record.Codec(codec & 0x07 % 5)
		if codec&0x80 != 0 && c != record.CodecNone {
			var err error
			if section, err = record.Compress(c, nil, section); err != nil {
				t.Fatal(err)
			}
		}
		hdr, err := record.AppendBatch(nil, record.DefaultBatchOptions(), seedRecords()[:1])
		if err != nil {
			t.Fatal(err)
		}
		b := append(hdr[:record.BatchHeaderSize:record.BatchHeaderSize], section...)
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
		binary.BigEndian.PutUint16(b[21:], uint16(c))
		binary.BigEndian.PutUint32(b[23:], uint32(max(count-1, 0)))
		binary.BigEndian.PutUint32(b[57:], uint32(count))
		bt := record.Batch(b)
		bt.UpdateCRC()
		var sv record.StreamValidator
		var rr record.RecordReader
		for _, produce := range []bool{false, true} {
			for _, keys := range []bool{false, true} {
				old := bt.ValidateRecordsWith(0, &rr, produce)
				if old == nil && keys {
					rr.Reset(bt, 0)
					for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
						if rec.Key == nil {
							old = record.ErrNullKey
						}
					}
				}
				got := sv.Validate(bt, 0, record.StreamOptions{Produce: produce, RequireKeys: keys})
				if (old == nil) != (got == nil) {
					t.Fatalf("%v, %d records (produce %v, keys %v): whole-batch decoder %v, stream %v", c, count, produce, keys, old, got)
				}
			}
		}
	})
}
