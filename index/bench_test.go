package index

import (
	"math/rand/v2"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

const benchIndexBytes = 10 << 20 // Kafka's default segment.index.bytes

// fullOffsetIndex builds a full 10 MiB mmapped offset index. Entry i's offset gap
// comes from gap (entry i is then at position 1600i); it returns the index, the
// base and the last offset.
func fullOffsetIndex(b *testing.B, gap func(i int) int64) (*OffsetIndex, int64, int64) {
	b.Helper()
	const base = 1 << 30
	ix := mustOffset(b, vfs.OS, join(b.TempDir(), "00000000001073741824.index"), base, benchIndexBytes, true)
	off := int64(base)
	for i := 0; !ix.IsFull(); i++ {
		off += gap(i)
		if err := ix.Append(off, int32(1600*i)); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { _ = ix.Close() })
	return ix, base, off
}

// Offset gaps between index entries: regular (4 offsets per entry), jittered (1 to
// 200 records per 4 KiB of log: mixed record sizes), and a burst pattern that
// defeats interpolation (the first 90% of entries cover 1% of the offsets).
var gaps = []struct {
	name string
	gap  func(i int) int64
}{
	{"regular", func(int) int64 { return 4 }},
	{"jitter", func(i int) int64 { return 1 + int64(uint32(i)*2654435761%200) }},
	{"skewed", func(i int) int64 {
		if i < 1179648 {
			return 1
		}
		return 800
	}},
}

func targets(n int, lo, hi int64) []int64 {
	rng := rand.New(rand.NewPCG(1, 2))
	t := make([]int64, n)
	for i := range t {
		t[i] = lo + rng.Int64N(hi-lo)
	}
	return t
}

// BenchmarkOffsetLookup: lookups on a full, warm (page-cached, mapped) 10 MiB offset
// index (1,310,720 entries), random targets. random: over the whole index (almost
// all in the cold part); cold: only the cold part; warm: only the last 8 KiB of
// entries (recent offsets, the common case for consumers at the tail).
func BenchmarkOffsetLookup(b *testing.B) {
	for _, g := range gaps {
		b.Run(g.name, func(b *testing.B) {
			ix, base, last := fullOffsetIndex(b, g.gap)
			n := ix.Entries()
			warmStart, _, _ := ix.Entry(n - 1 - warmBytes/OffsetEntrySize)
			// Touch every page once so the benchmark measures a warm index.
			for _, q := range targets(1<<16, base, last+1) {
				ix.Lookup(q)
			}
			for _, c := range []struct {
				name   string
				lo, hi int64
			}{{"random", base, last + 1}, {"cold", base, warmStart}, {"warm", warmStart + 1, last + 1}} {
				ts := targets(1<<16, c.lo, c.hi)
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					var sink int64
					i := 0
					for b.Loop() {
						off, _ := ix.Lookup(ts[i&(1<<16-1)])
						sink += off
						i++
					}
					_ = sink
				})
				// The same targets with Kafka's plain warm-section binary search, as a
				// baseline measured in the same run.
				b.Run(c.name+"-kafka", func(b *testing.B) {
					buf, n := ix.s.view()
					var sink int
					i := 0
					for b.Loop() {
						sink += kafkaFloor32(buf, n, ts[i&(1<<16-1)]-base)
						i++
					}
					_ = sink
				})
			}
		})
	}
}

func BenchmarkTimeLookup(b *testing.B) {
	const base = 0
	tx := mustTime(b, vfs.OS, join(b.TempDir(), "00000000000000000000.timeindex"), base, benchIndexBytes, true)
	b.Cleanup(func() { _ = tx.Close() })
	const t0 = 1_700_000_000_000
	for i := 0; !tx.IsFull(); i++ {
		if err := tx.Append(t0+10*int64(i), base+4*int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	n := int64(tx.Entries())
	warmStart := t0 + 10*(n-warmBytes/TimeEntrySize)
	for _, c := range []struct {
		name   string
		lo, hi int64
	}{{"random", t0, t0 + 10*n}, {"cold", t0, warmStart - 20}, {"warm", warmStart, t0 + 10*n}} {
		ts := targets(1<<16, c.lo, c.hi)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink int64
			i := 0
			for b.Loop() {
				_, off := tx.Lookup(ts[i&(1<<16-1)])
				sink += off
				i++
			}
			_ = sink
		})
	}
}

func BenchmarkOffsetAppend(b *testing.B) {
	for _, bk := range backends {
		b.Run(bk.name, func(b *testing.B) {
			fs, dir := bk.open(b)
			if !bk.mapped {
				fs = discardWritesFS{fs}
			}
			ix := mustOffset(b, fs, join(dir, "a.index"), 0, benchIndexBytes, true)
			b.Cleanup(func() { _ = ix.Close() })
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				if ix.IsFull() {
					b.StopTimer()
					if err := ix.Reset(); err != nil {
						b.Fatal(err)
					}
					i = 0
					b.StartTimer()
				}
				i++
				if err := ix.Append(i, int32(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// kafkaFloor32 is AbstractIndex.indexSlotRangeFor (largest lower bound) without the
// interpolation step, for the baseline.
func kafkaFloor32(b []byte, n int, target int64) int {
	lo, hi := 0, n-1
	firstHot := max(0, n-1-warmBytes/OffsetEntrySize)
	if key32(b, 8, 0, firstHot) < target {
		lo = firstHot
	} else if key32(b, 8, 0, 0) > target {
		return -1
	} else {
		hi = firstHot
	}
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		k := key32(b, 8, 0, mid)
		if k > target {
			hi = mid - 1
		} else if k < target {
			lo = mid
		} else {
			return mid
		}
	}
	return lo
}
