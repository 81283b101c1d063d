package segment

import "time"

// Flush makes every record appended so far durable.
func (l *Log) Flush() error { return l.FlushTo(l.next.Load()) }

// FlushTo makes every offset below off durable. Concurrent callers are grouped:
// one fsync covers everything appended before it started, and callers whose
// offsets it covered return without syncing again (group commit).
func (l *Log) FlushTo(off int64) error {
	if l.flushed.Load() >= off {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	from := l.flushed.Load()
	if from >= off {
		return nil
	}
	target := l.next.Load() // load before the list: its data is in the list
	segs := l.segs.Load().segs
	last := segs[len(segs)-1]
	for _, s := range segs {
		if s != last && s.next.Load() <= from {
			continue
		}
		if !s.acquire() {
			continue // deleted meanwhile: nothing left to make durable
		}
		err := s.flush(s != last)
		s.release()
		if err != nil {
			return err
		}
	}
	if target > l.flushed.Load() {
		l.flushed.Store(target)
	}
	l.lastFlushMs.Store(l.o.Now())
	return nil
}

// runFlusher applies flush.ms: it fsyncs when unflushed data is older than
// FlushMs, checking a few times per period.
func (l *Log) runFlusher() {
	defer l.bg.Done()
	tick := time.Duration(l.o.FlushMs) * time.Millisecond / 4
	if tick < time.Millisecond {
		tick = time.Millisecond
	}
	if tick > time.Second {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-l.stopFlusher:
			return
		case <-t.C:
			if l.next.Load() > l.flushed.Load() && l.o.Now()-l.lastFlushMs.Load() >= l.o.FlushMs {
				if err := l.Flush(); err != nil {
					l.o.Logger.Error("background flush failed", "dir", l.dir, "err", err)
				}
			}
		}
	}
}
