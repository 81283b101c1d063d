package record

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// sampleRecords covers null keys, tombstones, empty values, headers with
// null and empty values, and out-of-order timestamps.
func sampleRecords() []Record {
	return []Record{
		{Timestamp: 1700000000000, Key: []byte("k0"), Value: []byte("value zero")},
		{Timestamp: 1700000000005, Key: nil, Value: []byte("null key")},
		{Timestamp: 1699999999990, Key: []byte("k2"), Value: nil}, // tombstone
		{Timestamp: 1700000000100, Key: []byte{}, Value: []byte{}},
		{Timestamp: 1700000000007, Key: []byte("k4"), Value: bytes.Repeat([]byte("xyz"), 5000),
			Headers: []Header{{Key: "h1", Value: []byte("v1")}, {Key: "null", Value: nil}, {Key: "", Value: []byte{}}}},
	}
}

func recordsEqual(t *testing.T, got, want []Record, base int64, offsets []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		wantOff := base + int64(i)
		if offsets != nil {
			wantOff = offsets[i]
		}
		if g.Offset != wantOff || g.Timestamp != w.Timestamp {
			t.Errorf("record %d: offset %d ts %d, want %d %d", i, g.Offset, g.Timestamp, wantOff, w.Timestamp)
		}
		if !bytesNullEqual(g.Key, w.Key) || !bytesNullEqual(g.Value, w.Value) {
			t.Errorf("record %d: key %q value %.20q, want %q %.20q (nil %v/%v)", i, g.Key, g.Value, w.Key, w.Value, g.Value == nil, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !bytesNullEqual(g.Headers[j].Value, w.Headers[j].Value) {
				t.Errorf("record %d header %d: %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

func bytesNullEqual(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// wantCorrupt asserts err is a corruption wrapping sentinel.
func wantCorrupt(t *testing.T, err, sentinel error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", sentinel)
	}
	if !errors.Is(err, sentinel) || !IsCorruption(err) {
		t.Fatalf("error %v: want %v marked as corruption (is=%v corrupt=%v)", err, sentinel, errors.Is(err, sentinel), IsCorruption(err))
	}
}

func mustBatch(t testing.TB, opts BatchOptions, recs []Record) Batch {
	t.Helper()
	b, err := AppendBatch(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return Batch(b)
}

func kvRecords(n, valueSize int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Timestamp: 1700000000000 + int64(i), Key: []byte(fmt.Sprintf("key-%06d", i)), Value: bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)}
	}
	return recs
}

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
