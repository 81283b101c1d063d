package segment

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/record"
)

// append writes buf, one or more whole entries already checked by the Log, at the
// end of the segment and indexes it: an offset index entry (batch last offset,
// batch position) and a time index entry whenever more than index.interval.bytes
// were appended since the last entry, checked batch by batch before each batch as
// Kafka does since KAFKA-806.
//
// Nothing is published (size, next offset, max timestamp) before every write
// has succeeded. A failed write is undone (undoAppend): the error is returned
// and the segment is as before, or, when the undo fails too, the error wraps
// errNotUndone and the log goes offline.
func (s *Segment) append(buf []byte) error {
	pos := s.size.Load()
	m := appendMark{offsetOfMaxTs: s.offsetOfMaxTs, rollTs: s.rollTs, bytesSinceIndex: s.bytesSinceIndex,
		offEntries: s.offIdx.Entries(), timeEntries: s.timeIdx.Entries()}
	maxTs, last, err := s.write(buf, pos)
	if err != nil {
		return s.undoAppend(m, buf, pos, err)
	}
	if s.indexesSynced.Load() {
		s.indexesSynced.Store(false)
	}
	s.maxTs.Store(maxTs)
	// next before size: a reader that sees the new size also sees the new
	// next (see read), so it can tell when the bytes run past its log end.
	s.next.Store(last + 1)
	s.size.Store(pos + int64(len(buf)))
	return nil
}

// write writes buf at pos and adds its index entries, returning the new max
// timestamp and the last offset written. It changes only writer-only state,
// which appendMark saves.
func (s *Segment) write(buf []byte, pos int64) (maxTs, last int64, err error) {
	// Mapped writes (the append mapping, the memory-mapped indexes) fault
	// instead of returning an error: make the fault this append's error.
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = faultError(r, s.Path(LogSuffix))
		}
	}()
	if err := s.preallocate(int64(len(buf))); err != nil {
		return 0, 0, err
	}
	if err := s.writeEntries(buf, pos); err != nil {
		return 0, 0, err
	}
	maxTs = s.maxTs.Load()
	for p := 0; p < len(buf); {
		h, _ := record.ParseEntryHeader(buf[p:], pos+int64(p)) // checked by the caller
		if h.MaxTimestamp > maxTs {
			maxTs = h.MaxTimestamp
			s.offsetOfMaxTs = h.LastOffset
		}
		if s.rollTs < 0 && s.size.Load() == 0 && p == 0 {
			s.rollTs = h.MaxTimestamp
		}
		if s.bytesSinceIndex > int64(s.o.IndexIntervalBytes) {
			if err := s.indexEntry(h.LastOffset, pos+int64(p), maxTs); err != nil {
				return 0, 0, err
			}
		}
		s.bytesSinceIndex += h.TotalSize()
		last = h.LastOffset
		p += int(h.TotalSize())
	}
	return maxTs, last, nil
}

// appendMark is the writer state an append changes before it publishes.
type appendMark struct {
	offsetOfMaxTs, rollTs, bytesSinceIndex int64
	offEntries, timeEntries                int
}

// undoAppend takes back a failed append of buf at pos: index entries it
// added are withdrawn, the .log file is cut back to pos (dropping bytes the
// failed write may have left, and with them a preallocated reserve, which
// the next append allocates again), and the writer state restored. It
// returns err, or err wrapping errNotUndone when the undo failed or the file
// turned out shorter than the data already in it (cut behind the log's back:
// there is nothing to roll back to).
func (s *Segment) undoAppend(m appendMark, buf []byte, pos int64, err error) error {
	first := record.Batch(buf).BaseOffset()
	if s.offIdx.Entries() > m.offEntries || s.timeIdx.Entries() > m.timeEntries {
		s.indexesSynced.Store(false)
	}
	if s.offIdx.Entries() > m.offEntries {
		if uerr := s.offIdx.TruncateTo(first); uerr != nil {
			return fmt.Errorf("%w: %w; %w", errNotUndone, err, uerr)
		}
	}
	if s.timeIdx.Entries() > m.timeEntries {
		if uerr := s.timeIdx.TruncateTo(first); uerr != nil {
			return fmt.Errorf("%w: %w; %w", errNotUndone, err, uerr)
		}
	}
	s.unmap()
	st, serr := s.log.Stat()
	if serr != nil {
		return fmt.Errorf("%w: %w; stat %s: %w", errNotUndone, err, s.Path(LogSuffix), serr)
	}
	if st.Size() < pos {
		return fmt.Errorf("%w: %w; %s holds %d bytes, %d were appended", errNotUndone, err, s.Path(LogSuffix), st.Size(), pos)
	}
	if st.Size() > pos {
		if terr := s.log.Truncate(pos); terr != nil {
			return fmt.Errorf("%w: %w; truncate %s: %w", errNotUndone, err, s.Path(LogSuffix), terr)
		}
	}
	s.allocated, s.zeroed = 0, 0
	s.offsetOfMaxTs, s.rollTs, s.bytesSinceIndex = m.offsetOfMaxTs, m.rollTs, m.bytesSinceIndex
	return err
}

// indexEntry adds an offset index entry and, when the max timestamp grew, a time
// index entry. A full index only makes the index sparser (the Log rolls before).
func (s *Segment) indexEntry(lastOffset, pos, maxTs int64) error {
	s.bytesSinceIndex = 0
	if err := s.offIdx.Append(lastOffset, int32(pos)); err != nil && !errors.Is(err, index.ErrIndexFull) {
		return fmt.Errorf("segment: %w", err)
	}
	if maxTs >= 0 {
		if err := s.timeIdx.Append(maxTs, s.offsetOfMaxTs); err != nil && !errors.Is(err, index.ErrIndexFull) {
			return fmt.Errorf("segment: %w", err)
		}
	}
	return nil
}

// shouldRoll reports whether an append of n bytes with the given offsets and max
// timestamp must go to a new segment. The clock is read only when segment.ms
// has no record timestamps to go by.
func (s *Segment) shouldRoll(n int64, lastOffset, maxTs int64, now func() int64) bool {
	size := s.size.Load()
	if size == 0 {
		return false
	}
	switch {
	case size > s.o.SegmentBytes-n:
		return true
	case s.offIdx.IsFull() || s.timeIdx.IsFull():
		return true
	case lastOffset-s.base > 1<<31-1:
		return true
	}
	if s.rollTs >= 0 && maxTs >= 0 {
		return maxTs-s.rollTs > s.o.SegmentMs
	}
	return now()-s.createdMs > s.o.SegmentMs
}
