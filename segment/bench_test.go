package segment

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
)

// BenchmarkAppend appends an already-encoded batch (1000 records of 100 B) and
// reports its MB/s beside the same run's plain sequential write of the same bytes
// into a file in the same directory (limit_MB/s) and the ratio. The
// preallocated 1-record case takes mapped appends (segment_map.go), so its
// limit is a write(2) per batch it does not make.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		n           int
		preallocate bool
	}{{1, false}, {1, true}, {100, false}, {1000, false}} {
		name := map[int]string{1: "1rec", 100: "100rec", 1000: "1000rec"}[c.n]
		if c.preallocate {
			name += "-preallocated"
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			batch := makeBatch(b, 0, n, 1, record.CodecNone, 100)
			l, err := Open(filepath.Join(dir, "p-0"), &Options{Logger: quiet, Preallocate: c.preallocate})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			t0 := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
			el := time.Since(t0)
			b.StopTimer()
			f, err := os.Create(filepath.Join(dir, "limit"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			t1 := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
			}
			lim := time.Since(t1)
			total := float64(len(batch)) * float64(b.N) / 1e6
			b.ReportMetric(total/lim.Seconds(), "limit_MB/s")
			b.ReportMetric(lim.Seconds()/el.Seconds(), "vs_limit")
		})
	}
}

// BenchmarkRead reads 1 MiB regions through Log.Read and ReadInto, beside a
// plain read of the same file.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(filepath.Join(dir, "p-0"), &Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := makeBatch(b, 0, 100, 1, record.CodecNone, 100)
	for l.Size() < 64<<20 {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 2<<20)
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if buf, err = r.ReadInto(buf); err != nil {
			b.Fatal(err)
		}
		r.Release()
		off = (off + 100*int64(1<<20/len(batch))) % (l.LogEndOffset() - 1000)
	}
}
