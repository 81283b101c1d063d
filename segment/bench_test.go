package segment

import (
	"os"
	"path/filepath"
	"slices"
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

// BenchmarkAppendLatencyAcrossRolls appends 1 KB batches to a log on the
// real filesystem (TMPDIR) with 1 MiB segments, so every ~1000th append
// rolls, while a second goroutine applies retention (retention.bytes 4 MiB)
// every millisecond, and reports the append latency percentiles: what a
// producer waits for when its append meets a roll or a retention delete
// (their directory fsyncs used to run under the writer lock).
func BenchmarkAppendLatencyAcrossRolls(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "p-0"), &Options{Logger: quiet, SegmentBytes: 1 << 20, RetentionBytes: 4 << 20, FileDeleteDelayMs: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := makeBatch(b, 0, 8, 1, record.CodecNone, 100)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				if _, err := l.ApplyRetention(); err != nil {
					b.Error(err)
					return
				}
			}
		}
	}()
	lat := make([]time.Duration, b.N)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	close(stop)
	<-done
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) }
	b.ReportMetric(q(0.5), "p50_ns")
	b.ReportMetric(q(0.99), "p99_ns")
	b.ReportMetric(q(0.999), "p99.9_ns")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max_ns")
}
