package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stratalog/strata/internal/vfs"
)

// OffsetEntrySize is the size of one .index entry: int32 relative offset, int32
// position.
const OffsetEntrySize = 8

// OffsetIndex is a segment's .index file: a sparse map from offsets to byte
// positions in the .log file. One goroutine (the segment's writer) mutates it; any
// number of goroutines may call the lookup methods concurrently with the writer's
// Append, Trim, Resize and Sync, without locks. See the package documentation.
type OffsetIndex struct {
	s    *store
	base int64
}

// OpenOffsetIndex opens the offset index at path for a segment whose base offset is
// baseOffset (>= 0).
//
// Writable: a missing file is created and preallocated to roundDown(maxBytes, 8)
// bytes (sparse) with no entries. An existing file is trusted as Kafka does: entries
// = length/8, the next Append goes after the last; its length is not changed (call
// Resize for an active segment). The capacity is max(roundDown(maxBytes, 8),
// length)/8 entries, and that many bytes are mapped once, for the index's life.
//
// Read-only: the file must exist; only its length is mapped and every mutation
// returns ErrReadOnly. maxBytes is ignored.
//
// A length that is not a multiple of 8 is a CorruptionError (ErrCorruptIndex). The
// file is memory-mapped when it is an operating-system file, and otherwise read into
// memory and written through with WriteAt (in-memory filesystems).
func OpenOffsetIndex(fs vfs.FS, path string, baseOffset int64, maxBytes int, writable bool) (*OffsetIndex, error) {
	if baseOffset < 0 {
		return nil, fmt.Errorf("%w: %s: negative base offset %d", ErrInvalidOffset, path, baseOffset)
	}
	s, err := openStore(fs, path, OffsetEntrySize, maxBytes, writable)
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{s: s, base: baseOffset}, nil
}

// BaseOffset returns the segment's base offset.
func (ix *OffsetIndex) BaseOffset() int64 { return ix.base }

// Path returns the file path given at open.
func (ix *OffsetIndex) Path() string { return ix.s.path }

// Entries returns the number of entries.
func (ix *OffsetIndex) Entries() int { return int(ix.s.n.Load()) }

// MaxEntries returns the capacity in entries.
func (ix *OffsetIndex) MaxEntries() int { return int(ix.s.maxN.Load()) }

// IsFull reports whether Append would return ErrIndexFull.
func (ix *OffsetIndex) IsFull() bool { return ix.s.n.Load() >= ix.s.maxN.Load() }

// SizeBytes returns the size of the valid entries in bytes (Entries()*8), which is
// the file length after Trim.
func (ix *OffsetIndex) SizeBytes() int64 { return ix.s.n.Load() * OffsetEntrySize }

// IsMapped reports whether the memory-mapped backend is in use.
func (ix *OffsetIndex) IsMapped() bool { return ix.s.mm != nil }

func (ix *OffsetIndex) entry(b []byte, i int) (int64, int32) {
	e := b[i*OffsetEntrySize : i*OffsetEntrySize+OffsetEntrySize]
	return ix.base + int64(int32(binary.BigEndian.Uint32(e))), int32(binary.BigEndian.Uint32(e[4:]))
}

// Entry returns entry i as an absolute offset and a position. It returns ErrClosed
// after Close and ErrOutOfRange for i outside [0, Entries()).
func (ix *OffsetIndex) Entry(i int) (offset int64, position int32, err error) {
	if ix.s.closed.Load() {
		return 0, 0, ErrClosed
	}
	b, n := ix.s.view()
	if i < 0 || i >= n {
		return 0, 0, ErrOutOfRange
	}
	offset, position = ix.entry(b, i)
	return offset, position, nil
}

// LastOffset returns the offset of the last entry, or the base offset when empty.
func (ix *OffsetIndex) LastOffset() int64 {
	b, n := ix.s.view()
	if n == 0 {
		return ix.base
	}
	o, _ := ix.entry(b, n-1)
	return o
}

// Lookup returns the entry with the largest offset <= target. When there is none
// (empty index, target below the first entry, or a closed index) it returns
// (BaseOffset(), 0), from where a scan of the log always works.
func (ix *OffsetIndex) Lookup(target int64) (offset int64, position int32) {
	if target < ix.base {
		return ix.base, 0
	}
	b, n := ix.s.view()
	slot := floor32(b, n, OffsetEntrySize, 0, target-ix.base)
	if slot < 0 {
		return ix.base, 0
	}
	return ix.entry(b, slot)
}

// LookupPosition returns the entry with the smallest position >= pos (Kafka's
// fetchUpperBoundOffset, used to bound a fetch). ok is false when there is none.
func (ix *OffsetIndex) LookupPosition(pos int32) (offset int64, position int32, ok bool) {
	b, n := ix.s.view()
	slot := ceil32(b, n, OffsetEntrySize, 4, int64(pos))
	if slot < 0 {
		return 0, 0, false
	}
	offset, position = ix.entry(b, slot)
	return offset, position, true
}

// Append adds an entry: the batch (or chunk) starting at byte position of the log
// ends at offset. offset must be larger than LastOffset() of a non-empty index and
// at least the base offset (ErrInvalidOffset), offset-base must fit an int32
// (ErrOffsetOverflow), position must be >= 0 and larger than the last entry's
// (ErrInvalidPosition), and the index must not be full (ErrIndexFull). After a
// Trim, Append first grows the file back to the capacity. Writer only.
func (ix *OffsetIndex) Append(offset int64, position int32) error {
	s := ix.s
	if err := s.checkWritable(); err != nil {
		return err
	}
	n := s.n.Load()
	if n >= s.maxN.Load() {
		return ErrIndexFull
	}
	b := *s.buf.Load()
	if n > 0 {
		lastOff, lastPos := ix.entry(b, int(n-1))
		if offset <= lastOff {
			return fmt.Errorf("%w: %s: offset %d is not larger than the last offset %d", ErrInvalidOffset, s.path, offset, lastOff)
		}
		if position <= lastPos {
			return fmt.Errorf("%w: %s: position %d is not larger than the last position %d", ErrInvalidPosition, s.path, position, lastPos)
		}
	}
	if offset < ix.base {
		return fmt.Errorf("%w: %s: offset %d is below the base offset %d", ErrInvalidOffset, s.path, offset, ix.base)
	}
	if offset-ix.base > math.MaxInt32 {
		return fmt.Errorf("%w: %s: offset %d, base offset %d", ErrOffsetOverflow, s.path, offset, ix.base)
	}
	if position < 0 {
		return fmt.Errorf("%w: %s: negative position %d", ErrInvalidPosition, s.path, position)
	}
	var e [OffsetEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-ix.base))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	return s.put(n, e[:])
}

// TruncateTo removes every entry whose offset is >= offset (Kafka's truncateTo).
// The dropped slots are zeroed in the file; its length does not change. Writer only,
// and not while lookups run: a concurrent reader may see a dropped or zeroed entry.
func (ix *OffsetIndex) TruncateTo(offset int64) error {
	return ix.s.truncateToOffset(offset, ix.base, 0)
}

// Reset removes every entry and sets the file length back to the capacity, as for a
// new active segment. Same concurrency rule as TruncateTo.
func (ix *OffsetIndex) Reset() error { return ix.s.reset() }

// Trim sets the file length to Entries()*8 (on roll and close). Readers are not
// disturbed: the mapping does not change and every entry stays inside the file.
func (ix *OffsetIndex) Trim() error { return ix.s.trim() }

// Resize sets the file length, and the capacity, to roundDown(maxBytes, 8): it
// makes an inactive segment's index active again. It fails with ErrInvalidSize
// below the current entries or, for a mapped index, beyond the length mapped at open
// (the mapping is never replaced while the index is open).
func (ix *OffsetIndex) Resize(maxBytes int) error { return ix.s.resize(maxBytes) }

// Sync makes the entries durable: fdatasync of the file through the vfs. On Linux
// this also writes the pages dirtied through the shared mapping (they are the file's
// page-cache pages), so no separate msync is needed.
func (ix *OffsetIndex) Sync() error { return ix.s.sync() }

// Close trims a writable index to its entries, unmaps and closes the file. No
// lookup may run during or after Close begins (the segment layer's reference count
// ensures it); lookups after Close return misses. A second Close returns ErrClosed.
func (ix *OffsetIndex) Close() error { return ix.s.close() }

// SanityCheck runs Kafka's OffsetIndex.sanityCheck: a non-empty index whose last
// offset is below the base offset, or a file length that is not a multiple of 8, is
// corrupt. A zero-padded index passes; use Check for a real verification.
func (ix *OffsetIndex) SanityCheck() error {
	size, err := ix.s.statSize()
	if err != nil {
		return err
	}
	if size%OffsetEntrySize != 0 {
		return corruptFile(ix.s.path, size, fmt.Sprintf("file length %d is not a multiple of %d", size, OffsetEntrySize))
	}
	b, n := ix.s.view()
	if n > 0 {
		if off, pos := ix.entry(b, n-1); off < ix.base {
			return ix.corrupt(n-1, off, pos, fmt.Sprintf("last offset %d is below the base offset %d", off, ix.base))
		}
	}
	return nil
}

// Check verifies every entry, for an index about to be trusted at load: relative
// offsets >= 0 and strictly increasing, positions >= 0, strictly increasing and
// below logSize, and no zero-padded slot (an entry after the first with relative
// offset 0 and position 0, the trace of an untrimmed preallocated file). It returns
// the first problem as a *CorruptionError (ErrCorruptIndex); the caller rebuilds.
func (ix *OffsetIndex) Check(logSize int64) error {
	if ix.s.closed.Load() {
		return ErrClosed
	}
	b, n := ix.s.view()
	var prevRel, prevPos int64 = -1, -1
	for i := 0; i < n; i++ {
		rel := key32(b, OffsetEntrySize, 0, i)
		pos := key32(b, OffsetEntrySize, 4, i)
		off := ix.base + rel
		switch {
		case i > 0 && rel == 0 && pos == 0:
			return ix.corrupt(i, off, int32(pos), "zero-padded slot (index not trimmed after a crash?)")
		case rel < 0:
			return ix.corrupt(i, off, int32(pos), fmt.Sprintf("offset below the base offset %d", ix.base))
		case pos < 0:
			return ix.corrupt(i, off, int32(pos), "negative position")
		case rel <= prevRel:
			return ix.corrupt(i, off, int32(pos), fmt.Sprintf("offset not larger than the previous entry's %d", ix.base+prevRel))
		case pos <= prevPos:
			return ix.corrupt(i, off, int32(pos), fmt.Sprintf("position not larger than the previous entry's %d", prevPos))
		case pos >= logSize:
			return ix.corrupt(i, off, int32(pos), fmt.Sprintf("position at or past the log end %d", logSize))
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

func (ix *OffsetIndex) corrupt(i int, off int64, pos int32, reason string) error {
	return &CorruptionError{Path: ix.s.path, Entry: i, FilePos: int64(i) * OffsetEntrySize, Offset: off,
		Position: int64(pos), Timestamp: -1, Reason: reason}
}
