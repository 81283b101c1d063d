package segment

import "fmt"

// Zero-filling ahead. fallocate reserves a preallocated segment's blocks as
// unwritten extents, and the first fdatasync after data lands in one must also
// commit the extent's conversion to the journal. When the log is being
// flushed, the writer therefore overwrites the reserve just ahead of itself
// with zeros (zeroAheadBytes at a time, with one pwrite): the next fdatasync
// writes those zeros and converts their extents once, and the fdatasyncs after
// it, for appends into blocks already written, only write data (measured on
// ext4 here: fdatasync p50 after 100 appends of 1093 B 280 µs against 470 µs,
// after 100 of 169 B 150 µs against 240 µs). The zeros are the bytes the
// reserve already reads as, so readers (who stop at the logical end), recovery
// (which cuts a zero tail) and a crash see nothing new; between flushes the
// page cache holds them until the data overwrites them, so a log that is not
// being flushed skips it.

const (
	// zeroAheadBytes is how much of the reserve one zero-fill writes.
	zeroAheadBytes = 256 << 10
	// zeroFlushWindow: zero-fill while the writer has seen a flush within
	// this many appends.
	zeroFlushWindow = 1024
)

// zeroPage is the source of zero-fills; it is never written.
var zeroPage = make([]byte, zeroAheadBytes)

// zeroAhead keeps the reserve zero-filled at least half a fill beyond end (the
// end of the append about to be written), when the segment is preallocated
// and being flushed. It writes only above end, rounded up to a page, so it
// never touches data.
func (s *Segment) zeroAhead(end int64) error {
	if s.allocated == 0 || end+zeroAheadBytes/2 <= s.zeroed || s.appends-s.lastFlushAppend > zeroFlushWindow || s.seenFlushes == 0 {
		return nil
	}
	from := max(s.zeroed, (end+pageSize-1)&^(pageSize-1))
	to := min(from+zeroAheadBytes, s.allocated)
	if to <= from {
		return nil
	}
	if _, err := s.log.WriteAt(zeroPage[:to-from], from); err != nil {
		return fmt.Errorf("segment: zero-fill %s at %d: %w", s.Path(LogSuffix), from, err)
	}
	s.zeroed = to
	return nil
}
