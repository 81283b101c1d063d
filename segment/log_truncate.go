package segment

import "fmt"

// TruncateTo removes every batch holding an offset at or above off (a batch that
// straddles off goes whole, as in Kafka), so the log ends at or below off.
// Segments after the cut are deleted through .deleted like retention. Needed by
// replication when a follower's log diverged. Below the log start it empties the
// log and starts it again at off.
func (l *Log) TruncateTo(off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
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
		return l.truncateFully(off)
	}
	i := locate(segs, off)
	s := segs[i]
	pos, _, ok, err := s.find(off, s.size.Load())
	if err != nil {
		return err
	}
	if ok {
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
	}
	if i < len(segs)-1 {
		if err := s.unseal(); err != nil {
			return err
		}
	}
	l.publish(append([]*Segment(nil), segs[:i+1]...))
	for _, v := range segs[i+1:] {
		if err := l.retire(v); err != nil {
			return err
		}
	}
	if i < len(segs)-1 {
		// Durable before appends continue: retired segments that came back after
		// a power loss would overlap the offsets appended from here on.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("segment: sync dir %s: %w", l.dir, err)
		}
	}
	end := s.next.Load()
	l.next.Store(end)
	l.hw.Store(end)
	if l.start.Load() > end {
		l.start.Store(end) // the cut batch straddled the log start: nothing is left
	}
	if l.flushed.Load() > end {
		l.flushed.Store(end)
	}
	l.wake()
	return nil
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
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("segment: sync dir %s: %w", l.dir, err)
	}
	l.publish([]*Segment{s})
	l.next.Store(off)
	l.hw.Store(off)
	l.start.Store(off)
	l.flushed.Store(off)
	for _, v := range segs {
		l.scheduleRemoval(v)
	}
	l.wake()
	return nil
}
