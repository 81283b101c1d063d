package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
)

// batchAround builds a v2 batch with codec c around records (the raw,
// uncompressed records section), claiming count records and last offset
// delta last, with a valid CRC.
func batchAround(t testing.TB, c Codec, records []byte, count, last int32) Batch {
	t.Helper()
	hdr := mustBatch(t, DefaultBatchOptions(), []Record{{Timestamp: 1700000000000, Value: []byte("x")}})
	data := records
	if c != CodecNone {
		var err error
		if data, err = Compress(c, nil, records); err != nil {
			t.Fatal(err)
		}
	}
	return streamBatch(hdr, c, data, count, last)
}

// streamBatch puts data (already compressed with c) behind hdr's header.
func streamBatch(hdr Batch, c Codec, data []byte, count, last int32) Batch {
	b := append(append([]byte(nil), hdr[:BatchHeaderSize]...), data...)
	binary.BigEndian.PutUint32(b[posLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint16(b[posAttributes:], uint16(int16(c)))
	binary.BigEndian.PutUint32(b[posLastOffsetDelta:], uint32(last))
	binary.BigEndian.PutUint32(b[posRecordsCount:], uint32(count))
	Batch(b).UpdateCRC()
	return b
}

// deepVerdict is what the whole-batch decoder says of b's records, with
// the compacted-topic key rule when keys is set.
func deepVerdict(b Batch, produce, keys bool) error {
	var rr RecordReader
	if err := b.ValidateRecordsWith(0, &rr, produce); err != nil {
		return err
	}
	if keys {
		rr.Reset(b, 0)
		for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
			if rec.Key == nil {
				return ErrNullKey
			}
		}
	}
	return nil
}

// TestStreamValidatorAgrees: on valid batches and on thousands of damaged
// ones (records sections with flipped, dropped, inserted and truncated
// bytes, counts and last offset deltas off by one, compressed streams with
// flipped bytes), in every codec, the streaming validator accepts exactly
// what the whole-batch decoder (ValidateRecordsWith) accepts.
func TestStreamValidatorAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sets := [][]Record{sampleRecords(), kvRecords(50, 40), kvRecords(3, 70000), {{Timestamp: 5, Key: []byte("k")}}}
	var sv StreamValidator
	n := 0
	for _, c := range allCodecs {
		for si, recs := range sets {
			valid := mustBatch(t, DefaultBatchOptions(), recs)
			raw := valid.RecordsBytes()
			count := int32(len(recs))
			check := func(b Batch, what string) {
				t.Helper()
				n++
				for _, produce := range []bool{false, true} {
					for _, keys := range []bool{false, true} {
						old := deepVerdict(b, produce, keys)
						got := sv.Validate(b, 0, StreamOptions{Produce: produce, RequireKeys: keys})
						if (old == nil) != (got == nil) {
							t.Fatalf("%v set %d %s (produce %v keys %v): whole-batch decoder says %v, stream says %v", c, si, what, produce, keys, old, got)
						}
						if got != nil && !IsCorruption(got) {
							t.Fatalf("%v set %d %s: stream error %v is not marked as corruption", c, si, what, got)
						}
					}
				}
			}
			check(batchAround(t, c, raw, count, count-1), "valid")
			check(batchAround(t, c, raw, count+1, count), "count+1")
			check(batchAround(t, c, raw, count-1, count-2), "count-1")
			check(batchAround(t, c, raw, count, count), "last+1")
			check(batchAround(t, c, append(append([]byte(nil), raw...), 0), count, count-1), "a trailing byte")
			mutations, streamMutations := 150, 60
			if raceEnabled { // the same checks, fewer of them: ~10x slower
				mutations, streamMutations = 30, 12
			}
			for range mutations {
				m := append([]byte(nil), raw...)
				switch k := rng.IntN(4); {
				case k == 0 && len(m) > 0:
					m[rng.IntN(len(m))] ^= byte(1 << rng.IntN(8))
				case k == 1 && len(m) > 0:
					m = m[:rng.IntN(len(m))]
				case k == 2 && len(m) > 0:
					i := rng.IntN(len(m))
					m = append(m[:i], m[i+1:]...)
				default:
					i := rng.IntN(len(m) + 1)
					m = append(m[:i], append([]byte{byte(rng.IntN(256))}, m[i:]...)...)
				}
				check(batchAround(t, c, m, count, count-1), "mutated records")
			}
			if c == CodecNone {
				continue
			}
			comp := batchAround(t, c, raw, count, count-1)
			for range streamMutations {
				b := append(Batch(nil), comp...)
				rec := b[BatchHeaderSize:]
				rec[rng.IntN(len(rec))] ^= byte(1 << rng.IntN(8))
				b.UpdateCRC()
				check(b, "mutated stream")
			}
		}
	}
	t.Logf("%d batches compared", n)
}

// gzipMembers is k concatenated gzip members of the same 1 MiB of zeros
// (about 1 KiB each): a gzip bomb that costs nothing to build.
func gzipMembers(t testing.TB, k int) []byte {
	t.Helper()
	one, err := Compress(CodecGzip, nil, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(one, k)
}

// bigRecordPrefix is the start of a record with a null key and a value of
// valueLen bytes, no headers (the headers count byte comes last).
func bigRecordPrefix(valueLen int) []byte {
	body := 1 + 1 + 1 + 1 + sizeVarint(int32(valueLen)) + valueLen + 1
	p := appendVarint(nil, int32(body))
	p = append(p, 0, 0, 0) // attributes, timestamp delta 0, offset delta 0
	p = appendVarint(p, -1)
	return appendVarint(p, int32(valueLen))
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestStreamValidatorBombs: a gzip stream of 64 MiB of zeros is refused at
// its first record; one record whose value is 48 MiB of zeros (12 under the
// race detector) is accepted, and refused once MaxDecompressed is below it; none of them allocates more
// than a small fraction of what it expands to (the whole-batch decoder
// allocates all of it).
func TestStreamValidatorBombs(t *testing.T) {
	hdr := mustBatch(t, DefaultBatchOptions(), []Record{{Timestamp: 1, Value: []byte("x")}})
	zeros := streamBatch(hdr, CodecGzip, gzipMembers(t, 64), 1, 0)
	const mib = 1 << 20
	size, capped := 48, int64(32) // MiB
	if raceEnabled {
		size, capped = 12, 8 // the same checks on less data: ~10x slower
	}
	pre, err := Compress(CodecGzip, nil, bigRecordPrefix(size*mib))
	if err != nil {
		t.Fatal(err)
	}
	end, _ := Compress(CodecGzip, nil, []byte{0})
	big := streamBatch(hdr, CodecGzip, append(append(pre, gzipMembers(t, size)...), end...), 1, 0)

	var sv StreamValidator
	sv.Validate(zeros, 0, StreamOptions{}) // pools warm
	var err1, err2, err3 error
	var n2, n3 int64
	a1 := allocated(func() { err1 = sv.Validate(zeros, 0, StreamOptions{Produce: true}) })
	a2 := allocated(func() { err2 = sv.Validate(big, 0, StreamOptions{Produce: true}); n2 = sv.Decompressed() })
	a3 := allocated(func() {
		err3 = sv.Validate(big, 0, StreamOptions{Produce: true, MaxDecompressed: capped * mib})
		n3 = sv.Decompressed()
	})
	if !errors.Is(err1, ErrBadRecord) {
		t.Errorf("zeros: %v, want a bad record", err1)
	}
	if err2 != nil || n2 < int64(size)*mib {
		t.Errorf("%d MiB record: %v after %d bytes", size, err2, n2)
	}
	if !errors.Is(err3, ErrCompression) || n3 > (capped+1)*mib {
		t.Errorf("%d MiB record over a %d MiB cap: %v after %d bytes", size, capped, err3, n3)
	}
	for i, a := range []uint64{a1, a2, a3} {
		if a > 2*mib {
			t.Errorf("bomb %d: %d bytes allocated, want under 2 MiB", i+1, a)
		}
	}
	t.Logf("allocated: zeros %d B, %d MiB record %d B, capped %d B", a1, size, a2, a3)
	var rr RecordReader
	if a := allocated(func() { _ = big.ValidateRecordsWith(0, &rr, true) }); a < uint64(size)*mib {
		t.Errorf("the whole-batch decoder allocated only %d bytes: the comparison is void", a)
	}
}

// TestStreamMemory: the bound read from each codec's headers.
func TestStreamMemory(t *testing.T) {
	raw := mustBatch(t, DefaultBatchOptions(), kvRecords(200, 100)).RecordsBytes()
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		comp, err := Compress(c, nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		m := StreamMemory(c, comp)
		if m <= 0 || m > 2<<20 {
			t.Errorf("%v: %d bytes for %d bytes of records", c, m, len(raw))
		}
	}
	if m := StreamMemory(CodecSnappy, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2}); m > 7*maxSnappyRatio+64 {
		t.Errorf("a raw snappy block claiming 4 GiB: %d bytes", m)
	}
	// zstd: the declared window, capped.
	for _, tc := range []struct {
		window int
		want   int
	}{{1 << 20, 1 << 20}, {8 << 20, 8 << 20}, {1 << 29, MaxStreamWindow}} {
		if got := zstdStreamWindow(zstdFrameWithWindow(t, tc.window)); got != tc.want {
			t.Errorf("window %d: %d, want %d", tc.window, got, tc.want)
		}
	}
}

// zstdFrameWithWindow is a zstd frame whose header declares window (a
// power of two from 1 KiB; no content size, not single segment) holding
// one raw block of 4 KiB of zeros.
func zstdFrameWithWindow(t testing.TB, window int) []byte {
	t.Helper()
	k := 0
	for 1<<k < window {
		k++
	}
	if 1<<k != window || k < 10 {
		t.Fatalf("window %d", window)
	}
	f := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	f = append(f, 0, byte((k-10)<<3)) // frame header descriptor, window descriptor
	const n = 4096
	bh := uint32(n)<<3 | 1 // raw block, last
	f = append(f, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(f, make([]byte, n)...)
}

// TestStreamValidatorZstdWindow: a frame declaring a window above
// MaxStreamWindow is refused before anything that size is allocated; one
// with an 8 MiB window decodes (its zeros are then a bad record).
func TestStreamValidatorZstdWindow(t *testing.T) {
	hdr := mustBatch(t, DefaultBatchOptions(), []Record{{Timestamp: 1, Value: []byte("x")}})
	var sv StreamValidator
	if err := sv.Validate(streamBatch(hdr, CodecZstd, zstdFrameWithWindow(t, 8<<20), 1, 0), 0, StreamOptions{}); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("8 MiB window: %v", err)
	}
	var err error
	a := allocated(func() {
		err = sv.Validate(streamBatch(hdr, CodecZstd, zstdFrameWithWindow(t, 1<<29), 1, 0), 0, StreamOptions{})
	})
	if !errors.Is(err, ErrCompression) {
		t.Fatalf("512 MiB window: %v", err)
	}
	if a > 4<<20 {
		t.Errorf("refusing a 512 MiB window allocated %d bytes", a)
	}
}
