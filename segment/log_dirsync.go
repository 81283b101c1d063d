package segment

import "fmt"

// Directory syncs off the writer lock. A roll creates the new segment's files
// and a retention delete renames the old ones under the writer lock, but the
// fsync of the directory that makes those names durable runs afterwards, in
// the background, as Kafka's roll schedules its flush: appends to the new
// segment go on meanwhile. Nothing that relies on the names being durable
// moves before that fsync has returned: FlushTo syncs the directory (or
// waits for the sync in progress) before it advances the recovery point, so
// an append acknowledged under flush.messages, a checkpoint and a clean
// shutdown all come after it; and the recovery point jumps over deleted
// segments only once their renames are durable.

// dirChanged notes a change of the directory's entries that must become
// durable (writer lock held).
func (l *Log) dirChanged() { l.dirGen.Add(1) }

// syncDir makes every directory change noted so far durable. Concurrent
// callers share one fsync. A failure takes the log offline: a failed fsync
// is never retried (a retry may report success for entries the failed one
// dropped).
func (l *Log) syncDir() error {
	if l.dirSynced.Load() >= l.dirGen.Load() {
		return nil
	}
	l.dirMu.Lock()
	defer l.dirMu.Unlock()
	gen := l.dirGen.Load()
	if l.dirSynced.Load() >= gen {
		return nil
	}
	if err := l.health.Err(); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("segment: sync dir %s: %w", l.dir, err))
	}
	l.dirSynced.Store(gen)
	return nil
}

// afterDirSync runs then, in the background, once the directory changes
// noted so far are durable; a failed sync (the log goes offline) skips it.
func (l *Log) afterDirSync(then func()) {
	l.background(func() {
		if l.syncDir() == nil && then != nil {
			then()
		}
	})
}
