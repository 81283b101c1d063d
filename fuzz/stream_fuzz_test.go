package fuzz

import (
	"testing"

	"github.com/stratalog/strata/record"
)

// FuzzStreamValidate: arbitrary bytes as a v2 batch's records section
// behind a valid header (as FuzzRecordReader builds it), optionally
// compressed first; the streaming validator the broker runs on produce must
// accept exactly what the whole-batch decoder accepts, with and without the
// produce checks and the compacted-topic key rule.
func FuzzStreamValidate(f *testing.F) {
	addSectionSeeds(f)
	f.Add(uint8(0x81), int32(1), []byte{0})
	f.Add(uint8(0), int32(2), []byte{})
	f.Fuzz(func(t *testing.T, codec uint8, count int32, section []byte) {
		bt := sectionBatch(t, codec, count, section)
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
					t.Fatalf("%v, %d records (produce %v, keys %v): whole-batch decoder %v, stream %v", bt.Codec(), count, produce, keys, old, got)
				}
			}
		}
	})
}
