package fuzz

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

var quietLog = slog.New(slog.DiscardHandler)

// recoverySegOpts: small enough that fuzz logs roll and index often.
func recoverySegOpts() *segment.Options {
	return &segment.Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 64, SegmentIndexBytes: 1024, Logger: quietLog}
}

// fuzzLog encodes n valid batches with consecutive offsets.
func fuzzLog(t *testing.T, n int) ([]byte, []int64) {
	var log []byte
	var ends []int64 // byte end of each batch
	next := int64(0)
	for i := 0; i < n; i++ {
		recs := make([]record.Record, 1+i%3)
		for j := range recs {
			recs[j] = record.Record{Timestamp: int64(1000 + i), Key: []byte{byte(j)}, Value: fmt.Appendf(nil, "batch %d record %d", i, j)}
		}
		b, err := record.AppendBatch(nil, record.DefaultBatchOptions(), recs)
		if err != nil {
			t.Fatal(err)
		}
		record.Batch(b).SetBaseOffset(next)
		next = record.Batch(b).LastOffset() + 1
		log = append(log, b...)
		ends = append(ends, int64(len(log)))
	}
	return log, ends
}

func putFile(t *testing.T, fs vfs.FS, path string, data []byte) {
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// FuzzRecoverSegment builds a partition directory on the in-memory filesystem
// from valid batches split into one or two segments, damages it from the fuzz
// input, and recovers it through recovery.OpenDataDir. Recovery must never
// panic, and its result must pass a full verification: a full read-only rescan
// finds nothing to do, every .log holds only valid batches with increasing
// offsets, and reading the log through its indexes from start to end returns
// every batch.
//
// mode bit 0: trusted (the log is left intact, the recovery point is its end and
// the clean-shutdown marker is present; only the indexes are damaged), else a
// full scan of damaged logs. Bit 1: two segments. Bits 2-3: what happens to the
// tail (nothing, truncated at cut, tail appended, zero-extended).
func FuzzRecoverSegment(f *testing.F) {
	f.Add(uint8(6), uint8(0), []byte{}, uint16(0), []byte{}, []byte{})
	f.Add(uint8(6), uint8(4), []byte{}, uint16(100), []byte{}, []byte{})
	f.Add(uint8(6), uint8(8), []byte{}, uint16(0), []byte("garbage garbage"), []byte{})
	f.Add(uint8(6), uint8(12), []byte{}, uint16(4096), []byte{}, []byte{})
	f.Add(uint8(6), uint8(2), []byte{1, 0, 0x55, 40, 1, 0x80}, uint16(0), []byte{}, []byte{})
	f.Add(uint8(4), uint8(1), []byte{}, uint16(0), []byte{}, []byte{0, 0, 0, 1, 0, 0, 0, 90})
	f.Add(uint8(4), uint8(3), []byte{}, uint16(0), []byte{}, make([]byte, 16))
	f.Add(uint8(4), uint8(1), []byte{}, uint16(0), []byte{}, []byte{0, 0, 0, 2, 0x7f, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, nb, mode uint8, flips []byte, cut uint16, tail, idx []byte) {
		n := 1 + int(nb%12)
		log, ends := fuzzLog(t, n)
		trusted := mode&1 != 0
		if !trusted {
			for i := 0; i+2 < len(flips); i += 3 {
				p := int(binary.BigEndian.Uint16(flips[i:])) % len(log)
				log[p] ^= flips[i+2] | 1
			}
			switch (mode >> 2) & 3 {
			case 1:
				log = log[:int(cut)%(len(log)+1)]
			case 2:
				log = append(log, tail...)
			case 3:
				log = append(log, make([]byte, int(cut)%8192)...)
			}
		}
		mem := vfs.NewMem()
		dir, pdir := "/data", "/data/t-0"
		if err := mem.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Two segments: the second starts at a batch boundary (in the original
		// layout; damage may have moved things).
		segs := [][2]int64{{0, int64(len(log))}}
		bases := []int64{0}
		if mode&2 != 0 && n > 1 {
			split := ends[n/2-1]
			if split < int64(len(log)) {
				segs = [][2]int64{{0, split}, {split, int64(len(log))}}
				h, err := record.ParseEntryHeader(log[split:], split)
				second := int64(n) * 10
				if err == nil && h.Offset >= 0 && h.Offset < 1<<40 {
					second = h.Offset
				}
				bases = append(bases, second)
			}
		}
		for i, s := range segs {
			putFile(t, mem, segment.FilePath(pdir, bases[i], segment.LogSuffix), log[s[0]:s[1]])
			ix := idx
			if i > 0 || !trusted {
				ix = nil // only the first segment gets the fuzzed index
			}
			putFile(t, mem, segment.FilePath(pdir, bases[i], segment.IndexSuffix), ix)
			putFile(t, mem, segment.FilePath(pdir, bases[i], segment.TimeIndexSuffix), nil)
		}
		if trusted {
			rp := map[checkpoint.TopicPartition]int64{{Topic: "t", Partition: 0}: 1 << 40}
			if err := checkpoint.WriteOffsets(mem, filepath.Join(dir, checkpoint.RecoveryPointFile), rp); err != nil {
				t.Fatal(err)
			}
			putFile(t, mem, filepath.Join(dir, recovery.CleanShutdownFile), nil)
		}
		opts := &recovery.Options{FS: mem, Logger: quietLog, OptionsFor: func(string) *segment.Options { return recoverySegOpts() }}
		d, _, err := recovery.OpenDataDir(dir, opts)
		if err != nil {
			t.Fatalf("recovery failed: %v", err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		verifyRecovered(t, mem, pdir, trusted, n)
	})
}

// verifyRecovered checks a recovered partition in full (see FuzzRecoverSegment).
func verifyRecovered(t *testing.T, mem vfs.FS, pdir string, trusted bool, n int) {
	so := recoverySegOpts()
	so.FS = mem
	lr, err := segment.Inspect(pdir, so)
	if err != nil {
		t.Fatal(err)
	}
	if lr.BytesTruncated != 0 || lr.IndexesRebuilt != 0 || lr.SegmentsRemoved != 0 || len(lr.TempFilesRemoved) != 0 {
		t.Fatalf("a full rescan after recovery would still change things: %+v", lr)
	}
	names, err := mem.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(-1)
	batches := 0
	for _, name := range names {
		base, suf, ok := segment.ParseFileName(name)
		if !ok || suf != segment.LogSuffix {
			continue
		}
		f, err := mem.Open(filepath.Join(pdir, name))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		sc := record.NewFileScanner(f, 0, st.Size(), record.ScanOptions{VerifyCRC: true})
		pos := int64(0)
		for sc.Next() {
			h := sc.Header()
			if h.Offset < base || h.Offset <= next {
				t.Fatalf("%s: offset %d at %d after %d (base %d)", name, h.Offset, sc.Pos(), next, base)
			}
			next = h.LastOffset
			pos = sc.Pos() + h.TotalSize()
			batches++
		}
		f.Close()
		if sc.Err() != nil || pos != st.Size() {
			t.Fatalf("%s: invalid bytes from %d of %d: %v", name, pos, st.Size(), sc.Err())
		}
	}
	if trusted && batches != n {
		t.Fatalf("intact log lost batches: %d of %d", batches, n)
	}
	// Read everything back through the indexes.
	so.CleanShutdown = true
	l, err := segment.Open(pdir, so)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seen := 0
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		buf, err := r.ReadInto(nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewIterator(buf, record.ScanOptions{VerifyCRC: true})
		last := off
		for it.Next() {
			if it.Header().LastOffset < off {
				continue
			}
			seen++
			last = it.Header().LastOffset + 1
		}
		if last == off {
			// A gap in the offsets: a segment cut to nothing keeps its base, so
			// the log continues at the next segment (as in Kafka).
			for _, sg := range l.Segments() {
				if sg.Base() > off && len(buf) == 0 {
					last = sg.Base()
					break
				}
			}
		}
		if last == off {
			t.Fatalf("read at %d made no progress (%d bytes, %v)", off, len(buf), it.Err())
		}
		off = last
	}
	if seen != batches {
		t.Fatalf("read %d batches through the log, %d in the files", seen, batches)
	}
}
