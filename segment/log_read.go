package segment

import (
	"errors"
	"fmt"
)

// Snapshot is a consistent view of the log taken without locks: the segment list
// and the offsets at one moment. Reading through it keeps working while the
// writer appends, rolls, or deletes the segments it holds (deleted files stay
// open until released, and are removed after file.delete.delay.ms).
type Snapshot struct {
	Segments []*Segment
	Start    int64 // log start offset
	End      int64 // log end offset
}

// Snapshot returns the current view.
func (l *Log) Snapshot() Snapshot {
	end := l.next.Load() // before the list: every offset below it is in the list
	segs := l.segs.Load().segs
	return Snapshot{Segments: segs, Start: l.start.Load(), End: end}
}

// Read returns the region of the log starting with the batch that holds offset,
// at most maxBytes long but always at least one whole batch. At the log end it
// returns an empty region. Offsets outside [start, end] are ErrOffsetOutOfRange.
// Release the region when done.
func (l *Log) Read(offset, maxBytes int64) (Region, error) {
	return l.read(offset, maxBytes, false, false)
}

// ReadToHighWatermark is Read for a consumer: it stops at the high watermark,
// and an offset between it and the log end reads as an empty region (the
// records there are still waiting for their flush), as in Kafka.
func (l *Log) ReadToHighWatermark(offset, maxBytes int64) (Region, error) {
	return l.read(offset, maxBytes, true, false)
}

func (l *Log) read(offset, maxBytes int64, toHW, stable bool) (Region, error) {
	if err := l.health.Err(); err != nil {
		return Region{}, err // an offline log serves nothing (KAFKA_STORAGE_ERROR)
	}
	for try := 0; ; try++ {
		hw := l.hw.Load() // before the snapshot: every offset below it is in the list
		if fu := l.firstUnstable.Load(); stable && fu >= 0 {
			hw = min(hw, fu)
		}
		v := l.Snapshot()
		if toHW {
			if offset >= hw && offset <= v.End && offset >= v.Start {
				return Region{FirstOffset: offset}, nil
			}
			v.End = min(v.End, hw)
		}
		r, err := v.Read(offset, maxBytes)
		if errors.Is(err, ErrSegmentGone) && try < 3 {
			continue // deleted under us: the new list tells where the data went
		}
		return r, err
	}
}

// Read is Log.Read against this snapshot.
func (v Snapshot) Read(offset, maxBytes int64) (Region, error) {
	if offset < v.Start || offset > v.End {
		return Region{}, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, v.Start, v.End)
	}
	if offset == v.End {
		return Region{FirstOffset: offset}, nil
	}
	if maxBytes < 0 {
		maxBytes = 0
	}
	for i := locate(v.Segments, offset); i < len(v.Segments); i++ {
		s := v.Segments[i]
		if !s.acquire() {
			return Region{}, fmt.Errorf("%w: %s", ErrSegmentGone, s.Path(LogSuffix))
		}
		r, ok, err := s.read(offset, maxBytes, v.End)
		if err != nil || !ok {
			s.release()
			if err != nil {
				return Region{}, err
			}
			continue // offset lies past this segment (a compaction gap)
		}
		r.seg = s
		return r, nil
	}
	return Region{FirstOffset: offset}, nil
}
