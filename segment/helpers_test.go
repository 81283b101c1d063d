package segment

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// fsCase is one filesystem the conformance tests run on.
type fsCase struct {
	name string
	fs   func(t *testing.T) (vfs.FS, string)
}

var filesystems = []fsCase{
	{"os", func(t *testing.T) (vfs.FS, string) { return vfs.OS, t.TempDir() }},
	{"mem", func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/data/t-0" }},
}

func forEachFS(t *testing.T, f func(t *testing.T, fsys vfs.FS, dir string)) {
	for _, c := range filesystems {
		t.Run(c.name, func(t *testing.T) {
			fsys, dir := c.fs(t)
			f(t, fsys, dir)
		})
	}
}

var quiet = slog.New(slog.DiscardHandler)

var codecs = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

// makeBatch encodes n records whose values name the batch and record, with
// timestamps ts, ts+1, ...
func makeBatch(t testing.TB, id, n int, ts int64, c record.Codec, valueSize int) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.Codec = c
	recs := make([]record.Record, n)
	for i := range recs {
		v := fmt.Appendf(nil, "b%d-r%d-", id, i)
		for len(v) < valueSize {
			v = append(v, byte('a'+(id+i+len(v))%26))
		}
		recs[i] = record.Record{Timestamp: ts + int64(i), Key: fmt.Appendf(nil, "k%d", i%3), Value: v}
	}
	b, err := record.AppendBatch(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refBatch is a batch as the reference log holds it (base offset patched).
type refBatch struct {
	base, last int64
	maxTs      int64
	bytes      []byte
}

// refLog is the in-memory reference: the batches the log must hold.
type refLog struct {
	batches []refBatch
	start   int64
	end     int64
}

func (r *refLog) append(b []byte) {
	c := append([]byte(nil), b...)
	rb := record.Batch(c)
	rb.SetBaseOffset(r.end)
	r.batches = append(r.batches, refBatch{base: r.end, last: rb.LastOffset(), maxTs: rb.MaxTimestamp(), bytes: c})
	r.end = rb.LastOffset() + 1
}

// from returns the reference batches from the one holding off.
func (r *refLog) from(off int64) []refBatch {
	for i, b := range r.batches {
		if b.last >= off {
			return r.batches[i:]
		}
	}
	return nil
}

func (r *refLog) truncateTo(off int64) {
	for i, b := range r.batches {
		if b.last >= off {
			r.batches = r.batches[:i]
			r.end = b.base
			if i == 0 && off <= b.base {
				r.end = off // the log starts over at off
			}
			if r.end < r.start {
				r.start = r.end
			}
			return
		}
	}
}

// dropBelow removes the batches below the new log start.
func (r *refLog) dropBelow(start int64) {
	for len(r.batches) > 0 && r.batches[0].last < start {
		r.batches = r.batches[1:]
	}
	if start > r.start {
		r.start = start
	}
}

// readAll reads the log from off to its end through Read with maxBytes regions
// and returns the whole batches seen, checking CRCs and offset order.
func readAll(t testing.TB, l *Log, off, maxBytes int64) [][]byte {
	t.Helper()
	var out [][]byte
	end := l.LogEndOffset()
	var buf []byte
	for off < end {
		r, err := l.Read(off, maxBytes)
		if err != nil {
			t.Fatalf("Read(%d, %d): %v", off, maxBytes, err)
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if r.Len == 0 {
			break
		}
		next := off
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true, BasePos: r.Pos})
		for it.Next() {
			h := it.Header()
			if h.LastOffset < next && len(out) > 0 {
				t.Fatalf("offsets go backwards: batch [%d,%d] after %d", h.Offset, h.LastOffset, next)
			}
			out = append(out, append([]byte(nil), it.Entry()...))
			next = h.LastOffset + 1
		}
		if err := it.Err(); err != nil && !record.IsCorruption(err) {
			t.Fatal(err)
		}
		if next == off {
			t.Fatalf("no progress at %d (region %d bytes at %d)", off, r.Len, r.Pos)
		}
		off = next
	}
	return out
}

// checkAgainst compares the log with the reference: offsets, contents, reads
// from random offsets.
func checkAgainst(t testing.TB, l *Log, ref *refLog, rng *rand.Rand) {
	t.Helper()
	if got := l.LogEndOffset(); got != ref.end {
		t.Fatalf("log end offset %d, reference %d", got, ref.end)
	}
	if got := l.LogStartOffset(); got != ref.start {
		t.Fatalf("log start offset %d, reference %d", got, ref.start)
	}
	for k := 0; k < 3; k++ {
		off := ref.start
		if ref.end > ref.start {
			off += rng.Int64N(ref.end - ref.start + 1)
		}
		maxBytes := []int64{1, 100, 1000, 1 << 20}[rng.IntN(4)]
		got := readAll(t, l, off, maxBytes)
		want := ref.from(off)
		if len(got) != len(want) {
			t.Fatalf("read from %d (max %d): %d batches, reference %d", off, maxBytes, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i].bytes) {
				t.Fatalf("read from %d: batch %d (offset %d) differs", off, i, want[i].base)
			}
		}
	}
	if _, err := l.Read(ref.end+1, 100); err == nil {
		t.Fatalf("read past the end succeeded")
	}
	if ref.start > 0 {
		if _, err := l.Read(ref.start-1, 100); err == nil {
			t.Fatalf("read below the start succeeded")
		}
	}
}
