package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strings"
	"testing"

	"github.com/golang/snappy"

	"github.com/stratalog/strata/record"
)

// xerialHeader is snappy-java's stream header: magic, version 1, compatible 1.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

func checkDecompressed(t *testing.T, c record.Codec, out []byte, err error) bool {
	t.Helper()
	if err != nil {
		if !errors.Is(err, record.ErrCompression) {
			t.Fatalf("error does not wrap ErrCompression: %v", err)
		}
		return false
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
	return true
}

// FuzzDecompressSnappy feeds both snappy framings: with xerial set, the input
// follows a valid xerial stream header (so the fuzzer works on the chunk
// framing, not on finding the magic); otherwise it is a raw snappy block. A raw
// block that decodes must decode the same when wrapped as a one-chunk xerial
// stream.
func FuzzDecompressSnappy(f *testing.F) {
	in := []byte(strings.Repeat("snappy seed text ", 80))
	framed, err := record.Compress(record.CodecSnappy, nil, in)
	if err != nil {
		f.Fatal(err)
	}
	if !bytes.HasPrefix(framed, xerialHeader) {
		f.Fatalf("Compress(snappy) does not start with the xerial header: %x", framed[:16])
	}
	f.Add(true, framed[len(xerialHeader):])
	f.Add(false, snappy.Encode(nil, in))
	f.Add(false, snappy.Encode(nil, nil))
	f.Add(true, []byte{})
	f.Add(true, []byte{0, 0, 0, 3, 2, 4, 'a'})
	f.Fuzz(func(t *testing.T, xerial bool, data []byte) {
		src := data
		if xerial {
			src = append(bytes.Clone(xerialHeader), data...)
		}
		out, err := record.Decompress(record.CodecSnappy, nil, src)
		if !checkDecompressed(t, record.CodecSnappy, out, err) || xerial {
			return
		}
		if bytes.HasPrefix(data, xerialHeader[:8]) {
			return // the xerial magic: not read as a raw block
		}
		wrapped := append(bytes.Clone(xerialHeader), binary.BigEndian.AppendUint32(nil, uint32(len(data)))...)
		wrapped = append(wrapped, data...)
		again, err := record.Decompress(record.CodecSnappy, nil, wrapped)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("raw block decodes, the same block as a xerial chunk does not: %v", err)
		}
	})
}

// xxh32 is XXH32 with seed 0, for lz4 frame header checksums.
func xxh32(b []byte) uint32 {
	var p1, p2, p3, p4, p5 uint32 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
	n := uint32(len(b))
	var h uint32
	if len(b) >= 16 {
		v := [4]uint32{p1 + p2, p2, 0, 0 - p1}
		for ; len(b) >= 16; b = b[16:] {
			for i := range v {
				v[i] = bits.RotateLeft32(v[i]+binary.LittleEndian.Uint32(b[4*i:])*p2, 13) * p1
			}
		}
		h = bits.RotateLeft32(v[0], 1) + bits.RotateLeft32(v[1], 7) + bits.RotateLeft32(v[2], 12) + bits.RotateLeft32(v[3], 18)
	} else {
		h = p5
	}
	h += n
	for ; len(b) >= 4; b = b[4:] {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
	}
	for _, c := range b {
		h = bits.RotateLeft32(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}

// lz4HeaderEnd is the length of src's lz4 frame header (through the header
// checksum byte), or 0 if src does not start with one.
func lz4HeaderEnd(src []byte) int {
	if len(src) < 7 || binary.LittleEndian.Uint32(src) != 0x184D2204 {
		return 0
	}
	n := 7
	if src[4]&0x08 != 0 {
		n += 8
	}
	if src[4]&0x01 != 0 {
		n += 4
	}
	if len(src) < n {
		return 0
	}
	return n
}

// FuzzDecompressLZ4 feeds lz4 frames to the current and the legacy (magic 0)
// decompression paths. mode bit 0: rewrite the header checksum so mutated
// headers get past it; bit 1: write it the way Kafka's magic-0 writers did
// (over the magic number too), which only the legacy path accepts. Whatever
// the current path decodes, the legacy path decodes the same.
func FuzzDecompressLZ4(f *testing.F) {
	in := []byte(strings.Repeat("lz4 seed text, lz4 seed text ", 60))
	cur, err := record.Compress(record.CodecLZ4, nil, in)
	if err != nil {
		f.Fatal(err)
	}
	n := lz4HeaderEnd(cur)
	if n == 0 || cur[n-1] != byte(xxh32(cur[4:n-1])>>8) {
		f.Fatal("xxh32 disagrees with the lz4 writer's header checksum")
	}
	old, err := record.CompressLegacy(0, record.CodecLZ4, nil, in)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), cur)
	f.Add(uint8(0), old)
	f.Add(uint8(1), cur)
	f.Add(uint8(3), cur)
	f.Add(uint8(1), cur[:n+4])
	// Two frames with dependent blocks and different contents, decoded
	// before each input: what an input decodes to must not depend on what
	// was decoded before it (a reused lz4 reader once kept the previous
	// frame's dictionary).
	var priors [2][]byte
	for i, text := range []string{"first prior frame ", "second, other prior "} {
		p, err := record.Compress(record.CodecLZ4, nil, []byte(strings.Repeat(text, 4000)))
		if err != nil {
			f.Fatal(err)
		}
		p[4] &^= 0x20
		p[6] = byte(xxh32(p[4:6]) >> 8)
		priors[i] = p
	}
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		data = bytes.Clone(data)
		if n := lz4HeaderEnd(data); n > 0 && mode&1 != 0 {
			if mode&2 != 0 {
				data[n-1] = byte(xxh32(data[:n-1]) >> 8)
			} else {
				data[n-1] = byte(xxh32(data[4:n-1]) >> 8)
			}
		}
		var outs [2][]byte
		var errs [2]error
		for i, p := range priors {
			if _, err := record.Decompress(record.CodecLZ4, nil, p); err != nil {
				t.Fatal(err)
			}
			outs[i], errs[i] = record.Decompress(record.CodecLZ4, nil, data)
		}
		if (errs[0] == nil) != (errs[1] == nil) || !bytes.Equal(outs[0], outs[1]) {
			t.Fatalf("the result depends on the frame decoded before: %q (%v) vs %q (%v)", outs[0], errs[0], outs[1], errs[1])
		}
		legacy, lerr := record.DecompressLegacy(0, record.CodecLZ4, nil, data)
		checkDecompressed(t, record.CodecLZ4, legacy, lerr)
		out, err := record.Decompress(record.CodecLZ4, nil, data)
		if checkDecompressed(t, record.CodecLZ4, out, err) && (lerr != nil || !bytes.Equal(out, legacy)) {
			t.Fatalf("current path decodes, legacy path differs: %v", lerr)
		}
	})
}

// FuzzRecordReader puts arbitrary bytes in a v2 batch's records section behind
// a valid header (length, codec, record count and CRC made right), so the
// record decoders see them rather than the header checks. codec bits 0-2 pick
// the codec; with bit 7 the section is compressed first, so the fuzz bytes are
// what the decoder walks after decompression.
func FuzzRecordReader(f *testing.F) {
	addSectionSeeds(f)
	f.Add(uint8(0), int32(2), []byte{})
	f.Add(uint8(0), int32(-1), []byte{2, 0, 0, 0, 1, 2, 0})
	f.Fuzz(func(t *testing.T, codec uint8, count int32, section []byte) {
		bt := sectionBatch(t, codec, count, section)
		var rr record.RecordReader
		checkBatch(t, bt, &rr)
	})
}

// addSectionSeeds seeds a fuzz target of (codec, count, section): the
// records sections of the first seed batches, each under its own index as
// codec, and the first one compressed with every codec (bit 7).
func addSectionSeeds(f *testing.F) {
	for i, b := range seedBatches(f)[:5] {
		bt := record.Batch(b)
		f.Add(uint8(i), bt.NumRecords(), bytes.Clone(b[record.BatchHeaderSize:]))
		if i == 0 {
			for c := 1; c < 5; c++ {
				f.Add(uint8(c)|0x80, bt.NumRecords(), bytes.Clone(b[record.BatchHeaderSize:]))
			}
		}
	}
}

// sectionBatch puts section behind a valid v2 batch header: length, codec
// (bits 0-2 of codec; with bit 7 the section is compressed with it first),
// record count, last offset delta and CRC made right.
func sectionBatch(t *testing.T, codec uint8, count int32, section []byte) record.Batch {
	t.Helper()
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
	return bt
}
