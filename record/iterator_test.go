package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// mixedLog is a v2 batch per codec, a legacy v0 and v1 message and a legacy
// wrapper, back to back, with their positions.
func mixedLog(t testing.TB) ([]byte, []int64) {
	var log []byte
	var pos []int64
	off := int64(0)
	for _, c := range allCodecs {
		opts := DefaultBatchOptions()
		opts.Codec, opts.BaseOffset = c, off
		pos = append(pos, int64(len(log)))
		var err error
		if log, err = AppendBatch(log, opts, kvRecords(10, 100)); err != nil {
			t.Fatal(err)
		}
		off += 10
	}
	pos = append(pos, int64(len(log)))
	log = AppendLegacyMessage(log, LegacyMessage{Offset: off, Magic: 0, Value: []byte("v0")})
	pos = append(pos, int64(len(log)))
	log = AppendLegacyMessage(log, LegacyMessage{Offset: off + 1, Magic: 1, Timestamp: 5, Value: []byte("v1")})
	pos = append(pos, int64(len(log)))
	log, _ = AppendLegacyWrapper(log, 0, CodecLZ4, false, 0, legacyInner(3, off+2))
	return log, pos
}

type entryRunner interface {
	Next() bool
	Entry() []byte
	Header() EntryHeader
	Pos() int64
	Err() error
}

func collect(r entryRunner) (pos []int64, err error) {
	for r.Next() {
		if int64(len(r.Entry())) != r.Header().TotalSize() {
			return pos, errors.New("entry length disagrees with header")
		}
		pos = append(pos, r.Pos())
	}
	return pos, r.Err()
}

// both runs f over an Iterator and over FileScanners with several read sizes.
func both(t *testing.T, log []byte, opts ScanOptions, f func(t *testing.T, r entryRunner)) {
	t.Run("iterator", func(t *testing.T) {
		it := NewIterator(log, opts)
		f(t, &it)
	})
	for _, rs := range []int{17, 100, 4096, 0} {
		o := opts
		o.ReadSize = rs
		t.Run("scanner", func(t *testing.T) {
			f(t, NewFileScanner(bytes.NewReader(log), 0, int64(len(log)), o))
		})
		t.Run("scanner-unknown-end", func(t *testing.T) {
			f(t, NewFileScanner(bytes.NewReader(log), 0, math.MaxInt64, o))
		})
	}
}

func TestIterateMixed(t *testing.T) {
	log, want := mixedLog(t)
	both(t, log, ScanOptions{VerifyCRC: true}, func(t *testing.T, r entryRunner) {
		got, err := collect(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("positions %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("positions %v, want %v", got, want)
			}
		}
	})
	// Every entry validates shallowly; wrapper decodes deeply.
	it := NewIterator(log, ScanOptions{})
	for it.Next() {
		if err := ValidateEntry(it.Entry(), it.Pos()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIterateTornTail(t *testing.T) {
	log, pos := mixedLog(t)
	for _, cut := range []int64{pos[2] + 1, pos[2] + 16, pos[2] + 17, pos[2] + 60, pos[3] - 1} {
		both(t, log[:cut], ScanOptions{VerifyCRC: true}, func(t *testing.T, r entryRunner) {
			got, err := collect(r)
			if !errors.Is(err, ErrTruncated) || !IsCorruption(err) || errors.Is(err, ErrCRC) {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			if len(got) != 2 {
				t.Fatalf("cut at %d: %d entries before the tail", cut, len(got))
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Pos != pos[2] {
				t.Fatalf("cut at %d: error %v", cut, err)
			}
		})
	}
}

func TestIterateCorruption(t *testing.T) {
	log, pos := mixedLog(t)
	p := pos[1]
	cases := map[string]struct {
		mut  func(b []byte)
		want error
		crc  bool
	}{
		"size 13":      {func(b []byte) { binary.BigEndian.PutUint32(b[p+8:], 13) }, ErrBadSize, false},
		"size -1":      {func(b []byte) { binary.BigEndian.PutUint32(b[p+8:], math.MaxUint32) }, ErrBadSize, false},
		"absurd size":  {func(b []byte) { binary.BigEndian.PutUint32(b[p+8:], 1<<30) }, ErrBadSize, false},
		"magic 3":      {func(b []byte) { b[p+16] = 3 }, ErrBadMagic, false},
		"magic -1":     {func(b []byte) { b[p+16] = 0xff }, ErrBadMagic, false},
		"v2 below 61":  {func(b []byte) { binary.BigEndian.PutUint32(b[p+8:], 40) }, ErrBadSize, false},
		"crc":          {func(b []byte) { b[p+100] ^= 1 }, ErrCRC, true},
		"legacy crc":   {func(b []byte) { b[pos[6]-1] ^= 1 }, ErrCRC, true},
		"count -1":     {func(b []byte) { binary.BigEndian.PutUint32(b[p+57:], math.MaxUint32) }, ErrBadCount, true},
		"zero filled":  {func(b []byte) { clear(b[p:]) }, ErrBadSize, false},
		"negative lod": {func(b []byte) { binary.BigEndian.PutUint32(b[p+23:], math.MaxUint32) }, ErrBadSize, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := append([]byte(nil), log...)
			c.mut(b)
			both(t, b, ScanOptions{VerifyCRC: true, MaxEntrySize: 1 << 20}, func(t *testing.T, r entryRunner) {
				_, err := collect(r)
				wantCorrupt(t, err, c.want)
				if errors.Is(err, ErrTruncated) {
					t.Fatalf("corruption reported as a torn tail: %v", err)
				}
			})
			if c.crc { // without CRC checks the damage goes unnoticed
				it := NewIterator(b, ScanOptions{})
				if _, err := collect(&it); err != nil {
					t.Fatalf("shallow scan: %v", err)
				}
			}
		})
	}
}

func TestIteratorEmptyAndPos(t *testing.T) {
	it := NewIterator(nil, ScanOptions{})
	if it.Next() || it.Err() != nil {
		t.Fatal("empty input")
	}
	log, pos := mixedLog(t)
	it.Reset(log, ScanOptions{BasePos: 1000})
	it.Next()
	it.Next()
	if it.Pos() != 1000+pos[1] || it.NextPos() != 1000+pos[2] {
		t.Fatalf("pos %d next %d", it.Pos(), it.NextPos())
	}
}

func TestIteratorZeroAllocs(t *testing.T) {
	var log []byte
	for i := 0; i < 50; i++ {
		log, _ = AppendBatch(log, DefaultBatchOptions(), kvRecords(5, 100))
	}
	allocs := testing.AllocsPerRun(100, func() {
		it := NewIterator(log, ScanOptions{VerifyCRC: true})
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != 50 {
			panic(it.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("Iterator allocates %.1f times per pass", allocs)
	}
	s := NewFileScanner(bytes.NewReader(log), 0, int64(len(log)), ScanOptions{})
	allocs = testing.AllocsPerRun(100, func() {
		s.Reset(bytes.NewReader(log), 0, int64(len(log)), ScanOptions{VerifyCRC: true})
		for s.Next() {
		}
		if s.Err() != nil {
			panic(s.Err())
		}
	})
	if allocs > 1 { // the bytes.Reader
		t.Fatalf("FileScanner allocates %.1f times per pass", allocs)
	}
}

func TestFileScannerFile(t *testing.T) {
	// Entries larger than the read size, in a real file, from a start offset.
	var log []byte
	for i := 0; i < 20; i++ {
		opts := DefaultBatchOptions()
		opts.BaseOffset = int64(i * 10)
		log, _ = AppendBatch(log, opts, kvRecords(10, 30000*(i%3)))
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	it := NewIterator(log, ScanOptions{})
	it.Next()
	second := it.NextPos()
	s := NewFileScanner(f, second, int64(len(log)), ScanOptions{VerifyCRC: true, ReadSize: 64 << 10})
	n := 0
	for s.Next() {
		if s.Batch().BaseOffset() != int64((n+1)*10) {
			t.Fatalf("entry %d at %d has base %d", n, s.Pos(), s.Batch().BaseOffset())
		}
		n++
	}
	if s.Err() != nil || n != 19 {
		t.Fatalf("%d entries: %v", n, s.Err())
	}
	// The file is shorter than end says: a torn tail at the end of the data.
	s.Reset(f, 0, int64(len(log))+100, ScanOptions{})
	for s.Next() {
	}
	if s.Err() != nil || s.Pos() != int64(len(log)) {
		t.Fatalf("end beyond the file: %v at %d", s.Err(), s.Pos())
	}
	// I/O errors are passed through, not marked as corruption.
	s.Reset(errReader{}, 0, 1000, ScanOptions{})
	if s.Next() || s.Err() == nil || IsCorruption(s.Err()) {
		t.Fatalf("I/O error: %v", s.Err())
	}
}

type errReader struct{}

func (errReader) ReadAt([]byte, int64) (int, error) { return 0, io.ErrClosedPipe }
