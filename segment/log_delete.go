package segment

import (
	"fmt"
	"time"
)

// deleteOldest removes the n oldest segments from the list (never the last one),
// advances the log start offset to the new first segment, renames their files to
// .deleted at once and removes them after file.delete.delay.ms. Readers holding
// them keep reading until they release. Writer lock held. A failed rename takes
// the log offline (the segments are already gone from the list).
//
// The renames are made durable by a directory sync in the background (see
// log_dirsync.go); only after it does the recovery point jump to the new first
// segment: a deleted segment never flushed that came back after a power loss
// with a torn tail would make recovery cut there and remove every later
// segment, flushed or not.
func (l *Log) deleteOldest(n int, reason string) (int, error) {
	if err := l.health.Err(); err != nil {
		return 0, err
	}
	segs := l.segs.Load().segs
	if n > len(segs)-1 {
		n = len(segs) - 1
	}
	if n <= 0 {
		return 0, nil
	}
	victims := segs[:n]
	if b := segs[n].base; b > l.start.Load() {
		l.start.Store(b)
	}
	l.publish(append([]*Segment(nil), segs[n:]...))
	for _, v := range victims {
		l.o.Logger.Info("deleting segment", "dir", l.dir, "base", v.base, "size", v.Size(), "reason", reason)
		if err := l.retire(v); err != nil {
			return 0, l.fail(err)
		}
	}
	l.dirChanged()
	base := segs[n].base
	l.removeSnapshots(func(off int64) bool { return off >= base })
	l.afterDirSync(func() { l.raiseFlushed(base) })
	return n, nil
}

// raiseFlushed moves the recovery point up to base, the first segment left
// by a deletion whose renames are durable: deleted data need not be flushed,
// and the recovery point never lies below the log start. A truncation since
// the deletion may have moved the log start below base; then nothing moves.
func (l *Log) raiseFlushed(base int64) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.health.Err() == nil && base <= l.start.Load() && base <= l.next.Load() && l.flushed.Load() < base {
		l.flushed.Store(base)
	}
}

// retire renames a segment's files to .deleted and schedules their removal.
func (l *Log) retire(v *Segment) error {
	if err := v.renameAll("", DeletedSuffix); err != nil {
		return err
	}
	l.scheduleRemoval(v)
	return nil
}

// scheduleRemoval removes a retired segment's files after file.delete.delay.ms.
func (l *Log) scheduleRemoval(v *Segment) {
	delay := time.Duration(l.o.FileDeleteDelayMs) * time.Millisecond
	if delay <= 0 {
		l.finishDelete(v)
		return
	}
	l.bg.Add(1)
	l.pendingMu.Lock()
	if l.pendingDel == nil {
		l.pendingDel = make(map[*Segment]*time.Timer)
	}
	l.pendingDel[v] = time.AfterFunc(delay, func() {
		defer l.bg.Done()
		l.pendingMu.Lock()
		_, ok := l.pendingDel[v]
		delete(l.pendingDel, v)
		l.pendingMu.Unlock()
		if ok {
			l.finishDelete(v)
		}
	})
	l.pendingMu.Unlock()
}

// finishDelete removes the .deleted files and drops the log's reference. A
// failed removal takes the log offline, as Kafka's asynchronous delete does;
// an offline log leaves the files for recovery to remove.
func (l *Log) finishDelete(v *Segment) {
	if l.health.Err() == nil {
		if err := v.removeAll(DeletedSuffix); err != nil {
			l.fail(err)
		}
	}
	l.dropRef(v)
}

// dropRef drops the log's reference on a retired segment, reporting a failed
// close.
func (l *Log) dropRef(v *Segment) {
	if v.refs.Add(-1) == 0 {
		if err := v.closeFiles(); err != nil {
			l.o.Logger.Error("closing deleted segment failed", "dir", l.dir, "base", v.base, "err", err)
		}
	}
}

// SetLogStartOffset advances the log start offset (Kafka's DeleteRecords): reads
// below it fail, and segments wholly below it are deleted.
func (l *Log) SetLogStartOffset(off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.health.Err(); err != nil {
		return err
	}
	if off > l.next.Load() {
		return fmt.Errorf("%w: log start offset %d beyond log end %d", ErrOffsetOutOfRange, off, l.next.Load())
	}
	if off <= l.start.Load() {
		return nil
	}
	l.start.Store(off)
	_, err := l.deleteBelowStart()
	return err
}

func (l *Log) deleteBelowStart() (int, error) {
	segs := l.segs.Load().segs
	start := l.start.Load()
	n := 0
	for n < len(segs)-1 && segs[n+1].base <= start {
		n++
	}
	return l.deleteOldest(n, "below log start offset")
}

// DeletePrefix deletes the n oldest segments (never the active one).
func (l *Log) DeletePrefix(n int) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deleteOldest(n, "requested")
}
