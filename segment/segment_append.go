package segment

import (
	"errors"
	"fmt"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/record"
)

// append writes buf, one or more whole entries already checked by the Log, at the
// end of the segment and indexes it: an offset index entry (batch last offset,
// batch position) and a time index entry whenever more than index.interval.bytes
// were appended since the last entry, checked batch by batch before each batch as
// Kafka does since KAFKA-806.
func (s *Segment) append(buf []byte) error {
	pos := s.size.Load()
	if err := s.preallocate(int64(len(buf))); err != nil {
		return err
	}
	if err := s.writeEntries(buf, pos); err != nil {
		return err
	}
	var last int64
	maxTs := s.maxTs.Load()
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
				return err
			}
		}
		s.bytesSinceIndex += h.TotalSize()
		last = h.LastOffset
		p += int(h.TotalSize())
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
