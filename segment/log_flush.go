package segment

import (
	"errors"
	"time"
)

// Flush makes every record appended so far durable.
func (l *Log) Flush() error { return l.FlushTo(l.next.Load()) }

// FlushTo makes every offset below off durable. Concurrent callers are grouped:
// one fsync covers everything appended before it started, and callers whose
// offsets it covered return without syncing again (group commit). A failed
// fsync takes the log offline (see Health): the recovery point stays below
// it for good.
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
	if err := l.health.Err(); err != nil {
		return err
	}
	var began time.Time
	if l.o.OnFlush != nil {
		began = time.Now()
	}
	target := l.next.Load() // load before the list: its data is in the list
	segs := l.segs.Load().segs
	last := segs[len(segs)-1]
	for _, s := range segs {
		if s.base >= off && s != segs[0] {
			// Nothing below off here or later (a roll's flush of the
			// segments it sealed): the new active segment is not synced,
			// which would also count as a flush in its mapping and
			// zero-fill decisions.
			target = min(target, s.base)
			break
		}
		if s != last && s.next.Load() <= from {
			continue
		}
		if !s.acquire() {
			continue // deleted meanwhile: nothing left to make durable
		}
		err := s.flush(s != last)
		s.release()
		if err != nil {
			return l.fail(err)
		}
	}
	// The segments' names must be durable too before the recovery point
	// covers them (a roll's directory sync may still be running).
	if err := l.syncDir(); err != nil {
		return err
	}
	if target > l.flushed.Load() {
		l.flushed.Store(target)
	}
	l.lastFlushMs.Store(l.o.Now())
	if l.o.OnFlush != nil {
		l.o.OnFlush(time.Since(began))
	}
	return nil
}

// startFlusher starts the flush.ms goroutine; the caller holds mu or owns
// the log exclusively (Open), and no flusher runs yet.
func (l *Log) startFlusher() {
	stop := make(chan struct{})
	l.stopFlusher = stop
	l.bg.Add(1)
	go l.runFlusher(stop)
}

// flusherTick is how often the flusher checks for flush.ms: a quarter of the
// period, between 1 ms and 1 s.
func flusherTick(flushMs int64) time.Duration {
	if flushMs >= int64(4*time.Second/time.Millisecond) {
		return time.Second
	}
	return max(time.Duration(flushMs)*time.Millisecond/4, time.Millisecond)
}

// runFlusher applies flush.ms: it fsyncs when unflushed data is older than
// flush.ms, checking a few times per period. The period is read at every
// check, so Reconfigure changes it on a running log.
func (l *Log) runFlusher(stop <-chan struct{}) {
	defer l.bg.Done()
	t := time.NewTimer(flusherTick(l.flushMs.Load()))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ms := l.flushMs.Load()
			if ms != Never && l.next.Load() > l.flushed.Load() && l.o.Now()-l.lastFlushMs.Load() >= ms && l.health.Err() == nil {
				if err := l.Flush(); err != nil && !errors.Is(err, ErrOffline) {
					l.o.Logger.Error("background flush failed", "dir", l.dir, "err", err)
				}
			}
			t.Reset(flusherTick(ms))
		}
	}
}
