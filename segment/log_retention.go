package segment

// ApplyRetention deletes whole segments from the oldest while Kafka's retention
// predicates hold, in Kafka's order: wholly below the log start offset;
// retention.bytes (the log never drops below it); retention.ms, judged by each
// segment's largest timestamp (its file's mtime when it has no timestamps). The
// active segment is deleted only by rolling first, so an empty active segment
// always remains. It returns how many segments were deleted.
func (l *Log) ApplyRetention() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if err := l.health.Err(); err != nil {
		return 0, err
	}
	total, err := l.deleteBelowStart()
	if err != nil {
		return total, err
	}
	if rb := l.o.RetentionBytes; rb >= 0 {
		segs := l.segs.Load().segs
		var size int64
		for _, s := range segs {
			size += s.Size()
		}
		diff := size - rb
		n := 0
		for n < len(segs) && diff-segs[n].Size() >= 0 && segs[n].Size() > 0 {
			diff -= segs[n].Size()
			n++
		}
		d, err := l.deleteCounting(n, "retention.bytes")
		total += d
		if err != nil {
			return total, err
		}
	}
	if rm := l.o.RetentionMs; rm >= 0 {
		now := l.o.Now()
		segs := l.segs.Load().segs
		n := 0
		for n < len(segs) && segs[n].Size() > 0 && now-segs[n].largestTimestamp() > rm {
			n++
		}
		d, err := l.deleteCounting(n, "retention.ms")
		total += d
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteCounting deletes the n oldest segments, rolling first when n includes
// the active segment.
func (l *Log) deleteCounting(n int, reason string) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	segs := l.segs.Load().segs
	if n >= len(segs) {
		if _, err := l.roll(l.next.Load()); err != nil {
			return 0, err
		}
	}
	return l.deleteOldest(n, reason)
}

// largestTimestamp is the segment's max timestamp, or its file's mtime when it
// has none. A max timestamp later than the file's last modification (a record
// stamped in the future) is capped at that mtime: otherwise one such record
// would pin its segment, and every later one, until the wall clock caught up.
func (s *Segment) largestTimestamp() int64 {
	ts := s.maxTs.Load()
	if ts < 0 {
		return s.createdMs
	}
	if st, err := s.log.Stat(); err == nil {
		if m := st.ModTime().UnixMilli(); m > 0 && m < ts {
			return m
		}
	}
	return ts
}
