package fuzz

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
	"github.com/stratalog/strata/tools"
)

// toolSegOpts: small index interval so a short log gets many index entries.
func toolSegOpts() *segment.Options {
	return &segment.Options{IndexIntervalBytes: 64, SegmentIndexBytes: 4096, Logger: quietLog}
}

var (
	partOnce  sync.Once
	partFiles map[string][]byte
	partErr   error
)

// validPartition is the files of a partition directory written by the segment
// package: one segment of 12 batches (.log, .index, .timeindex) and a
// leader-epoch checkpoint. Built once per process.
func validPartition(tb testing.TB) map[string][]byte {
	partOnce.Do(func() {
		dir, err := os.MkdirTemp("", "strata-fuzz-part")
		if err != nil {
			partErr = err
			return
		}
		defer os.RemoveAll(dir)
		pdir := filepath.Join(dir, "t-0")
		l, err := segment.Open(pdir, toolSegOpts())
		if err != nil {
			partErr = err
			return
		}
		for i := 0; i < 12; i++ {
			recs := make([]record.Record, 1+i%3)
			for j := range recs {
				recs[j] = record.Record{Timestamp: int64(1000 + 10*i + j), Key: []byte{byte('a' + j)}, Value: bytes.Repeat([]byte{byte('0' + i%10)}, 10+i)}
			}
			opts := record.DefaultBatchOptions()
			opts.Codec = record.Codec(i % 5)
			b, err := record.AppendBatch(nil, opts, recs)
			if err == nil {
				_, err = l.Append(b)
			}
			if err != nil {
				partErr = err
				l.Close()
				return
			}
		}
		if partErr = l.Close(); partErr != nil {
			return
		}
		partFiles = map[string][]byte{}
		names, _ := os.ReadDir(pdir)
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(pdir, n.Name()))
			if err != nil {
				partErr = err
				return
			}
			partFiles[n.Name()] = b
		}
		partFiles["leader-epoch-checkpoint"] = []byte("0\n1\n0 0\n")
	})
	if partErr != nil {
		tb.Fatal(partErr)
	}
	return partFiles
}

// mainTimeout is how long one tools.Main run on a small directory may take
// before the target calls it a hang.
const mainTimeout = 20 * time.Second

// runMain runs tools.Main and fails the test, with every goroutine's stack,
// if it does not return within mainTimeout (go test -fuzz has no per-input
// timeout: a hang would just stall the worker).
func runMain(t *testing.T, args []string, stdout, stderr io.Writer) int {
	done := make(chan int, 1)
	go func() { done <- tools.Main(args, stdout, stderr) }()
	select {
	case code := <-done:
		return code
	case <-time.After(mainTimeout):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("%v hangs (%v):\n%s", args, mainTimeout, b.String())
		return -1
	}
}

var dumpFileNames = []string{
	segment.FilePath("", 0, segment.LogSuffix),
	segment.FilePath("", 0, segment.IndexSuffix),
	segment.FilePath("", 0, segment.TimeIndexSuffix),
	"leader-epoch-checkpoint",
	"recovery-point-offset-checkpoint",
	segment.FilePath("", 0, ".snapshot"),
	segment.FilePath("", 0, ".txnindex"),
}

func writePartition(t *testing.T, pdir string, files map[string][]byte) {
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(pdir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDumplog writes the fuzz bytes as one file of an otherwise valid
// partition directory (kind picks which: .log, .index, .timeindex, leader
// epoch or offset checkpoint, .snapshot, .txnindex) and runs strata dumplog on
// it with --deep-iteration --print-data, with --json and with
// --verify-index-only. It must not panic and must exit 0, 1 or 2.
func FuzzDumplog(f *testing.F) {
	files := validPartition(f)
	for i, name := range dumpFileNames {
		b, ok := files[name]
		if !ok {
			b = []byte("0\n1\nt 0 5\n")
		}
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), files[dumpFileNames[0]][:100])
	f.Add(uint8(1), make([]byte, 24))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		name := dumpFileNames[int(kind)%len(dumpFileNames)]
		pdir := filepath.Join(t.TempDir(), "t-0")
		writePartition(t, pdir, validPartition(t))
		path := filepath.Join(pdir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, flags := range [][]string{
			{"--deep-iteration", "--print-data"},
			{"--deep-iteration", "--json"},
			{"--verify-index-only"},
		} {
			args := append(append([]string{"strata", "dumplog"}, flags...), path)
			if code := runMain(t, args, io.Discard, io.Discard); code < 0 || code > 2 {
				t.Fatalf("%v: exit %d", args, code)
			}
		}
	})
}

// FuzzVerify damages a valid partition directory (file picks .log, .index or
// .timeindex; mode: 0 overwrite at off, 1 truncate at off, 2 append, 3
// replace) and runs strata verify on it. It must not panic and must exit 0, 1
// or 2; when it says clean, segment.Open (trusting the directory as a clean
// shutdown would) must open it and every batch must read back with a valid CRC
// and increasing offsets.
func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint16(0), []byte{})
	f.Add(uint8(0), uint8(0), uint16(100), []byte{0xff})
	f.Add(uint8(0), uint8(1), uint16(300), []byte{})
	f.Add(uint8(0), uint8(2), uint16(0), make([]byte, 40))
	f.Add(uint8(1), uint8(1), uint16(16), []byte{})
	f.Add(uint8(1), uint8(0), uint16(8), []byte{0, 0, 0, 9})
	f.Add(uint8(2), uint8(2), uint16(0), make([]byte, 12))
	f.Add(uint8(2), uint8(3), uint16(0), []byte{})
	f.Fuzz(func(t *testing.T, file, mode uint8, off uint16, data []byte) {
		files := validPartition(t)
		pdir := filepath.Join(t.TempDir(), "t-0")
		writePartition(t, pdir, files)
		name := dumpFileNames[int(file)%3]
		b := bytes.Clone(files[name])
		switch mode % 4 {
		case 0:
			if len(b) > 0 {
				p := int(off) % len(b)
				copy(b[p:], data)
			}
		case 1:
			b = b[:int(off)%(len(b)+1)]
		case 2:
			b = append(b, data...)
		case 3:
			b = data
		}
		if err := os.WriteFile(filepath.Join(pdir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := runMain(t, []string{"strata", "verify", pdir}, &out, &out)
		if code < 0 || code > 2 {
			t.Fatalf("verify exit %d", code)
		}
		if code != 0 {
			return
		}
		so := toolSegOpts()
		so.CleanShutdown = true
		l, err := segment.Open(pdir, so)
		if err != nil {
			t.Fatalf("verify says clean, Open fails: %v\n%s", err, out.Bytes())
		}
		defer l.Close()
		next := int64(-1)
		for off := l.LogStartOffset(); off < l.LogEndOffset(); {
			r, err := l.Read(off, 1<<20)
			if err != nil {
				t.Fatalf("verify says clean, read at %d: %v\n%s", off, err, out.Bytes())
			}
			buf, err := r.ReadInto(nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
			for it.Next() {
				h := it.Header()
				if h.Offset <= next {
					t.Fatalf("verify says clean, offset %d after %d\n%s", h.Offset, next, out.Bytes())
				}
				next = h.LastOffset
				if it.Header().Magic == 2 {
					if _, err := it.Batch().Records(nil); err != nil {
						t.Fatalf("verify says clean, batch at offset %d: %v\n%s", h.Offset, err, out.Bytes())
					}
				}
			}
			if it.Err() != nil {
				t.Fatalf("verify says clean, read at %d: %v\n%s", off, it.Err(), out.Bytes())
			}
			if next < off {
				t.Fatalf("verify says clean, read at %d made no progress (%d bytes)\n%s", off, len(buf), out.Bytes())
			}
			off = next + 1
		}
	})
}
