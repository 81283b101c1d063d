package index

import "encoding/binary"

// warmBytes is the size of the index tail searched first (Kafka's warm section):
// lookups for recent offsets touch only these pages, which therefore stay in memory.
const warmBytes = 8192

// The searches below follow Kafka's AbstractIndex.indexSlotRangeFor: if the target
// lies beyond the first entry of the warm section (the last warmBytes of entries),
// binary-search the warm section only; otherwise the cold part. They read keys
// straight from b, big-endian, and never allocate. On an unsorted (corrupt) index
// they return some slot in range; they never index outside b[:n*stride].

// key32 reads the int32 at slot i, byte off within the entry.
func key32(b []byte, stride, off, i int) int64 {
	return int64(int32(binary.BigEndian.Uint32(b[i*stride+off:])))
}

// key64 reads the int64 at slot i, byte off within the entry.
func key64(b []byte, stride, off, i int) int64 {
	return int64(binary.BigEndian.Uint64(b[i*stride+off:]))
}

// floor32 returns the largest slot whose int32 key is <= target, or -1.
func floor32(b []byte, n, stride, off int, target int64) int {
	if n == 0 {
		return -1
	}
	lo, hi := 0, n-1
	firstHot := n - 1 - warmBytes/stride
	if firstHot < 0 {
		firstHot = 0
	}
	if key32(b, stride, off, firstHot) < target {
		lo = firstHot
	} else if key32(b, stride, off, 0) > target {
		return -1
	} else {
		hi = firstHot
	}
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		k := key32(b, stride, off, mid)
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

// floor64 is floor32 for int64 keys.
func floor64(b []byte, n, stride, off int, target int64) int {
	if n == 0 {
		return -1
	}
	lo, hi := 0, n-1
	firstHot := n - 1 - warmBytes/stride
	if firstHot < 0 {
		firstHot = 0
	}
	if key64(b, stride, off, firstHot) < target {
		lo = firstHot
	} else if key64(b, stride, off, 0) > target {
		return -1
	} else {
		hi = firstHot
	}
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		k := key64(b, stride, off, mid)
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
