package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stratalog/strata/internal/vfs"
)

// TimeEntrySize is the size of one .timeindex entry: int64 timestamp, int32
// relative offset.
const TimeEntrySize = 12

// NoTimestamp is the timestamp Lookup and LastEntry report for "no entry" (Kafka's
// RecordBatch.NO_TIMESTAMP).
const NoTimestamp int64 = -1

// TimeIndex is a segment's .timeindex file: entry (T, O) says the largest timestamp
// seen up to and including offset O is T. Same concurrency model as OffsetIndex:
// one writer, lock-free concurrent lookups.
type TimeIndex struct {
	s    *store
	base int64
}

// OpenTimeIndex opens the time index at path; the rules are OpenOffsetIndex's with
// 12-byte entries (a new file is preallocated to roundDown(maxBytes, 12)).
func OpenTimeIndex(fs vfs.FS, path string, baseOffset int64, maxBytes int, writable bool) (*TimeIndex, error) {
	if baseOffset < 0 {
		return nil, fmt.Errorf("%w: %s: negative base offset %d", ErrInvalidOffset, path, baseOffset)
	}
	s, err := openStore(fs, path, TimeEntrySize, maxBytes, writable)
	if err != nil {
		return nil, err
	}
	return &TimeIndex{s: s, base: baseOffset}, nil
}

// BaseOffset returns the segment's base offset.
func (ix *TimeIndex) BaseOffset() int64 { return ix.base }

// Path returns the file path given at open.
func (ix *TimeIndex) Path() string { return ix.s.path }

// Entries returns the number of entries.
func (ix *TimeIndex) Entries() int { return int(ix.s.n.Load()) }

// MaxEntries returns the capacity in entries.
func (ix *TimeIndex) MaxEntries() int { return int(ix.s.maxN.Load()) }

// IsFull reports whether Append would return ErrIndexFull: Entries() >=
// MaxEntries()-1, the last slot being kept for AppendFinal (Kafka's isFull).
func (ix *TimeIndex) IsFull() bool { return ix.s.n.Load() >= ix.s.maxN.Load()-1 }

// SizeBytes returns the size of the valid entries in bytes (Entries()*12).
func (ix *TimeIndex) SizeBytes() int64 { return ix.s.n.Load() * TimeEntrySize }

// IsMapped reports whether the memory-mapped backend is in use.
func (ix *TimeIndex) IsMapped() bool { return ix.s.mm != nil }

func (ix *TimeIndex) entry(b []byte, i int) (int64, int64) {
	e := b[i*TimeEntrySize : i*TimeEntrySize+TimeEntrySize]
	return int64(binary.BigEndian.Uint64(e)), ix.base + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

// Entry returns entry i. It returns ErrClosed after Close and ErrOutOfRange for i
// outside [0, Entries()).
func (ix *TimeIndex) Entry(i int) (timestamp, offset int64, err error) {
	if ix.s.closed.Load() {
		return 0, 0, ErrClosed
	}
	b, n := ix.s.view()
	if i < 0 || i >= n {
		return 0, 0, ErrOutOfRange
	}
	timestamp, offset = ix.entry(b, i)
	return timestamp, offset, nil
}

// LastEntry returns the last entry, or (NoTimestamp, BaseOffset()) when empty.
func (ix *TimeIndex) LastEntry() (timestamp, offset int64) {
	b, n := ix.s.view()
	if n == 0 {
		return NoTimestamp, ix.base
	}
	return ix.entry(b, n-1)
}

// Lookup returns the entry with the largest timestamp <= ts, or (NoTimestamp,
// BaseOffset()) when there is none.
func (ix *TimeIndex) Lookup(ts int64) (timestamp, offset int64) {
	b, n := ix.s.view()
	slot := floor64(b, n, TimeEntrySize, 0, ts)
	if slot < 0 {
		return NoTimestamp, ix.base
	}
	return ix.entry(b, slot)
}

// Append records that the largest timestamp up to offset is timestamp (Kafka's
// maybeAppend). It is a no-op returning nil unless timestamp is larger than the last
// entry's (NoTimestamp when empty, so timestamps <= -1 are never indexed). offset
// must not be smaller than the last entry's offset nor the base offset
// (ErrInvalidOffset) and offset-base must fit an int32 (ErrOffsetOverflow). It
// returns ErrIndexFull once IsFull, even for a no-op, as Kafka does. Writer only.
func (ix *TimeIndex) Append(timestamp, offset int64) error {
	s := ix.s
	if err := s.checkWritable(); err != nil {
		return err
	}
	if s.n.Load() >= s.maxN.Load()-1 {
		return ErrIndexFull
	}
	return ix.append(timestamp, offset)
}

// AppendFinal is Append without the IsFull reservation (Kafka's skipFullCheck): the
// segment calls it once at roll or close to record the final max timestamp, which
// may use the last slot. It returns ErrIndexFull only when no slot is left at all.
func (ix *TimeIndex) AppendFinal(timestamp, offset int64) error {
	s := ix.s
	if err := s.checkWritable(); err != nil {
		return err
	}
	return ix.append(timestamp, offset)
}

func (ix *TimeIndex) append(timestamp, offset int64) error {
	s := ix.s
	n := s.n.Load()
	b := *s.buf.Load()
	lastTs := NoTimestamp
	if n > 0 {
		var lastOff int64
		lastTs, lastOff = ix.entry(b, int(n-1))
		if offset < lastOff {
			return fmt.Errorf("%w: %s: offset %d is smaller than the last offset %d", ErrInvalidOffset, s.path, offset, lastOff)
		}
	}
	if timestamp <= lastTs {
		return nil
	}
	if n >= s.maxN.Load() {
		return ErrIndexFull
	}
	if offset < ix.base {
		return fmt.Errorf("%w: %s: offset %d is below the base offset %d", ErrInvalidOffset, s.path, offset, ix.base)
	}
	if offset-ix.base > math.MaxInt32 {
		return fmt.Errorf("%w: %s: offset %d, base offset %d", ErrOffsetOverflow, s.path, offset, ix.base)
	}
	var e [TimeEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(timestamp))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-ix.base))
	return s.put(n, e[:])
}

// TruncateTo removes every entry whose offset is >= offset. Same rules as
// OffsetIndex.TruncateTo.
func (ix *TimeIndex) TruncateTo(offset int64) error { return ix.s.truncateToOffset(offset, ix.base, 8) }

// Reset removes every entry and sets the file length back to the capacity.
func (ix *TimeIndex) Reset() error { return ix.s.reset() }

// Trim sets the file length to Entries()*12.
func (ix *TimeIndex) Trim() error { return ix.s.trim() }

// Resize sets the file length and capacity to roundDown(maxBytes, 12); see
// OffsetIndex.Resize.
func (ix *TimeIndex) Resize(maxBytes int) error { return ix.s.resize(maxBytes) }

// Sync makes the entries durable; see OffsetIndex.Sync.
func (ix *TimeIndex) Sync() error { return ix.s.sync() }

// Close trims a writable index, unmaps and closes it; see OffsetIndex.Close.
func (ix *TimeIndex) Close() error { return ix.s.close() }

// SanityCheck runs Kafka's TimeIndex.sanityCheck: for a non-empty index, a last
// timestamp below the first or a last offset below the base offset is corrupt, and
// so is a file length that is not a multiple of 12.
func (ix *TimeIndex) SanityCheck() error {
	size, err := ix.s.statSize()
	if err != nil {
		return err
	}
	if size%TimeEntrySize != 0 {
		return corruptFile(ix.s.path, size, fmt.Sprintf("file length %d is not a multiple of %d", size, TimeEntrySize))
	}
	b, n := ix.s.view()
	if n == 0 {
		return nil
	}
	firstTs, _ := ix.entry(b, 0)
	lastTs, lastOff := ix.entry(b, n-1)
	if lastTs < firstTs {
		return ix.corrupt(n-1, lastTs, lastOff, fmt.Sprintf("last timestamp is below the first timestamp %d", firstTs))
	}
	if lastOff < ix.base {
		return ix.corrupt(n-1, lastTs, lastOff, fmt.Sprintf("last offset is below the base offset %d", ix.base))
	}
	return nil
}

// Check verifies every entry for an index about to be trusted at load: timestamps
// >= 0 and strictly increasing, offsets non-decreasing and within [base,
// logEndOffset), and no zero-padded slot (an entry after the first with timestamp 0
// and relative offset 0). It returns the first problem as a *CorruptionError.
func (ix *TimeIndex) Check(logEndOffset int64) error {
	if ix.s.closed.Load() {
		return ErrClosed
	}
	b, n := ix.s.view()
	var prevTs, prevRel int64 = math.MinInt64, -1
	for i := 0; i < n; i++ {
		ts := key64(b, TimeEntrySize, 0, i)
		rel := key32(b, TimeEntrySize, 8, i)
		off := ix.base + rel
		switch {
		case i > 0 && ts == 0 && rel == 0:
			return ix.corrupt(i, ts, off, "zero-padded slot (index not trimmed after a crash?)")
		case ts < 0:
			return ix.corrupt(i, ts, off, "negative timestamp")
		case rel < 0:
			return ix.corrupt(i, ts, off, fmt.Sprintf("offset below the base offset %d", ix.base))
		case ts <= prevTs:
			return ix.corrupt(i, ts, off, fmt.Sprintf("timestamp not larger than the previous entry's %d", prevTs))
		case rel < prevRel:
			return ix.corrupt(i, ts, off, fmt.Sprintf("offset smaller than the previous entry's %d", ix.base+prevRel))
		case off >= logEndOffset:
			return ix.corrupt(i, ts, off, fmt.Sprintf("offset at or past the log end offset %d", logEndOffset))
		}
		prevTs, prevRel = ts, rel
	}
	return nil
}

func (ix *TimeIndex) corrupt(i int, ts, off int64, reason string) error {
	return &CorruptionError{Path: ix.s.path, Entry: i, FilePos: int64(i) * TimeEntrySize, Offset: off,
		Position: -1, Timestamp: ts, Reason: reason, timeIndex: true}
}
