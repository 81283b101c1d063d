package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/golang/snappy"
)

func TestCompressRoundTrip(t *testing.T) {
	inputs := [][]byte{{}, []byte("a"), bytes.Repeat([]byte("hello kafka "), 20000), kvRecords(1, 200000)[0].Value}
	for _, c := range allCodecs {
		for _, in := range inputs {
			comp, err := Compress(c, []byte("pre"), in)
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			if string(comp[:3]) != "pre" {
				t.Fatalf("%v: prefix lost", c)
			}
			out, err := Decompress(c, []byte("x"), comp[3:])
			if err != nil {
				t.Fatalf("%v (%d bytes): %v", c, len(in), err)
			}
			if out[0] != 'x' || !bytes.Equal(out[1:], in) {
				t.Fatalf("%v: round trip of %d bytes gave %d", c, len(in), len(out)-1)
			}
		}
	}
}

func TestCompressFormats(t *testing.T) {
	in := bytes.Repeat([]byte("abc"), 50000)
	s, _ := Compress(CodecSnappy, nil, in)
	if !bytes.HasPrefix(s, append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)) {
		t.Fatalf("snappy without xerial header: %x", s[:16])
	}
	l, _ := Compress(CodecLZ4, nil, in)
	if binary.LittleEndian.Uint32(l) != lz4FrameMagic {
		t.Fatal("lz4 magic")
	}
	// FLG: version 01, block independence, no checksums or size; BD: 64 KiB.
	if l[4] != 0x60 || l[5] != 0x40 {
		t.Fatalf("lz4 FLG %#x BD %#x", l[4], l[5])
	}
	if l[6] != byte(xxh32(l[4:6])>>8) {
		t.Fatal("lz4 header checksum")
	}
	// A raw snappy block is accepted too.
	raw := snappy.Encode(nil, in)
	out, err := Decompress(CodecSnappy, nil, raw)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("raw snappy: %v", err)
	}
}

func TestXXH32(t *testing.T) {
	// Reference values of XXH32 with seed 0.
	for in, want := range map[string]uint32{"": 0x02cc5d05, "a": 0x550d7456, "abc": 0x32d153ff,
		"Nobody inspects the spammish repetition": 0xe2293b2f} {
		if got := xxh32([]byte(in)); got != want {
			t.Errorf("xxh32(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func TestLegacyLZ4Checksum(t *testing.T) {
	in := bytes.Repeat([]byte("legacy"), 1000)
	v0, err := CompressLegacy(0, CodecLZ4, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if v0[6] != byte(xxh32(v0[:6])>>8) {
		t.Fatal("v0 frame does not carry Kafka's broken checksum")
	}
	if _, err := Decompress(CodecLZ4, nil, v0); !errors.Is(err, ErrCompression) {
		t.Fatalf("the broken checksum should fail a spec decoder: %v", err)
	}
	out, err := DecompressLegacy(0, CodecLZ4, nil, v0)
	if err != nil || !bytes.Equal(out, in) {
		t.Fatalf("legacy decode: %v", err)
	}
	// A spec-correct frame is accepted in v0 too, a wrong checksum is not.
	v1, _ := CompressLegacy(1, CodecLZ4, nil, in)
	if out, err := DecompressLegacy(0, CodecLZ4, nil, v1); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("correct checksum in v0: %v", err)
	}
	v1[6] ^= 0x55
	if _, err := DecompressLegacy(0, CodecLZ4, nil, v1); !errors.Is(err, ErrCompression) {
		t.Fatalf("bad checksum accepted: %v", err)
	}
	if _, err := DecompressLegacy(1, CodecZstd, nil, []byte{1}); !errors.Is(err, ErrCompression) {
		t.Fatal("zstd accepted for v1")
	}
	if _, err := CompressLegacy(0, CodecZstd, nil, in); err == nil {
		t.Fatal("zstd written for v0")
	}
}

func TestDecompressGarbage(t *testing.T) {
	garbage := [][]byte{nil, {0}, []byte("not compressed at all, just text"), bytes.Repeat([]byte{0xff}, 100)}
	for _, c := range allCodecs[1:] {
		for _, g := range garbage {
			if _, err := Decompress(c, nil, g); c != CodecSnappy || len(g) != 1 {
				if !errors.Is(err, ErrCompression) {
					t.Errorf("%v %x: %v", c, g, err)
				}
			}
		}
		// Truncated valid stream.
		comp, _ := Compress(c, nil, bytes.Repeat([]byte("truncate me "), 1000))
		if _, err := Decompress(c, nil, comp[:len(comp)/2]); !errors.Is(err, ErrCompression) {
			t.Errorf("%v: truncated stream: %v", c, err)
		}
	}
	if _, err := Decompress(9, nil, []byte{1}); !errors.Is(err, ErrCompression) || !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("unknown codec: %v", err)
	}
}

func TestDecompressLimit(t *testing.T) {
	old := MaxDecompressedSize
	defer func() { MaxDecompressedSize = old }()
	in := make([]byte, 1<<20) // zeros compress to almost nothing
	for _, c := range allCodecs {
		comp, err := Compress(c, nil, in)
		if err != nil {
			t.Fatal(err)
		}
		MaxDecompressedSize = 1 << 20
		if _, err := Decompress(c, nil, comp); err != nil {
			t.Fatalf("%v at the limit: %v", c, err)
		}
		MaxDecompressedSize = 1<<20 - 1
		if _, err := Decompress(c, nil, comp); !errors.Is(err, ErrCompression) {
			t.Fatalf("%v over the limit: %v", c, err)
		}
		MaxDecompressedSize = old
	}
}

func TestLegacyLZ4LongHeader(t *testing.T) {
	// FLG with content size and dictionary id: a 19-byte header (fuzz finding).
	in := []byte("\x04\"M\x18input \x19\x00\xff\xff\xffc\xa5\x00\xc9")
	if _, err := DecompressLegacy(0, CodecLZ4, nil, in); !errors.Is(err, ErrCompression) {
		t.Fatalf("got %v", err)
	}
}

// TestLZ4NoDictionaryAcrossFrames: a frame whose matches reach before its own
// start must fail the same whether or not the previous frame decoded had
// dependent blocks. A reused lz4.Reader kept that frame's dictionary and
// completed the bad frame with the previous batch's bytes.
func TestLZ4NoDictionaryAcrossFrames(t *testing.T) {
	// An independent-block frame (FLG 0x60, BD 0x40) whose one block copies
	// from before its start: found by FuzzDecompressLZ4.
	bad := []byte("\x04\"M\x18`@\x00/\x00\x00\x00\xf9\x00010000010101101\x0f\x00\n\x0e\x00\x0f\xff\x00\xff\xff\xff\xff\xff\xff\x87\xe0yz4 seed text \x00\x00\x00\x00")
	bad[6] = byte(xxh32(bad[4:6]) >> 8)
	_, freshErr := Decompress(CodecLZ4, nil, bad)
	if freshErr == nil {
		t.Fatal("the bad frame decodes on a fresh reader")
	}
	prior, err := Compress(CodecLZ4, nil, bytes.Repeat([]byte("earlier batch bytes "), 9000))
	if err != nil {
		t.Fatal(err)
	}
	prior[4] &^= 0x20 // dependent blocks: the reader keeps a dictionary
	prior[6] = byte(xxh32(prior[4:6]) >> 8)
	for _, legacy := range []bool{false, true} {
		if _, err := Decompress(CodecLZ4, nil, prior); err != nil {
			t.Fatal(err)
		}
		var out []byte
		if legacy {
			out, err = DecompressLegacy(0, CodecLZ4, nil, bad)
		} else {
			out, err = Decompress(CodecLZ4, nil, bad)
		}
		if err == nil {
			t.Fatalf("legacy=%v: after a dependent-block frame the bad frame decodes to %q", legacy, out)
		}
	}
}
