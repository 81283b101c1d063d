package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/record"
)

// Regenerate the committed seed files: go test ./fuzz -run TestWriteRecordSeeds -update-record-seeds
var updateRecordSeeds = flag.Bool("update-record-seeds", false, "rewrite fuzz/testdata/fuzz seeds for the record targets")

var recordCodecs = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

func init() {
	// Keep a fuzzed decompression bomb from eating the machine.
	record.MaxDecompressedSize = 8 << 20
}

func seedRecords() []record.Record {
	return []record.Record{
		{Timestamp: 1000, Key: []byte("k"), Value: []byte("value value value value")},
		{Timestamp: 998, Key: nil, Value: nil, Headers: []record.Header{{Key: "h", Value: nil}, {Key: "", Value: []byte("x")}}},
		{Timestamp: 1005, Key: []byte{}, Value: []byte(strings.Repeat("abc", 40))},
	}
}

// seedBatches are valid v2 batches of every codec, an empty, a gappy and a
// control batch.
func seedBatches(tb testing.TB) [][]byte {
	var out [][]byte
	for _, c := range recordCodecs {
		opts := record.DefaultBatchOptions()
		opts.Codec, opts.BaseOffset = c, 10
		b, err := record.AppendBatch(nil, opts, seedRecords())
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	opts := record.DefaultBatchOptions()
	empty, _ := record.AppendBatch(nil, opts, nil)
	opts.KeepOffsets, opts.LastOffsetDelta = true, 9
	recs := seedRecords()
	recs[0].Offset, recs[1].Offset, recs[2].Offset = 2, 5, 7
	gappy, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		tb.Fatal(err)
	}
	ctl, _ := record.AppendEndTxnBatch(nil, record.DefaultBatchOptions(), true, 3, 50)
	return append(out, empty, gappy, ctl)
}

// seedLegacy are v0/v1 messages: plain, and wrappers of every legacy codec.
func seedLegacy(tb testing.TB) [][]byte {
	var out [][]byte
	inner := []record.LegacyMessage{{Offset: 3, Timestamp: 7, Key: []byte("a"), Value: []byte("one")}, {Offset: 4, Timestamp: 8, Value: []byte("two")}}
	for _, magic := range []int8{0, 1} {
		out = append(out, record.AppendLegacyMessage(nil, record.LegacyMessage{Offset: 1, Magic: magic, Timestamp: 5, Key: []byte("k"), Value: []byte("v")}))
		for _, c := range recordCodecs[1:4] {
			w, err := record.AppendLegacyWrapper(nil, magic, c, magic == 1, 99, inner)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, w)
		}
	}
	return out
}

func sameRecords(a, b []record.Record) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d records vs %d", len(a), len(b))
	}
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	for i := range a {
		x, y := a[i], b[i]
		if x.Offset != y.Offset || x.Timestamp != y.Timestamp || !eq(x.Key, y.Key) || !eq(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return fmt.Errorf("record %d: %+v vs %+v", i, x, y)
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key || !eq(x.Headers[j].Value, y.Headers[j].Value) {
				return fmt.Errorf("record %d header %d differs", i, j)
			}
		}
	}
	return nil
}

// FuzzBatchDecode feeds arbitrary bytes to the entry Iterator, the
// FileScanner and the v2 decoders. Nothing may panic; every error must be a
// marked corruption; Iterator and FileScanner must agree; and a batch that
// passes ValidateDeep must rebuild (same header options, same codec) into a
// batch that decodes to the same records.
func FuzzBatchDecode(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	for _, b := range seedLegacy(f) {
		f.Add(b)
	}
	f.Add(bytes.Join(seedBatches(f), nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		it := record.NewIterator(data, record.ScanOptions{VerifyCRC: true})
		sc := record.NewFileScanner(bytes.NewReader(data), 0, int64(len(data)), record.ScanOptions{VerifyCRC: true, ReadSize: 64})
		var rr record.RecordReader
		for it.Next() {
			if !sc.Next() || sc.Pos() != it.Pos() || !bytes.Equal(sc.Entry(), it.Entry()) {
				t.Fatalf("scanner disagrees at %d", it.Pos())
			}
			e := it.Entry()
			if it.Header().Magic != 2 {
				err := record.DecodeLegacy(e, it.Pos(), func(record.LegacyMessage) error { return nil })
				if err != nil && !record.IsCorruption(err) {
					t.Fatalf("legacy error not marked: %v", err)
				}
				continue
			}
			b := it.Batch()
			checkBatch(t, b, &rr)
		}
		if sc.Next() {
			t.Fatal("scanner has more entries than the iterator")
		}
		if (it.Err() == nil) != (sc.Err() == nil) || (it.Err() != nil && errors.Is(it.Err(), record.ErrTruncated) != errors.Is(sc.Err(), record.ErrTruncated)) {
			t.Fatalf("iterator error %v, scanner error %v", it.Err(), sc.Err())
		}
		if err := it.Err(); err != nil && !record.IsCorruption(err) {
			t.Fatalf("iterator error not marked: %v", err)
		}
		// The v2 decoders on the raw input, whatever it is, and on a copy with
		// its length field and CRC made right so the deep paths get explored.
		if len(data) >= record.BatchHeaderSize {
			checkBatch(t, record.Batch(data), &rr)
			fixed := record.Batch(bytes.Clone(data))
			binary.BigEndian.PutUint32(fixed[8:], uint32(len(fixed)-record.LogOverhead))
			fixed[16] = 2
			fixed.UpdateCRC()
			checkBatch(t, fixed, &rr)
		}
	})
}

func checkBatch(t *testing.T, b record.Batch, rr *record.RecordReader) {
	recs, err := b.Records(nil)
	if err != nil && !record.IsCorruption(err) {
		t.Fatalf("Records error not marked: %v", err)
	}
	rr.Reset(b, 0)
	n := 0
	for _, ok := rr.Next(); ok; _, ok = rr.Next() {
		n++
	}
	if (rr.Err() == nil) != (err == nil) || (err == nil && n != len(recs)) {
		t.Fatalf("RecordReader (%d, %v) and Records (%d, %v) disagree", n, rr.Err(), len(recs), err)
	}
	if err := b.ValidateDeep(0); err != nil {
		if !record.IsCorruption(err) {
			t.Fatalf("ValidateDeep error not marked: %v", err)
		}
		return
	}
	out, err := record.AppendBatch(nil, b.Options(), recs)
	if errors.Is(err, record.ErrBadOptions) {
		return // e.g. a delete horizon below -1: readable, not writable
	}
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	nb := record.Batch(out)
	if err := nb.ValidateDeep(0); err != nil {
		t.Fatalf("rebuilt batch does not validate: %v", err)
	}
	again, err := nb.Records(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecords(recs, again); err != nil {
		t.Fatalf("rebuild changed records: %v", err)
	}
	attrs := b.Attributes() & 0x7f // bits 7-15 are unused and not kept
	if h, ok := b.DeleteHorizon(); ok && h == record.NoTimestamp {
		attrs &^= record.AttrDeleteHorizon // a horizon of -1 reads as none
	}
	if nb.LastOffsetDelta() != b.LastOffsetDelta() || nb.Codec() != b.Codec() || nb.NumRecords() != b.NumRecords() ||
		nb.ProducerID() != b.ProducerID() || nb.BaseSequence() != b.BaseSequence() || nb.Attributes() != attrs {
		t.Fatalf("rebuild changed the header")
	}
}

// FuzzLegacyDecode feeds arbitrary bytes to the v0/v1 decoders: no panics,
// errors marked, ValidateLegacy and DecodeLegacy agree, and a valid
// uncompressed message re-encodes to the same bytes.
func FuzzLegacyDecode(f *testing.F) {
	for _, b := range seedLegacy(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		shallow := record.ValidateLegacy(data, 0)
		if shallow != nil && !record.IsCorruption(shallow) {
			t.Fatalf("ValidateLegacy error not marked: %v", shallow)
		}
		var msgs []record.LegacyMessage
		deep := record.DecodeLegacy(data, 0, func(m record.LegacyMessage) error {
			msgs = append(msgs, m)
			return nil
		})
		if deep != nil && !record.IsCorruption(deep) {
			t.Fatalf("DecodeLegacy error not marked: %v", deep)
		}
		if deep == nil && shallow != nil {
			t.Fatalf("deep decode passed where shallow failed: %v", shallow)
		}
		if shallow != nil || deep != nil {
			return
		}
		if len(msgs) == 1 && msgs[0].Codec() == record.CodecNone {
			if re := record.AppendLegacyMessage(nil, msgs[0]); !bytes.Equal(re, data) {
				t.Fatalf("re-encoding differs:\n%x\n%x", re, data)
			}
		}
	})
}

// FuzzDecompress feeds arbitrary bytes to each codec's decompressor (and the
// legacy lz4 path): no panics, errors wrap ErrCompression, and whatever
// decompresses survives a compress/decompress round trip.
func FuzzDecompress(f *testing.F) {
	in := []byte(strings.Repeat("kafka compressible input ", 50))
	for _, c := range recordCodecs {
		comp, err := record.Compress(c, nil, in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(c), comp)
	}
	legacy, _ := record.CompressLegacy(0, record.CodecLZ4, nil, in)
	f.Add(uint8(record.CodecLZ4)|0x80, legacy)
	f.Fuzz(func(t *testing.T, codec uint8, data []byte) {
		c := record.Codec(codec & 0x07)
		var out []byte
		var err error
		if codec&0x80 != 0 {
			out, err = record.DecompressLegacy(0, c, nil, data)
		} else {
			out, err = record.Decompress(c, nil, data)
		}
		if err != nil {
			if !errors.Is(err, record.ErrCompression) {
				t.Fatalf("error does not wrap ErrCompression: %v", err)
			}
			return
		}
		if len(out) > record.MaxDecompressedSize {
			t.Fatalf("%d bytes out, limit %d", len(out), record.MaxDecompressedSize)
		}
		comp, err := record.Compress(c, nil, out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := record.Decompress(c, nil, comp)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestWriteRecordSeeds writes corpus files (Go's fuzz corpus format) built
// from valid entries of every codec.
func TestWriteRecordSeeds(t *testing.T) {
	if !*updateRecordSeeds {
		t.Skip("run with -update-record-seeds")
	}
	write := func(target, name string, args ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := "go test fuzz v1\n" + strings.Join(args, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bs := func(b []byte) string { return fmt.Sprintf("[]byte(%q)", b) }
	names := []string{"none", "gzip", "snappy", "lz4", "zstd", "empty", "gappy", "control"}
	for i, b := range seedBatches(t) {
		write("FuzzBatchDecode", "valid_"+names[i], bs(b))
	}
	for i, b := range seedLegacy(t) {
		write("FuzzLegacyDecode", fmt.Sprintf("valid_legacy_%d", i), bs(b))
		write("FuzzBatchDecode", fmt.Sprintf("valid_legacy_%d", i), bs(b))
	}
	in := []byte(strings.Repeat("seed corpus text ", 100))
	for _, c := range recordCodecs {
		comp, _ := record.Compress(c, nil, in)
		write("FuzzDecompress", "valid_"+c.String(), fmt.Sprintf("byte(%q)", rune(c)), bs(comp))
	}
	legacy, _ := record.CompressLegacy(0, record.CodecLZ4, nil, in)
	write("FuzzDecompress", "valid_lz4_v0", fmt.Sprintf("byte(%q)", rune(uint8(record.CodecLZ4)|0x80)), bs(legacy))
}
