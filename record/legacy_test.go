package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func legacyInner(n int, first int64) []LegacyMessage {
	ms := make([]LegacyMessage, n)
	for i := range ms {
		ms[i] = LegacyMessage{Offset: first + int64(i), Timestamp: 1500000000000 + int64(i),
			Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("value %d", i))}
	}
	ms[1].Key = nil   // null key
	ms[2].Value = nil // null value
	return ms
}

func decodeAll(t *testing.T, e []byte) ([]LegacyMessage, error) {
	t.Helper()
	var out []LegacyMessage
	err := DecodeLegacy(e, 0, func(m LegacyMessage) error { out = append(out, m); return nil })
	return out, err
}

func TestLegacyUncompressed(t *testing.T) {
	for _, magic := range []int8{0, 1} {
		e := AppendLegacyMessage(nil, LegacyMessage{Offset: 12, Magic: magic, Timestamp: 99, Key: []byte("k"), Value: nil})
		if err := ValidateLegacy(e, 0); err != nil {
			t.Fatal(err)
		}
		if err := ValidateEntry(e, 0); err != nil {
			t.Fatal(err)
		}
		h, err := ParseEntryHeader(e, 0)
		if err != nil || h.Magic != magic || h.Offset != 12 || h.LastOffset != 12 {
			t.Fatalf("header %+v %v", h, err)
		}
		ms, err := decodeAll(t, e)
		if err != nil || len(ms) != 1 {
			t.Fatal(err)
		}
		m := ms[0]
		wantTs, wantType := int64(-1), NoTimestampType
		if magic == 1 {
			wantTs, wantType = 99, CreateTime
		}
		if m.Offset != 12 || string(m.Key) != "k" || m.Value != nil || !m.Valid || m.Timestamp != wantTs || m.TimestampType != wantType {
			t.Fatalf("v%d: %+v", magic, m)
		}
		size := len(e) - LogOverhead
		if (magic == 0 && size != LegacyOverheadV0+1) || (magic == 1 && size != LegacyOverheadV1+1) {
			t.Fatalf("v%d size %d", magic, size)
		}
		// Bad CRC: shallow and deep.
		e[len(e)-5] ^= 1 // flip a bit in the key
		wantCorrupt(t, ValidateLegacy(e, 0), ErrCRC)
		ms, err = decodeAll(t, e)
		wantCorrupt(t, err, ErrCRC)
		if len(ms) != 1 || ms[0].Valid {
			t.Fatal("CRC mismatch not reported on the message")
		}
	}
}

func TestLegacyCompressed(t *testing.T) {
	for _, magic := range []int8{0, 1} {
		for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
			for _, lat := range []bool{false, true} {
				if lat && magic == 0 {
					continue
				}
				name := fmt.Sprintf("v%d/%v/logAppendTime=%v", magic, c, lat)
				inner := legacyInner(5, 200)
				e, err := AppendLegacyWrapper(nil, magic, c, lat, 1600000000000, inner)
				if err != nil {
					t.Fatal(err)
				}
				if err := ValidateEntry(e, 0); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if int64(binary.BigEndian.Uint64(e)) != 204 {
					t.Fatalf("%s: wrapper offset", name)
				}
				if c == CodecLZ4 && magic == 0 {
					v := e[LogOverhead+14:]
					if v[6] != byte(xxh32(v[:6])>>8) {
						t.Fatalf("%s: lz4 v0 frame without Kafka's checksum", name)
					}
				}
				ms, err := decodeAll(t, e)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(ms) != 5 {
					t.Fatalf("%s: %d messages", name, len(ms))
				}
				for i, m := range ms {
					w := inner[i]
					wantTs, wantType := w.Timestamp, CreateTime
					if magic == 0 {
						wantTs, wantType = -1, NoTimestampType
					} else if lat {
						wantTs, wantType = 1600000000000, LogAppendTimeType
					}
					if m.Offset != w.Offset || !bytesNullEqual(m.Key, w.Key) || !bytesNullEqual(m.Value, w.Value) ||
						m.Timestamp != wantTs || m.TimestampType != wantType || !m.Valid || m.Magic != magic {
						t.Fatalf("%s: message %d: %+v", name, i, m)
					}
				}
			}
		}
	}
}

func TestLegacyV1WrapperOffsetZero(t *testing.T) {
	// librdkafka wrote wrapper offset 0: inner relative offsets are then taken as is.
	e, _ := AppendLegacyWrapper(nil, 1, CodecGzip, false, 0, legacyInner(3, 0))
	binary.BigEndian.PutUint64(e, 0)
	ms, err := decodeAll(t, e)
	if err != nil || ms[2].Offset != 2 {
		t.Fatalf("%v %+v", err, ms)
	}
	// A later wrapper offset shifts them.
	binary.BigEndian.PutUint64(e, 1000)
	ms, _ = decodeAll(t, e)
	if ms[0].Offset != 998 || ms[2].Offset != 1000 {
		t.Fatalf("offsets %d..%d", ms[0].Offset, ms[2].Offset)
	}
}

func TestLegacyBadInput(t *testing.T) {
	good := AppendLegacyMessage(nil, LegacyMessage{Offset: 1, Magic: 1, Key: []byte("k"), Value: []byte("v")})
	mut := func(f func(e []byte) []byte) []byte {
		e := f(append([]byte(nil), good...))
		binary.BigEndian.PutUint32(e[legacyPosCRC:], crc32IEEE(e[legacyPosMagic:]))
		return e
	}
	cases := map[string]struct {
		e    []byte
		want error
	}{
		"attributes bits 4-7": {mut(func(e []byte) []byte { e[legacyPosAttrs] = 0x10; return e }), ErrBadRecord},
		"key length past end": {mut(func(e []byte) []byte { binary.BigEndian.PutUint32(e[LogOverhead+14:], 100); return e }), ErrBadRecord},
		"key length -2":       {mut(func(e []byte) []byte { binary.BigEndian.PutUint32(e[LogOverhead+14:], 0xfffffffe); return e }), ErrBadRecord},
		"trailing bytes": {mut(func(e []byte) []byte {
			e = append(e, 0)
			binary.BigEndian.PutUint32(e[8:], uint32(len(e)-12))
			return e
		}), ErrBadRecord},
		"size below v1 min": {mut(func(e []byte) []byte { binary.BigEndian.PutUint32(e[8:], 20); return e[:32] }), ErrBadSize},
		"truncated":         {good[:len(good)-1], ErrTruncated},
		"magic 3":           {mut(func(e []byte) []byte { e[legacyPosMagic] = 3; return e }), ErrBadMagic},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			wantCorrupt(t, ValidateLegacy(c.e, 0), c.want)
			_, err := decodeAll(t, c.e)
			wantCorrupt(t, err, c.want)
		})
	}
	// Wrapper problems.
	wrap := func(magic int8, attrs int8, value []byte) []byte {
		return AppendLegacyMessage(nil, LegacyMessage{Magic: magic, Attributes: attrs, Value: value})
	}
	set := AppendLegacyMessage(nil, LegacyMessage{Magic: 1, Value: []byte("x")})
	gz := func(b []byte) []byte { c, _ := Compress(CodecGzip, nil, b); return c }
	nested := AppendLegacyMessage(nil, LegacyMessage{Magic: 1, Attributes: int8(CodecGzip), Value: gz(set)})
	for name, c := range map[string]struct {
		e    []byte
		want error
	}{
		"zstd wrapper":      {wrap(1, int8(CodecZstd), []byte{1}), ErrCompression},
		"codec 5":           {wrap(1, 5, []byte{1}), ErrUnknownCodec},
		"null value":        {wrap(1, int8(CodecGzip), nil), ErrBadRecord},
		"garbage value":     {wrap(1, int8(CodecGzip), []byte("garbage")), ErrCompression},
		"empty inner set":   {wrap(1, int8(CodecGzip), gz(nil)), ErrBadRecord},
		"inner magic 0":     {wrap(1, int8(CodecGzip), gz(AppendLegacyMessage(nil, LegacyMessage{Magic: 0, Value: []byte("x")}))), ErrBadRecord},
		"nested":            {wrap(1, int8(CodecGzip), gz(nested)), ErrBadRecord},
		"inner truncated":   {wrap(1, int8(CodecGzip), gz(set[:len(set)-1])), ErrBadRecord},
		"inner bad entries": {wrap(1, int8(CodecGzip), gz([]byte{1, 2, 3})), ErrBadRecord},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeAll(t, c.e)
			wantCorrupt(t, err, c.want)
		})
	}
	// fn's error is returned as is.
	stop := errors.New("stop")
	if err := DecodeLegacy(good, 0, func(LegacyMessage) error { return stop }); err != stop {
		t.Fatal(err)
	}
}
