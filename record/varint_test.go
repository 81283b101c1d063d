package record

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestVarintRoundTrip(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 300, -300, math.MaxInt32, math.MinInt32} {
		b := appendVarint(nil, v)
		if len(b) != sizeVarint(v) {
			t.Errorf("%d: size %d, encoded %d", v, sizeVarint(v), len(b))
		}
		// Go's zig-zag varint is the same encoding.
		ref := binary.AppendVarint(nil, int64(v))
		if string(ref) != string(b) {
			t.Errorf("%d: %x, stdlib %x", v, b, ref)
		}
		got, n := readVarint(b)
		if got != v || n != len(b) {
			t.Errorf("%d: read %d (%d bytes)", v, got, n)
		}
	}
	for _, v := range []int64{0, -1, 1 << 40, -(1 << 40), math.MaxInt64, math.MinInt64} {
		b := appendVarlong(nil, v)
		if len(b) != sizeVarlong(v) {
			t.Errorf("%d: size %d, encoded %d", v, sizeVarlong(v), len(b))
		}
		got, n := readVarlong(b)
		if got != v || n != len(b) {
			t.Errorf("%d: read %d (%d bytes)", v, got, n)
		}
	}
}

func TestVarintRejects(t *testing.T) {
	cases := []struct {
		b    []byte
		want int
	}{
		{nil, varintShort},
		{[]byte{0x80}, varintShort},
		{[]byte{0x80, 0x80, 0x80, 0x80}, varintShort},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, varintOverlong}, // 6 bytes
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, varintOverlong},       // overflows 32 bits
	}
	for _, c := range cases {
		if _, n := readVarint(c.b); n != c.want {
			t.Errorf("%x: n=%d, want %d", c.b, n, c.want)
		}
	}
	if _, n := readVarint([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); n != 5 {
		t.Errorf("max 5-byte varint rejected")
	}
	long := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}
	if _, n := readVarlong(long); n != varintOverlong {
		t.Errorf("11-byte varlong: n=%d", n)
	}
	if _, n := readVarlong([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}); n != varintOverlong {
		t.Errorf("overflowing varlong accepted")
	}
	if _, n := readVarlong([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); n != 10 {
		t.Errorf("max varlong rejected")
	}
}
