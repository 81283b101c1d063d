package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/stratalog/strata/record"
)

// TimestampOffset is the answer to "first record at or after a timestamp".
type TimestampOffset struct {
	Offset    int64
	Timestamp int64
}

// OffsetForTimestamp returns the first record (lowest offset, at or above the log
// start) whose timestamp is at least ts: Kafka's ListOffsets by time. ok is false
// when every record is older.
func (l *Log) OffsetForTimestamp(ts int64) (TimestampOffset, bool, error) {
	if err := l.health.Err(); err != nil {
		return TimestampOffset{}, false, err
	}
	v := l.Snapshot()
	for _, s := range v.Segments {
		if s.MaxTimestamp() < ts || s.NextOffset() <= v.Start {
			continue
		}
		if !s.acquire() {
			return TimestampOffset{}, false, fmt.Errorf("%w: %s", ErrSegmentGone, s.Path(LogSuffix))
		}
		r, ok, err := s.findByTimestamp(ts, v.Start)
		s.release()
		if err != nil || ok {
			return r, ok, err
		}
	}
	return TimestampOffset{}, false, nil
}

// findByTimestamp walks the segment from the time and offset index hints to the
// first record with timestamp >= ts and offset >= start, decoding the records of
// the batches whose max timestamp reaches ts.
func (s *Segment) findByTimestamp(ts, start int64) (TimestampOffset, bool, error) {
	_, hint := s.timeIdx.Lookup(ts)
	if hint < start {
		hint = start
	}
	_, p := s.offIdx.Lookup(hint)
	size := s.size.Load()
	r := headerReaders.Get().(*headerReader)
	defer headerReaders.Put(r)
	r.fileSize, r.n = size, 0
	var buf []byte
	var rr record.RecordReader
	for pos := int64(p); ; {
		h, err := r.header(s.log, pos)
		if err == io.EOF {
			return TimestampOffset{}, false, nil
		}
		if err != nil {
			return TimestampOffset{}, false, err
		}
		if h.MaxTimestamp >= ts && h.LastOffset >= start {
			if buf, err = readEntry(s, buf, pos, h.TotalSize()); err != nil {
				return TimestampOffset{}, false, err
			}
			found, ok, err := firstAtOrAfter(buf, pos, h.Magic, ts, start, &rr)
			if err != nil || ok {
				return found, ok, err
			}
		}
		pos += h.TotalSize()
	}
}

func readEntry(s *Segment, buf []byte, pos, n int64) ([]byte, error) {
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if m, err := s.log.ReadAt(buf, pos); int64(m) < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf, fmt.Errorf("segment: read %s at %d: %w", s.Path(LogSuffix), pos, err)
	}
	return buf, nil
}

// firstAtOrAfter decodes one entry's records and returns the first whose
// timestamp >= ts and offset >= start.
func firstAtOrAfter(entry []byte, pos int64, magic int8, ts, start int64, rr *record.RecordReader) (TimestampOffset, bool, error) {
	if magic != 2 {
		var found TimestampOffset
		ok := false
		err := record.DecodeLegacy(entry, pos, func(m record.LegacyMessage) error {
			if !ok && m.Timestamp >= ts && m.Offset >= start {
				found, ok = TimestampOffset{Offset: m.Offset, Timestamp: m.Timestamp}, true
			}
			return nil
		})
		return found, ok, err
	}
	rr.Reset(record.Batch(entry), pos)
	for rec, more := rr.Next(); more; rec, more = rr.Next() {
		if rec.Timestamp >= ts && rec.Offset >= start {
			return TimestampOffset{Offset: rec.Offset, Timestamp: rec.Timestamp}, true, nil
		}
	}
	return TimestampOffset{}, false, rr.Err()
}
