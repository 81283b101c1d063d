package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/stratalog/strata/record"
)

// loadTail sets the segment's next offset, max timestamp and index counters from
// its indexes and a header walk from the last offset index entry to the end of
// the file, without checking CRCs: what a clean shutdown lets us trust. A framing
// problem (torn or garbage tail) is returned as a corruption error for the caller
// to recover.
func (s *Segment) loadTail() error {
	size := s.size.Load()
	var pos int64
	if n := s.offIdx.Entries(); n > 0 {
		_, p, err := s.offIdx.Entry(n - 1)
		if err != nil {
			return err
		}
		pos = int64(p)
	}
	if pos < 0 || pos > size {
		return record.Corrupt(record.ErrBadSize, pos, -1, "%s: last index entry points outside the log (size %d)", s.Path(IndexSuffix), size)
	}
	maxTs, offMax := int64(-1), s.base
	if s.timeIdx.Entries() > 0 {
		maxTs, offMax = s.timeIdx.LastEntry()
	}
	// The next offset comes from the log alone, never from the index: an index
	// entry claiming more than the batches from its position hold is caught by
	// checkIndexes instead of extending the log.
	next := s.base
	r := headerReaders.Get().(*headerReader)
	defer headerReaders.Put(r)
	r.fileSize, r.n = size, 0
	lastEntry := pos
	for {
		h, err := r.header(s.log, pos)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if pos == 0 {
			s.rollTs = h.MaxTimestamp
		}
		if h.LastOffset+1 > next {
			next = h.LastOffset + 1
		}
		if h.MaxTimestamp > maxTs {
			maxTs, offMax = h.MaxTimestamp, h.LastOffset
		}
		pos += h.TotalSize()
	}
	if s.rollTs < 0 && size > 0 {
		h, err := r.header(s.log, 0)
		if err != nil {
			return err // a read error was once dropped here
		}
		s.rollTs = h.MaxTimestamp
	}
	s.maxTs.Store(maxTs)
	s.offsetOfMaxTs = offMax
	s.bytesSinceIndex = size - lastEntry
	s.next.Store(next)
	return nil
}

// RecoverResult says what recovering one segment found.
type RecoverResult struct {
	Batches        int
	ValidBytes     int64
	TruncatedBytes int64
	// PreallocatedBytes is the zero-filled tail after the last valid entry of
	// a segment written with Options.Preallocate, cut without being counted as
	// truncated: space a crash left reserved, not data lost.
	PreallocatedBytes int64
	// DroppedEnd is one past the last offset the dropped bytes' entry headers
	// claim, read before the cut without CRC checks (-1 when none reads).
	DroppedEnd int64
	// Err is the corruption that ended the scan early (nil when the whole file
	// was valid). Its position is where the file was cut.
	Err error
	// SavedTo is where Options.SaveCut saved the truncated bytes ("" when not
	// set or nothing was cut).
	SavedTo string
}

// recoverBelow rebuilds the segment's indexes by scanning every entry and
// checking framing, magic, size, CRC and offset order, and truncates the .log at
// the first invalid entry (Kafka's LogSegment.recover). The segment is followed
// by one based at limit (math.MaxInt64: none): an entry whose offsets reach limit
// is invalid too (the segments' offset ranges must not overlap, or lookups by
// offset go to the wrong segment). I/O errors are returned; corruption is
// reported in the result.
func (s *Segment) recoverBelow(writable bool, limit int64) (RecoverResult, error) {
	var res RecoverResult
	st, err := s.log.Stat()
	if err != nil {
		return res, fmt.Errorf("segment: stat %s: %w", s.Path(LogSuffix), err)
	}
	fileSize := st.Size()
	if writable {
		if err := s.offIdx.Reset(); err != nil {
			return res, fmt.Errorf("segment: %w", err)
		}
		if err := s.timeIdx.Reset(); err != nil {
			return res, fmt.Errorf("segment: %w", err)
		}
	}
	s.maxTs.Store(-1)
	s.offsetOfMaxTs, s.bytesSinceIndex, s.rollTs = s.base, 0, -1
	next := s.base
	maxTs := int64(-1)
	sc := record.NewFileScanner(s.log, 0, fileSize, record.ScanOptions{VerifyCRC: true, MaxEntrySize: int64(s.o.MaxBatchBytes)})
	for sc.Next() {
		h, pos := sc.Header(), sc.Pos()
		if h.Offset < next && (res.Batches > 0 || h.Offset < s.base) {
			res.Err = fmt.Errorf("%s: %w", s.Path(LogSuffix), record.Corrupt(record.ErrBadRecord, pos, h.Offset,
				"offset %d does not follow the previous last offset %d", h.Offset, next-1))
			break
		}
		if h.LastOffset >= limit {
			res.Err = fmt.Errorf("%s: %w", s.Path(LogSuffix), record.Corrupt(record.ErrBadRecord, pos, h.Offset,
				"last offset %d reaches the next segment's base offset %d", h.LastOffset, limit))
			break
		}
		if h.LastOffset-s.base > 1<<31-1 {
			res.Err = fmt.Errorf("%s: %w", s.Path(LogSuffix), record.Corrupt(record.ErrBadRecord, pos, h.Offset,
				"offset %d does not fit the segment's relative index (base %d)", h.LastOffset, s.base))
			break
		}
		if res.Batches == 0 {
			s.rollTs = h.MaxTimestamp
		}
		if h.MaxTimestamp > maxTs {
			maxTs, s.offsetOfMaxTs = h.MaxTimestamp, h.LastOffset
		}
		if writable && s.bytesSinceIndex > int64(s.o.IndexIntervalBytes) {
			if err := s.indexEntry(h.LastOffset, pos, maxTs); err != nil {
				return res, err
			}
		}
		s.bytesSinceIndex += h.TotalSize()
		next = h.LastOffset + 1
		res.Batches++
		res.ValidBytes = pos + h.TotalSize()
	}
	if err := sc.Err(); err != nil && res.Err == nil {
		if !record.IsCorruption(err) {
			return res, fmt.Errorf("segment: scan %s: %w", s.Path(LogSuffix), err)
		}
		res.Err = fmt.Errorf("%s: %w", s.Path(LogSuffix), err)
	}
	res.TruncatedBytes = fileSize - res.ValidBytes
	if res.TruncatedBytes > 0 && s.o.Preallocate {
		zero, err := ZeroTail(s.log, res.ValidBytes, fileSize)
		if err != nil {
			return res, fmt.Errorf("segment: read %s: %w", s.Path(LogSuffix), err)
		}
		if zero {
			res.PreallocatedBytes, res.TruncatedBytes, res.Err = res.TruncatedBytes, 0, nil
		}
	}
	if res.TruncatedBytes > 0 && res.Err == nil {
		res.Err = fmt.Errorf("%s: %w", s.Path(LogSuffix), record.Corrupt(record.ErrTruncated, res.ValidBytes, next, "%d trailing bytes", res.TruncatedBytes))
	}
	if res.TruncatedBytes > 0 {
		res.DroppedEnd = headerEnd(s.log, res.ValidBytes, fileSize)
	}
	if res.TruncatedBytes > 0 && writable && s.o.SaveCut != nil {
		res.SavedTo, err = s.o.SaveCut(s.Path(LogSuffix), res.ValidBytes, res.TruncatedBytes, "tail")
		if err != nil {
			return res, fmt.Errorf("%w: %s: %w", ErrSaveCut, s.Path(LogSuffix), err)
		}
	}
	if res.TruncatedBytes+res.PreallocatedBytes > 0 && writable {
		if err := s.log.Truncate(res.ValidBytes); err != nil {
			return res, fmt.Errorf("segment: truncate %s: %w", s.Path(LogSuffix), err)
		}
	}
	s.maxTs.Store(maxTs)
	s.size.Store(res.ValidBytes)
	s.next.Store(next)
	return res, nil
}

// ZeroTail reports whether every byte of f in [pos, size) is zero: the
// unwritten reserve of a preallocated segment after a crash.
func ZeroTail(f io.ReaderAt, pos, size int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for pos < size {
		n := int(min(int64(len(buf)), size-pos))
		m, err := f.ReadAt(buf[:n], pos)
		for _, b := range buf[:m] {
			if b != 0 {
				return false, nil
			}
		}
		if err != nil && !(err == io.EOF && m == n) {
			if err == io.EOF {
				return true, nil // the file is shorter than its stat said
			}
			return false, err
		}
		pos += int64(m)
	}
	return true, nil
}

// checkIndexes runs the load-time index checks against the log; an error means
// the segment's indexes must be rebuilt.
func (s *Segment) checkIndexes() error {
	size := s.size.Load()
	if err := s.offIdx.Check(size); err != nil {
		return err
	}
	if n := s.offIdx.Entries(); n > 0 {
		// The last entry must point at a batch whose last offset it names.
		off, pos, err := s.offIdx.Entry(n - 1)
		if err != nil {
			return err
		}
		r := headerReaders.Get().(*headerReader)
		defer headerReaders.Put(r)
		r.fileSize, r.n = size, 0
		h, err := r.header(s.log, int64(pos))
		if err != nil {
			return err
		}
		// Kafka followers once indexed a multi-batch chunk by its last offset at
		// its first batch's position: accept any offset from that batch on.
		if off < h.Offset || off >= s.next.Load() {
			return fmt.Errorf("%w: %s: last entry offset %d, the batch at position %d holds [%d, %d]",
				errIndexMismatch, s.Path(IndexSuffix), off, pos, h.Offset, h.LastOffset)
		}
	}
	return s.timeIdx.Check(s.next.Load())
}

var errIndexMismatch = errors.New("segment: index disagrees with the log")
