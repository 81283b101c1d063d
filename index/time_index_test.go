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

func checkTimeAgainst(t *testing.T, ix *TimeIndex, ref *timeRef, rng *rand.Rand) {
	t.Helper()
	if ix.Entries() != len(ref.ts) {
		t.Fatalf("entries %d, want %d", ix.Entries(), len(ref.ts))
	}
	lt, lo := ix.LastEntry()
	wt, wo := ref.last()
	if lt != wt || lo != wo {
		t.Fatalf("LastEntry (%d, %d), want (%d, %d)", lt, lo, wt, wo)
	}
	probes := []int64{math.MinInt64, -2, -1, 0, 1, wt, wt + 1, math.MaxInt64}
	for i := range ref.ts {
		if i%5 == 0 || i == len(ref.ts)-1 {
			probes = append(probes, ref.ts[i]-1, ref.ts[i], ref.ts[i]+1)
		}
	}
	for range 200 {
		probes = append(probes, rng.Int64N(wt+100))
	}
	for _, p := range probes {
		gt, gotOff := ix.Lookup(p)
		et, eo := ref.lookup(p)
		if gt != et || gotOff != eo {
			t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", p, gt, gotOff, et, eo)
		}
	}
	for i := range ref.ts {
		ts, off, err := ix.Entry(i)
		if err != nil || ts != ref.ts[i] || off != ref.off[i] {
			t.Fatalf("Entry(%d) = (%d, %d, %v)", i, ts, off, err)
		}
	}
}

func kafkaTimeFile(ref *timeRef) []byte {
	var b []byte
	for i := range ref.ts {
		b = binary.BigEndian.AppendUint64(b, uint64(ref.ts[i]))
		b = binary.BigEndian.AppendUint32(b, uint32(ref.off[i]-ref.base))
	}
	return b
}

// TestTimeIndexModel: random maybe-appends (timestamps sometimes going back, equal
// offsets), final appends, truncations, trims, resizes, resets and reopens against a
// reference, over both backends.
func TestTimeIndexModel(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			base := []int64{0, 5000, 1 << 40}[seed-1]
			const maxN = 2000
			maxBytes := 12*maxN + 11
			path := join(dir, "00000000000000005000.timeindex")
			_ = fs.Remove(path)
			ix := mustTime(t, fs, path, base, maxBytes, true)
			if ix.MaxEntries() != maxN || fileSize(t, fs, path) != 12*maxN {
				t.Fatalf("new: max %d size %d", ix.MaxEntries(), fileSize(t, fs, path))
			}
			ref := &timeRef{base: base}
			ts, off := int64(1_700_000_000_000), base
			for step := 0; step < 5000; step++ {
				switch r := rng.IntN(1000); {
				case r < 900:
					// Mostly increasing timestamps; sometimes equal or smaller (no-op).
					ts += rng.Int64N(40) - 5
					off += rng.Int64N(3) // may repeat
					final := rng.IntN(50) == 0
					var err error
					if final {
						err = ix.AppendFinal(ts, off)
					} else {
						err = ix.Append(ts, off)
					}
					lt, _ := ref.last()
					n := len(ref.ts)
					switch {
					case !final && n >= maxN-1:
						if !errors.Is(err, ErrIndexFull) || !ix.IsFull() {
							t.Fatalf("append to full index: %v", err)
						}
					case ts <= lt:
						if err != nil {
							t.Fatalf("no-op append: %v", err)
						}
					case n >= maxN:
						if !errors.Is(err, ErrIndexFull) {
							t.Fatalf("final append to full index: %v", err)
						}
					default:
						if err != nil {
							t.Fatal(err)
						}
						ref.ts, ref.off = append(ref.ts, ts), append(ref.off, off)
					}
				case r < 920:
					checkTimeAgainst(t, ix, ref, rng)
				case r < 930:
					to := base + rng.Int64N(off-base+10)
					if err := ix.TruncateTo(to); err != nil {
						t.Fatal(err)
					}
					ref.truncateTo(to)
					ts, off = ix.LastEntry()
					if ts < 0 {
						ts = 1_700_000_000_000
					}
				case r < 940:
					if err := ix.Trim(); err != nil {
						t.Fatal(err)
					}
					if got := fileSize(t, fs, path); got != int64(len(ref.ts))*12 || got != ix.SizeBytes() {
						t.Fatalf("trimmed size %d", got)
					}
				case r < 945:
					if err := ix.Resize(maxBytes); err != nil {
						t.Fatal(err)
					}
				case r < 947:
					if err := ix.Reset(); err != nil {
						t.Fatal(err)
					}
					ref.ts, ref.off = nil, nil
					off = base
					if fileSize(t, fs, path) != 12*maxN {
						t.Fatal("reset did not resize to max")
					}
				default:
					if err := ix.Close(); err != nil {
						t.Fatal(err)
					}
					if got, want := readAll(t, fs, path), kafkaTimeFile(ref); !bytes.Equal(got, want) {
						t.Fatalf("file after close differs from the Kafka-format file (%d vs %d bytes)", len(got), len(want))
					}
					ix = mustTime(t, fs, path, base, maxBytes, true)
				}
			}
			checkTimeAgainst(t, ix, ref, rng)
			if err := ix.Check(off + 1); err != nil {
				t.Fatal(err)
			}
			if err := ix.SanityCheck(); err != nil {
				t.Fatal(err)
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestTimeIndexSemantics(t *testing.T) {
	forEachBackend(t, func(t *testing.T, fs vfs.FS, dir string) {
		path := join(dir, "00000000000000000010.timeindex")
		ix := mustTime(t, fs, path, 10, 12*3, true)
		if ts, off := ix.Lookup(100); ts != NoTimestamp || off != 10 {
			t.Fatalf("empty lookup = (%d, %d)", ts, off)
		}
		if ts, off := ix.LastEntry(); ts != NoTimestamp || off != 10 {
			t.Fatalf("empty last = (%d, %d)", ts, off)
		}
		// Timestamps <= -1 (v0 data) are never indexed.
		if err := ix.Append(-1, 12); err != nil || ix.Entries() != 0 {
			t.Fatalf("NoTimestamp append: %v, %d entries", err, ix.Entries())
		}
		if err := ix.Append(100, 9); !errors.Is(err, ErrInvalidOffset) {
			t.Fatalf("below base: %v", err)
		}
		if err := ix.Append(100, 10+math.MaxInt32+1); !errors.Is(err, ErrOffsetOverflow) {
			t.Fatalf("overflow: %v", err)
		}
		if err := ix.Append(100, 15); err != nil {
			t.Fatal(err)
		}
		if err := ix.Append(100, 16); err != nil || ix.Entries() != 1 { // equal ts: no-op
			t.Fatalf("equal ts: %v, %d", err, ix.Entries())
		}
		if err := ix.Append(90, 17); err != nil || ix.Entries() != 1 { // smaller ts: no-op
			t.Fatalf("smaller ts: %v, %d", err, ix.Entries())
		}
		if err := ix.Append(200, 14); !errors.Is(err, ErrInvalidOffset) {
			t.Fatalf("offset going back: %v", err)
		}
		if err := ix.Append(200, 15); err != nil { // equal offset, larger ts: appended
			t.Fatal(err)
		}
		if !ix.IsFull() || ix.Entries() != 2 {
			t.Fatalf("full %v entries %d", ix.IsFull(), ix.Entries())
		}
		if err := ix.Append(300, 20); !errors.Is(err, ErrIndexFull) {
			t.Fatalf("append to full: %v", err)
		}
		if err := ix.AppendFinal(300, 20); err != nil {
			t.Fatalf("final append: %v", err)
		}
		if err := ix.AppendFinal(400, 21); !errors.Is(err, ErrIndexFull) {
			t.Fatalf("final append past capacity: %v", err)
		}
		if err := ix.AppendFinal(300, 20); err != nil { // the same final entry again: no-op
			t.Fatal(err)
		}
		for _, c := range []struct{ q, ts, off int64 }{{99, -1, 10}, {100, 100, 15}, {199, 100, 15}, {200, 200, 15}, {1 << 60, 300, 20}} {
			if ts, off := ix.Lookup(c.q); ts != c.ts || off != c.off {
				t.Fatalf("Lookup(%d) = (%d, %d), want (%d, %d)", c.q, ts, off, c.ts, c.off)
			}
		}
		// TruncateTo drops every entry with offset >= the target, duplicates included.
		if err := ix.TruncateTo(15); err != nil || ix.Entries() != 0 {
			t.Fatalf("truncate: %v, %d", err, ix.Entries())
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		if fileSize(t, fs, path) != 0 {
			t.Fatal("close did not trim")
		}
	})
}
