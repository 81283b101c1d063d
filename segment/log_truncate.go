package segment

import (
	"fmt"

	"github.com/stratalog/strata/producer"
)

// TruncateTo removes every batch holding an offset at or above off (a batch that
// straddles off goes whole, as in Kafka), so the log ends at or below off.
// Segments after the cut are deleted through .deleted like retention. Needed by
// replication when a follower's log diverged. Below the log start it empties the
// log and starts it again at off.
//
// The high watermark and the recovery point are lowered to the new end, never
// raised: records kept by the cut that still wait for their fsync stay above
// the high watermark. Any I/O error takes the log offline: a half-done cut
// cannot be undone.
func (l *Log) TruncateTo(off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.health.Err(); err != nil {
		return err
	}
	if off >= l.next.Load() {
		return nil
	}
	// No flush may run while the log shrinks: it could record as flushed an
	// offset that truncation removed.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	segs := l.segs.Load().segs
	if off <= segs[0].base || off < l.start.Load() {
		return l.failIO(l.truncateFully(off))
	}
	i := locate(segs, off)
	s := segs[i]
	pos, _, ok, err := s.find(off, s.size.Load())
	if err != nil {
		return err
	}
	if ok {
		if err := l.cutSegment(s, off, pos); err != nil {
			return l.fail(err)
		}
	}
	if i < len(segs)-1 {
		if err := s.unseal(); err != nil {
			return l.fail(err)
		}
	}
	l.publish(append([]*Segment(nil), segs[:i+1]...))
	for _, v := range segs[i+1:] {
		if err := l.retire(v); err != nil {
			return l.fail(err)
		}
	}
	if i < len(segs)-1 {
		// Durable before appends continue: retired segments that came back after
		// a power loss would overlap the offsets appended from here on.
		l.dirChanged()
		if err := l.syncDir(); err != nil {
			return err
		}
	}
	l.setEnd(s.next.Load())
	if l.start.Load() > l.next.Load() {
		l.start.Store(l.next.Load()) // the cut batch straddled the log start: nothing is left
	}
	l.psDirty = true
	if err := l.loadProducers(nil, false); err != nil {
		return l.fail(err)
	}
	l.wake()
	return nil
}

// cutSegment cuts s at pos, the position of the batch holding off.
func (l *Log) cutSegment(s *Segment, off, pos int64) error {
	s.unmap()
	if err := s.log.Truncate(pos); err != nil {
		return fmt.Errorf("segment: truncate %s: %w", s.Path(LogSuffix), err)
	}
	s.allocated, s.zeroed = 0, 0 // the preallocated reserve went with the cut
	if err := s.offIdx.TruncateTo(off); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	if err := s.timeIdx.TruncateTo(off); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	s.size.Store(pos)
	if err := s.loadTail(); err != nil {
		return err
	}
	// Durable before appends continue: a cut lost in a power loss would bring
	// the removed batches back in front of offsets appended (and flushed)
	// from here on, and recovery would cut there.
	return s.flush(false)
}

// setEnd makes end the log end after a truncation, lowering the high
// watermark, the recovery point and the pending flush to it (writer lock and
// flushMu held; under hwMu against the raise after an append's fsync).
func (l *Log) setEnd(end int64) {
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.next.Store(end)
	if l.hw.Load() > end {
		l.hw.Store(end)
	}
	if l.flushed.Load() > end {
		l.flushed.Store(end)
	}
	if l.awaitFlush.Load() > end {
		l.awaitFlush.Store(end)
	}
}

// truncateFully deletes every segment and starts an empty log at off.
func (l *Log) truncateFully(off int64) error {
	segs := l.segs.Load().segs
	for _, v := range segs {
		if err := v.renameAll("", DeletedSuffix); err != nil {
			return err
		}
	}
	s, err := createSegment(l.fs, l.dir, off, l.o)
	if err != nil {
		return err
	}
	l.dirChanged()
	if err := l.syncDir(); err != nil {
		s.closeFiles()
		return err
	}
	l.publish([]*Segment{s})
	l.removeSnapshots(func(int64) bool { return false })
	l.ps = producer.NewState(off, l.o.ProducerIDExpirationMs)
	l.firstUnstable.Store(-1)
	l.psDirty = true
	l.hwMu.Lock()
	l.next.Store(off)
	l.hw.Store(off)
	l.start.Store(off)
	l.flushed.Store(off)
	l.awaitFlush.Store(off)
	l.hwMu.Unlock()
	for _, v := range segs {
		l.scheduleRemoval(v)
	}
	l.wake()
	return nil
}
