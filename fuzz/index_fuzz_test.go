package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/internal/vfs"
)

// indexFile writes data as a file on the in-memory filesystem, or on the real one
// (the mmap backend) when mapped.
func indexFile(t *testing.T, name string, data []byte, mapped bool) (vfs.FS, string) {
	var fs vfs.FS
	var path string
	if mapped {
		fs, path = vfs.OS, filepath.Join(t.TempDir(), name)
	} else {
		m := vfs.NewMem()
		if err := m.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		fs, path = m, "/d/"+name
	}
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, path
}

func readBack(t *testing.T, fs vfs.FS, path string) []byte {
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		t.Fatal(err)
	}
	return b
}

// FuzzIndexLoad loads arbitrary bytes as a .index file: opening, Check, SanityCheck
// and lookups never panic; a bad length or a failed check is a marked corruption
// error; when Check passes, lookups agree with a reference over the entries, and an
// entry appended after the last one lands as Kafka would write it.
func FuzzIndexLoad(f *testing.F) {
	e := func(rel, pos uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, rel), pos)
	}
	cat := func(p ...[]byte) []byte { return bytes.Join(p, nil) }
	f.Add([]byte{}, int64(0), int64(0), false)
	f.Add(cat(e(5, 4120), e(11, 8250), e(20, 12400)), int64(1000), int64(20000), false)
	f.Add(cat(e(5, 4120), e(11, 8250), e(20, 12400)), int64(1000), int64(20000), true)
	f.Add(cat(e(3, 100), e(9, 5000), e(0, 0), e(0, 0)), int64(0), int64(1<<20), false)
	f.Add(cat(e(3, 100), e(2, 200)), int64(7), int64(1<<20), true)
	f.Add(cat(e(3, 100), []byte{1, 2, 3}), int64(7), int64(1<<20), false)
	f.Add(cat(e(math.MaxInt32, 1), e(0xffffffff, 2)), int64(1<<40), int64(10), false)
	// Indexes long enough for the cold part (beyond the last 8 KiB) to be searched:
	// jittered gaps, and a step that defeats interpolation.
	var jitter, step []byte
	for i := uint32(0); i < 3000; i++ {
		jitter = append(jitter, e(i*100+i*2654435761%97, i*4096+i%13)...)
		step = append(step, e(i+(i/2000)*1_000_000, i*4096)...)
	}
	f.Add(jitter, int64(5000), int64(1<<30), false)
	f.Add(step, int64(0), int64(1<<30), true)
	f.Fuzz(func(t *testing.T, data []byte, base, logSize int64, mapped bool) {
		if len(data) > 1<<15 {
			return
		}
		base &= 1<<62 - 1
		fs, path := indexFile(t, "00000000000000000000.index", data, mapped)
		ix, err := index.OpenOffsetIndex(fs, path, base, 0, false)
		if len(data)%index.OffsetEntrySize != 0 {
			if !index.IsCorruption(err) {
				t.Fatalf("length %d: want a corruption error, got %v", len(data), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkErr := ix.Check(logSize)
		if checkErr != nil && !index.IsCorruption(checkErr) {
			t.Fatalf("Check returned an unmarked error: %v", checkErr)
		}
		if err := ix.SanityCheck(); err != nil && !index.IsCorruption(err) {
			t.Fatalf("SanityCheck returned an unmarked error: %v", err)
		}
		n := ix.Entries()
		offs := make([]int64, n)
		poss := make([]int32, n)
		for i := range n {
			o, p, err := ix.Entry(i)
			if err != nil {
				t.Fatal(err)
			}
			offs[i], poss[i] = o, p
		}
		probes := []int64{math.MinInt64, -1, 0, base - 1, base, base + 1, math.MaxInt64}
		for _, o := range offs {
			probes = append(probes, o-1, o, o+1)
		}
		for _, q := range probes {
			o, p := ix.Lookup(q)
			if checkErr != nil {
				continue // any answer, but no panic
			}
			wo, wp := base, int32(0)
			if i := sort.Search(n, func(i int) bool { return offs[i] > q }) - 1; i >= 0 {
				wo, wp = offs[i], poss[i]
			}
			if o != wo || p != wp {
				t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", q, o, p, wo, wp)
			}
		}
		pprobes := []int32{math.MinInt32, -1, 0, math.MaxInt32}
		for _, p := range poss {
			pprobes = append(pprobes, p-1, p, p+1)
		}
		for _, q := range pprobes {
			o, p, ok := ix.LookupPosition(q)
			if checkErr != nil {
				continue
			}
			var wo int64
			var wp int32
			wok := false
			if i := sort.Search(n, func(i int) bool { return poss[i] >= q }); i < n {
				wo, wp, wok = offs[i], poss[i], true
			}
			if o != wo || p != wp || ok != wok {
				t.Fatalf("LookupPosition(%d) = (%d, %d, %v), want (%d, %d, %v)", q, o, p, ok, wo, wp, wok)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if checkErr != nil {
			return
		}
		// A valid index reopened writable takes one more entry; the file is the old
		// bytes plus that entry in Kafka's layout.
		w, err := index.OpenOffsetIndex(fs, path, base, len(data)+16, true)
		if err != nil {
			t.Fatal(err)
		}
		nextOff, nextPos := base, int32(0)
		if n > 0 {
			nextOff, nextPos = offs[n-1]+1, poss[n-1]+1
		}
		err = w.Append(nextOff, nextPos)
		switch {
		case errors.Is(err, index.ErrOffsetOverflow) || errors.Is(err, index.ErrInvalidPosition):
			nextOff = -1
		case err != nil:
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		want := data
		if nextOff >= 0 {
			want = append(bytes.Clone(data), e(uint32(nextOff-base), uint32(nextPos))...)
		}
		if got := readBack(t, fs, path); !bytes.Equal(got, want) {
			t.Fatalf("file after append:\n got % x\nwant % x", got, want)
		}
	})
}

// FuzzTimeIndexLoad does the same for .timeindex files.
func FuzzTimeIndexLoad(f *testing.F) {
	e := func(ts int64, rel uint32) []byte {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, uint64(ts)), rel)
	}
	cat := func(p ...[]byte) []byte { return bytes.Join(p, nil) }
	f.Add([]byte{}, int64(0), int64(0), false)
	f.Add(cat(e(1700000000000, 5), e(1700000000500, 11)), int64(1000), int64(1012), false)
	f.Add(cat(e(1700000000000, 5), e(1700000000500, 11)), int64(1000), int64(1012), true)
	f.Add(cat(e(1000, 3), e(2000, 9), e(0, 0)), int64(0), int64(1<<20), false)
	f.Add(cat(e(1000, 3), e(900, 4)), int64(0), int64(1<<20), true)
	f.Add(cat(e(1000, 3), e(2000, 3)), int64(50), int64(1<<20), false)
	f.Add(cat(e(-5, 3), []byte{9}), int64(0), int64(1<<20), false)
	var jitter, step []byte
	for i := int64(0); i < 2000; i++ {
		jitter = append(jitter, e(1_700_000_000_000+i*1000+i*2654435761%997, uint32(i*3))...)
		step = append(step, e(i+(i/1500)*1_000_000_000, uint32(i))...)
	}
	f.Add(jitter, int64(0), int64(1<<30), true)
	f.Add(step, int64(0), int64(1<<30), false)
	f.Fuzz(func(t *testing.T, data []byte, base, logEnd int64, mapped bool) {
		if len(data) > 1<<15 {
			return
		}
		base &= 1<<62 - 1
		fs, path := indexFile(t, "00000000000000000000.timeindex", data, mapped)
		ix, err := index.OpenTimeIndex(fs, path, base, 0, false)
		if len(data)%index.TimeEntrySize != 0 {
			if !index.IsCorruption(err) {
				t.Fatalf("length %d: want a corruption error, got %v", len(data), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkErr := ix.Check(logEnd)
		if checkErr != nil && !index.IsCorruption(checkErr) {
			t.Fatalf("Check returned an unmarked error: %v", checkErr)
		}
		if err := ix.SanityCheck(); err != nil && !index.IsCorruption(err) {
			t.Fatalf("SanityCheck returned an unmarked error: %v", err)
		}
		n := ix.Entries()
		tss := make([]int64, n)
		offs := make([]int64, n)
		for i := range n {
			ts, o, err := ix.Entry(i)
			if err != nil {
				t.Fatal(err)
			}
			tss[i], offs[i] = ts, o
		}
		probes := []int64{math.MinInt64, -1, 0, math.MaxInt64}
		for _, ts := range tss {
			probes = append(probes, ts-1, ts, ts+1)
		}
		for _, q := range probes {
			ts, o := ix.Lookup(q)
			if checkErr != nil {
				continue
			}
			wts, wo := index.NoTimestamp, base
			if i := sort.Search(n, func(i int) bool { return tss[i] > q }) - 1; i >= 0 {
				wts, wo = tss[i], offs[i]
			}
			if ts != wts || o != wo {
				t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", q, ts, o, wts, wo)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if checkErr != nil {
			return
		}
		w, err := index.OpenTimeIndex(fs, path, base, len(data)+36, true)
		if err != nil {
			t.Fatal(err)
		}
		lastTs, lastOff := w.LastEntry()
		want := data
		if lastTs < math.MaxInt64 {
			err := w.Append(lastTs+1, lastOff)
			switch {
			case errors.Is(err, index.ErrOffsetOverflow):
			case err != nil:
				t.Fatal(err)
			default:
				want = append(bytes.Clone(data), e(lastTs+1, uint32(lastOff-base))...)
			}
			// Smaller or equal timestamps are no-ops.
			if err := w.Append(lastTs, lastOff); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readBack(t, fs, path); !bytes.Equal(got, want) {
			t.Fatalf("file after append:\n got % x\nwant % x", got, want)
		}
	})
}
