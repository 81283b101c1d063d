package index

import (
	"encoding/binary"
	"unsafe"
)

// warmBytes is the size of the index tail searched first (Kafka's warm section):
// lookups for recent offsets touch only these pages, which therefore stay in memory.
const warmBytes = 8192

// The searches below follow Kafka's AbstractIndex.indexSlotRangeFor: if the target
// lies beyond the first entry of the warm section (the last warmBytes of entries),
// binary-search the warm section only; otherwise the cold part. They read keys
// straight from b, big-endian, and never allocate. On an unsorted (corrupt) index
// they return some slot in range; they never index outside b[:n*stride].

// interpWindow and interpMaxGallop bound the interpolation that narrows a cold-part
// search: one guess, then probes 32 and 64 slots away from it. Keys of real indexes
// (offsets, positions, timestamps) grow roughly linearly with the slot, so the guess
// usually brackets the answer within a few hundred bytes, or at least cuts the range
// at a point close to it; skewed keys only cost the three wasted probes before the
// binary search takes over. Measured on a full 10 MiB index (BenchmarkOffsetLookup):
// longer gallops help jittered keys little and cost skewed keys much.
const (
	interpWindow    = 32
	interpMaxGallop = 64
)

// keyWidth is the type of an index key: int32 (offset index: relative offsets
// and positions) or int64 (time index: timestamps). The searches are written
// once for both; each width gets its own compiled copy (distinct GC shapes),
// in which keyAt's size test is a constant, so the key read stays as cheap as
// a hand-written one.
type keyWidth interface{ int32 | int64 }

// keyAt reads the big-endian K at slot i, byte off within the entry.
func keyAt[K keyWidth](b []byte, stride, off, i int) int64 {
	var k K
	if unsafe.Sizeof(k) == 4 {
		return int64(int32(binary.BigEndian.Uint32(b[i*stride+off:])))
	}
	return int64(binary.BigEndian.Uint64(b[i*stride+off:]))
}

// key32 reads the int32 at slot i, byte off within the entry.
func key32(b []byte, stride, off, i int) int64 { return keyAt[int32](b, stride, off, i) }

// key64 reads the int64 at slot i, byte off within the entry.
func key64(b []byte, stride, off, i int) int64 { return keyAt[int64](b, stride, off, i) }

// floor32 returns the largest slot whose int32 key is <= target, or -1.
func floor32(b []byte, n, stride, off int, target int64) int {
	return floor[int32](b, n, stride, off, target)
}

// floor64 is floor32 for int64 keys.
func floor64(b []byte, n, stride, off int, target int64) int {
	return floor[int64](b, n, stride, off, target)
}

// floor returns the largest slot whose K key is <= target, or -1.
func floor[K keyWidth](b []byte, n, stride, off int, target int64) int {
	if n == 0 {
		return -1
	}
	lo, hi := 0, n-1
	firstHot := n - 1 - warmBytes/stride
	if firstHot < 0 {
		firstHot = 0
	}
	if keyAt[K](b, stride, off, firstHot) < target {
		lo = firstHot
	} else if keyAt[K](b, stride, off, 0) > target {
		return -1
	} else {
		lo, hi = narrow[K](b, stride, off, 0, firstHot, target)
	}
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		k := keyAt[K](b, stride, off, mid)
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

// ceil32 returns the smallest slot whose int32 key is >= target, or -1 (Kafka's
// smallest upper bound).
func ceil32(b []byte, n, stride, off int, target int64) int {
	if n == 0 {
		return -1
	}
	f := floor32(b, n, stride, off, target)
	switch {
	case f < 0:
		return 0
	case key32(b, stride, off, f) == target:
		return f
	case f+1 < n:
		return f + 1
	}
	return -1
}

// lowerBound32 returns the number of leading slots whose int32 key is < target,
// assuming keys are non-decreasing (duplicates allowed). Used by TruncateTo.
func lowerBound32(b []byte, n, stride, off int, target int64) int {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if key32(b, stride, off, mid) < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// narrow shrinks [lo, hi], where key(lo) <= target <= key(hi), around the slot of
// target: one interpolation guess g, then probes galloping away from g (32, then 64
// slots) until one lands on the other side of target. It
// keeps key(lo) <= target and the answer in [lo, hi]; when the keys are far from
// linear it gives up after a few probes and leaves the rest to the binary search.
func narrow[K keyWidth](b []byte, stride, off, lo, hi int, target int64) (int, int) {
	if hi-lo <= 2*interpWindow {
		return lo, hi
	}
	klo, khi := keyAt[K](b, stride, off, lo), keyAt[K](b, stride, off, hi)
	if khi <= klo {
		return lo, hi
	}
	g := lo + int(float64(hi-lo)*((float64(target)-float64(klo))/(float64(khi)-float64(klo))))
	if g <= lo || g >= hi {
		return lo, hi
	}
	if keyAt[K](b, stride, off, g) <= target {
		lo = g
		for w := interpWindow; w <= interpMaxGallop; w *= 2 {
			p := g + w
			if p >= hi {
				break
			}
			if keyAt[K](b, stride, off, p) > target {
				return lo, p - 1
			}
			lo = p
		}
		return lo, hi
	}
	hi = g - 1
	for w := interpWindow; w <= interpMaxGallop; w *= 2 {
		p := g - w
		if p <= lo {
			break
		}
		if keyAt[K](b, stride, off, p) <= target {
			return p, hi
		}
		hi = p - 1
	}
	return lo, hi
}
