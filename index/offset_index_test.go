package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

func checkOffsetAgainst(t *testing.T, ix *OffsetIndex, ref *offsetRef, rng *rand.Rand) {
	t.Helper()
	if ix.Entries() != len(ref.off) {
		t.Fatalf("entries %d, want %d", ix.Entries(), len(ref.off))
	}
	wantLast := ref.base
	if len(ref.off) > 0 {
		wantLast = ref.off[len(ref.off)-1]
	}
	if got := ix.LastOffset(); got != wantLast {
		t.Fatalf("LastOffset %d, want %d", got, wantLast)
	}
	probes := []int64{math.MinInt64, -1, 0, ref.base - 1, ref.base, ref.base + 1, wantLast, wantLast + 1, math.MaxInt64}
	for i := range ref.off {
		if i%7 == 0 || i == len(ref.off)-1 {
			probes = append(probes, ref.off[i]-1, ref.off[i], ref.off[i]+1)
		}
	}
	for range 200 {
		probes = append(probes, ref.base-5+rng.Int64N(wantLast-ref.base+20))
	}
	for _, p := range probes {
		go1, gp := ix.Lookup(p)
		wo, wp := ref.lookup(p)
		if go1 != wo || gp != wp {
			t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", p, go1, gp, wo, wp)
		}
	}
	maxPos := int32(0)
	if len(ref.pos) > 0 {
		maxPos = ref.pos[len(ref.pos)-1]
	}
	pp := []int32{math.MinInt32, -1, 0, maxPos, maxPos + 1, math.MaxInt32}
	for i := range ref.pos {
		if i%7 == 0 {
			pp = append(pp, ref.pos[i]-1, ref.pos[i], ref.pos[i]+1)
		}
	}
	for range 100 {
		pp = append(pp, rng.Int32N(maxPos+10))
	}
	for _, p := range pp {
		o, q, ok := ix.LookupPosition(p)
		wo, wq, wok := ref.lookupPos(p)
		if o != wo || q != wq || ok != wok {
			t.Fatalf("LookupPosition(%d) = (%d, %d, %v), want (%d, %d, %v)", p, o, q, ok, wo, wq, wok)
		}
	}
	for i := range ref.off {
		o, p, err := ix.Entry(i)
		if err != nil || o != ref.off[i] || p != ref.pos[i] {
			t.Fatalf("Entry(%d) = (%d, %d, %v), want (%d, %d)", i, o, p, err, ref.off[i], ref.pos[i])
		}
	}
	if _, _, err := ix.Entry(len(ref.off)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Entry(past end) err = %v", err)
	}
}

// kafkaOffsetFile builds a .index file by hand from the reference.
func kafkaOffsetFile(ref *offsetRef) []byte {
	var b []byte
	for i := range ref.off {
		b = binary.BigEndian.AppendUint32(b, uint32(ref.off[i]-ref.base))
		b = binary.BigEndian.AppendUint32(b, uint32(ref.pos[i]))
	}
	return b
}

// TestOffsetIndexModel drives random operations against the index and a sorted-slice
// reference, over both backends, including trims, resizes, truncations, resets and
// reopens, and compares the file with a hand-built Kafka file after every close.
func TestOffsetIndexModel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, 99))
			base := []int64{0, 1000, math.MaxInt64 / 2, 7}[seed-1]
			maxBytes := 8*3000 + int(seed) // not a multiple of 8: rounded down
			path := join(dir, "00000000000000001000.index")
			_ = fs.Remove(path)
			ix := mustOffset(t, fs, path, base, maxBytes, true)
			if ix.IsMapped() != (fs == vfs.OS) {
				t.Fatalf("IsMapped = %v", ix.IsMapped())
			}
			if ix.MaxEntries() != 3000 || ix.Entries() != 0 || fileSize(t, fs, path) != 3000*8 {
				t.Fatalf("new index: max %d entries %d size %d", ix.MaxEntries(), ix.Entries(), fileSize(t, fs, path))
			}
			ref := &offsetRef{base: base}
			nextOff, nextPos := base, int32(0)
			for step := 0; step < 6000; step++ {
				switch r := rng.IntN(1000); {
				case r < 900:
					nextOff += 1 + rng.Int64N(50)
					nextPos += 1 + rng.Int32N(5000)
					err := ix.Append(nextOff, nextPos)
					if len(ref.off) >= 3000 {
						if !errors.Is(err, ErrIndexFull) || !ix.IsFull() {
							t.Fatalf("append to full index: %v", err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("append(%d, %d): %v", nextOff, nextPos, err)
					}
					ref.off, ref.pos = append(ref.off, nextOff), append(ref.pos, nextPos)
				case r < 920:
					checkOffsetAgainst(t, ix, ref, rng)
				case r < 930:
					to := base + rng.Int64N(nextOff-base+10)
					if err := ix.TruncateTo(to); err != nil {
						t.Fatal(err)
					}
					ref.truncateTo(to)
					nextOff, nextPos = ix.LastOffset(), 0
					if len(ref.pos) > 0 {
						nextPos = ref.pos[len(ref.pos)-1]
					}
				case r < 940:
					if err := ix.Trim(); err != nil {
						t.Fatal(err)
					}
					if got := fileSize(t, fs, path); got != int64(len(ref.off))*8 || got != ix.SizeBytes() {
						t.Fatalf("trimmed size %d, want %d", got, len(ref.off)*8)
					}
				case r < 945:
					if err := ix.Resize(maxBytes); err != nil {
						t.Fatal(err)
					}
					if got := fileSize(t, fs, path); got != 3000*8 {
						t.Fatalf("resized size %d", got)
					}
				case r < 947:
					if err := ix.Reset(); err != nil {
						t.Fatal(err)
					}
					ref.off, ref.pos = nil, nil
					nextOff, nextPos = base, 0
				case r < 960:
					if err := ix.Sync(); err != nil {
						t.Fatal(err)
					}
				default:
					if err := ix.Close(); err != nil {
						t.Fatal(err)
					}
					if got, want := readAll(t, fs, path), kafkaOffsetFile(ref); !bytes.Equal(got, want) {
						t.Fatalf("file after close differs from the Kafka-format file (%d vs %d bytes)", len(got), len(want))
					}
					ix = mustOffset(t, fs, path, base, maxBytes, true)
				}
			}
			checkOffsetAgainst(t, ix, ref, rng)
			if err := ix.Check(int64(nextPos) + 1); err != nil {
				t.Fatal(err)
			}
			if err := ix.SanityCheck(); err != nil {
				t.Fatal(err)
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			ro := mustOffset(t, fs, path, base, 0, false)
			checkOffsetAgainst(t, ro, ref, rng)
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestOffsetIndexAppendErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		path := join(dir, "00000000000000000100.index")
		ix := mustOffset(t, fs, path, 100, 8*4, true)
		if off, pos := ix.Lookup(150); off != 100 || pos != 0 {
			t.Fatalf("empty lookup = (%d, %d)", off, pos)
		}
		if _, _, ok := ix.LookupPosition(0); ok {
			t.Fatal("LookupPosition on empty index found an entry")
		}
		if err := ix.Append(99, 10); !errors.Is(err, ErrInvalidOffset) {
			t.Fatalf("below base: %v", err)
		}
		if err := ix.Append(100+math.MaxInt32+1, 10); !errors.Is(err, ErrOffsetOverflow) {
			t.Fatalf("overflow: %v", err)
		}
		if err := ix.Append(100, -1); !errors.Is(err, ErrInvalidPosition) {
			t.Fatalf("negative position: %v", err)
		}
		if err := ix.Append(100, 0); err != nil { // relative offset 0 is allowed
			t.Fatal(err)
		}
		if err := ix.Append(100, 50); !errors.Is(err, ErrInvalidOffset) {
			t.Fatalf("equal offset: %v", err)
		}
		if err := ix.Append(105, 0); !errors.Is(err, ErrInvalidPosition) {
			t.Fatalf("equal position: %v", err)
		}
		if err := ix.Append(100+math.MaxInt32, 4096); err != nil { // largest relative offset
			t.Fatal(err)
		}
		if err := ix.Append(100+math.MaxInt32+1, 8192); !errors.Is(err, ErrInvalidOffset) && !errors.Is(err, ErrOffsetOverflow) {
			t.Fatalf("past max: %v", err)
		}
		if ix.Entries() != 2 || ix.IsFull() {
			t.Fatalf("entries %d full %v", ix.Entries(), ix.IsFull())
		}
		if err := ix.Reset(); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := ix.Append(int64(101+i), int32(i*10)); err != nil {
				t.Fatal(err)
			}
		}
		if !ix.IsFull() {
			t.Fatal("not full")
		}
		if err := ix.Append(200, 1000); !errors.Is(err, ErrIndexFull) {
			t.Fatalf("full: %v", err)
		}
		if err := ix.Resize(8 * 3); !errors.Is(err, ErrInvalidSize) {
			t.Fatalf("resize below entries: %v", err)
		}
		if fs == vfs.OS {
			if err := ix.Resize(8 * 5); !errors.Is(err, ErrInvalidSize) {
				t.Fatalf("resize past mapping: %v", err)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ix.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("second close: %v", err)
		}
		if err := ix.Append(300, 2000); !errors.Is(err, ErrClosed) {
			t.Fatalf("append after close: %v", err)
		}
		if _, _, err := ix.Entry(0); !errors.Is(err, ErrClosed) {
			t.Fatalf("entry after close: %v", err)
		}
		if off, pos := ix.Lookup(102); off != 100 || pos != 0 {
			t.Fatalf("lookup after close = (%d, %d), want the miss", off, pos)
		}
		if err := ix.Check(1 << 20); !errors.Is(err, ErrClosed) {
			t.Fatalf("check after close: %v", err)
		}
		if _, err := OpenOffsetIndex(fs, path, 100, 4, true); !errors.Is(err, ErrInvalidSize) {
			t.Fatalf("max below one entry: %v", err)
		}
		if _, err := OpenOffsetIndex(fs, path, -1, 64, true); !errors.Is(err, ErrInvalidOffset) {
			t.Fatalf("negative base: %v", err)
		}

		// Read-only: maps only the file, refuses writes.
		ro := mustOffset(t, fs, path, 100, 1<<20, false)
		if ro.Entries() != 4 || ro.MaxEntries() != 4 || !ro.IsFull() {
			t.Fatalf("read-only: entries %d max %d", ro.Entries(), ro.MaxEntries())
		}
		for _, err := range []error{ro.Append(500, 5000), ro.Trim(), ro.Resize(64), ro.TruncateTo(0), ro.Reset()} {
			if !errors.Is(err, ErrReadOnly) {
				t.Fatalf("read-only mutation: %v", err)
			}
		}
		if err := ro.Sync(); err != nil {
			t.Fatal(err)
		}
		if off, pos := ro.Lookup(102); off != 102 || pos != 10 {
			t.Fatalf("read-only lookup = (%d, %d)", off, pos)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		if fileSize(t, fs, path) != 32 {
			t.Fatal("read-only close changed the file")
		}
		if _, err := OpenOffsetIndex(fs, join(dir, "missing.index"), 0, 64, false); err == nil {
			t.Fatal("read-only open of a missing file succeeded")
		}
	})
}

// TestOffsetIndexReopenExisting: an existing file keeps its length at open (Kafka
// trusts it), Append after a trim grows it back, and an empty read-only file works.
func TestOffsetIndexReopenExisting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		path := join(dir, "00000000000000000000.index")
		ix := mustOffset(t, fs, path, 0, 8*100, true)
		for i := range 10 {
			if err := ix.Append(int64(i*10+9), int32(i*4096)); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if fileSize(t, fs, path) != 80 {
			t.Fatalf("closed size %d", fileSize(t, fs, path))
		}
		ix = mustOffset(t, fs, path, 0, 8*100, true)
		if ix.Entries() != 10 || ix.MaxEntries() != 100 || fileSize(t, fs, path) != 80 {
			t.Fatalf("reopen: entries %d max %d size %d", ix.Entries(), ix.MaxEntries(), fileSize(t, fs, path))
		}
		if err := ix.Append(1000, 1<<20); err != nil {
			t.Fatal(err)
		}
		if fileSize(t, fs, path) != 800 {
			t.Fatalf("append after reopen did not grow the file: %d", fileSize(t, fs, path))
		}
		if off, pos := ix.Lookup(999); off != 99 || pos != 9*4096 {
			t.Fatalf("lookup = (%d, %d)", off, pos)
		}
		if err := ix.Trim(); err != nil {
			t.Fatal(err)
		}
		if err := ix.Append(1001, 1<<21); err != nil {
			t.Fatal(err)
		}
		if ix.Entries() != 12 || fileSize(t, fs, path) != 800 {
			t.Fatalf("append after trim: entries %d size %d", ix.Entries(), fileSize(t, fs, path))
		}
		if err := ix.TruncateTo(1000); err != nil {
			t.Fatal(err)
		}
		// The dropped slots are zeroed in the file, the length is unchanged.
		b := readAll(t, fs, path)
		if len(b) != 800 || !bytes.Equal(b[80:], make([]byte, 720)) {
			t.Fatal("truncated slots not zeroed")
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}

		empty := join(dir, "empty.index")
		writeAll(t, fs, empty, nil)
		ro := mustOffset(t, fs, empty, 5, 0, false)
		if off, pos := ro.Lookup(10); off != 5 || pos != 0 || ro.Entries() != 0 {
			t.Fatal("empty read-only index")
		}
		if err := ro.Check(0); err != nil {
			t.Fatal(err)
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		// An existing empty file opened writable has no entries and grows on Append.
		w := mustOffset(t, fs, empty, 5, 64, true)
		if w.Entries() != 0 || w.MaxEntries() != 8 {
			t.Fatalf("entries %d max %d", w.Entries(), w.MaxEntries())
		}
		if err := w.Append(6, 1); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, fs, empty); !bytes.Equal(got, []byte{0, 0, 0, 1, 0, 0, 0, 1}) {
			t.Fatalf("file % x", got)
		}
	})
}
