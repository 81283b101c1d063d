package record

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func benchRecords() []Record { return kvRecords(100, 100) }

func BenchmarkAppendBatch(b *testing.B) {
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			recs := benchRecords()
			opts := DefaultBatchOptions()
			opts.Codec = c
			buf := make([]byte, 0, 64<<10)
			raw, _ := AppendBatch(nil, DefaultBatchOptions(), recs)
			b.SetBytes(int64(len(raw))) // MB/s of uncompressed batch bytes
			b.ReportAllocs()
			for b.Loop() {
				if _, err := AppendBatch(buf[:0], opts, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}

func BenchmarkBuilder(b *testing.B) {
	recs := benchRecords()
	opts := DefaultBatchOptions()
	bl := NewBuilder(opts)
	b.ReportAllocs()
	for b.Loop() {
		bl.Reset(opts)
		for i := range recs {
			_ = bl.Add(&recs[i])
		}
		if _, err := bl.Build(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}

func BenchmarkRecordReader(b *testing.B) {
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			opts := DefaultBatchOptions()
			opts.Codec = c
			batch := mustBatch(b, opts, benchRecords())
			var rr RecordReader
			b.SetBytes(int64(len(mustBatch(b, DefaultBatchOptions(), benchRecords())))) // uncompressed bytes
			b.ReportAllocs()
			for b.Loop() {
				rr.Reset(batch, 0)
				for _, ok := rr.Next(); ok; _, ok = rr.Next() {
				}
				if rr.Err() != nil {
					b.Fatal(rr.Err())
				}
			}
		})
	}
}

// benchLog is size bytes of 16 KiB uncompressed batches.
func benchLog(b *testing.B, size int) []byte {
	recs := kvRecords(16, 1000)
	var log []byte
	for len(log) < size {
		opts := DefaultBatchOptions()
		opts.BaseOffset = int64(len(log))
		var err error
		if log, err = AppendBatch(log, opts, recs); err != nil {
			b.Fatal(err)
		}
	}
	return log
}

// BenchmarkIterateCRC compares the in-memory Iterator with CRC checks to a
// bare CRC-32C over the same bytes; ratio = iterator speed / bare CRC speed.
func BenchmarkIterateCRC(b *testing.B) {
	log := benchLog(b, 8<<20)
	b.SetBytes(int64(len(log)))
	var tIter, tRaw time.Duration
	for b.Loop() {
		t0 := time.Now()
		it := NewIterator(log, ScanOptions{VerifyCRC: true})
		for it.Next() {
		}
		if it.Err() != nil {
			b.Fatal(it.Err())
		}
		t1 := time.Now()
		_ = CRC32C(log)
		tRaw += time.Since(t1)
		tIter += t1.Sub(t0)
	}
	b.ReportMetric(tRaw.Seconds()/tIter.Seconds(), "ratio")
}

// BenchmarkFileScanVsRead scans a page-cached file with FileScanner
// (VerifyCRC) and, in the same iterations, reads it with plain 1 MiB ReadAt
// calls and a CRC-32C over every chunk. It reports both speeds and
// ratio = scanner speed / plain read speed (target >= 0.8).
func BenchmarkFileScanVsRead(b *testing.B) {
	log := benchLog(b, 32<<20)
	path := filepath.Join(b.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	size := int64(len(log))
	buf := make([]byte, DefaultScanChunk)
	plain := func() {
		var crc uint32
		for off := int64(0); off < size; {
			n, err := f.ReadAt(buf, off)
			if err != nil && err != io.EOF {
				b.Fatal(err)
			}
			crc = UpdateCRC32C(crc, buf[:n])
			off += int64(n)
		}
		_ = crc
	}
	s := NewFileScanner(f, 0, size, ScanOptions{VerifyCRC: true})
	scan := func() {
		s.Reset(f, 0, size, ScanOptions{VerifyCRC: true})
		for s.Next() {
		}
		if s.Err() != nil {
			b.Fatal(s.Err())
		}
	}
	plain() // warm the page cache
	b.SetBytes(size)
	var tScan, tPlain time.Duration
	for b.Loop() {
		t0 := time.Now()
		scan()
		t1 := time.Now()
		plain()
		tPlain += time.Since(t1)
		tScan += t1.Sub(t0)
	}
	mb := float64(size) * float64(b.N) / 1e6
	b.ReportMetric(mb/tScan.Seconds(), "scan_MB/s")
	b.ReportMetric(mb/tPlain.Seconds(), "limit_read_crc_MB/s")
	b.ReportMetric(tPlain.Seconds()/tScan.Seconds(), "ratio")
}

// BenchmarkValidateRecords compares the two ways to check a producer's
// compressed batch: whole (decompress into a buffer, then decode,
// ValidateRecordsWith) and streamed (StreamValidator), on a ~13 KB batch
// of 100 records and a ~1 MB batch of 9,000. MB/s of uncompressed bytes.
func BenchmarkValidateRecords(b *testing.B) {
	for _, size := range []struct {
		name string
		recs []Record
	}{{"100x100B", benchRecords()}, {"9000x100B", kvRecords(9000, 100)}} {
		raw := len(mustBatch(b, DefaultBatchOptions(), size.recs))
		for _, c := range allCodecs[1:] {
			opts := DefaultBatchOptions()
			opts.Codec = c
			batch := mustBatch(b, opts, size.recs)
			b.Run(size.name+"/"+c.String()+"/whole", func(b *testing.B) {
				var rr RecordReader
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				for b.Loop() {
					if err := batch.ValidateRecordsWith(0, &rr, true); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(size.name+"/"+c.String()+"/stream", func(b *testing.B) {
				var sv StreamValidator
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				for b.Loop() {
					if err := sv.Validate(batch, 0, StreamOptions{Produce: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
