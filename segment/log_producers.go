package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

// Producer state (package producer) follows every batch the log takes:
// a leader's append (Append) is checked first (sequence, epoch; a retry is
// answered with its original offsets and not appended), replicated or
// copied batches (AppendAssigned) are applied as they are. It is
// snapshotted to %020d.snapshot files at roll and on Close, rebuilt at
// Open from the newest good snapshot and the batches after it, and after a
// truncation the same way.

// ProducerState returns the partition's producer state; the caller must
// hold no reference across appends (use it under WithProducerState).
func (l *Log) WithProducerState(f func(*producer.State)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.ps)
}

// collectProducer records the producer fields of b, a batch of the append
// being checked (writer lock held).
func (l *Log) collectProducer(b record.Batch) {
	if b.ProducerID() < 0 {
		return
	}
	if pb, ok := producer.BatchOf(b); ok {
		l.pbatches = append(l.pbatches, pb)
	}
}

// checkProducers validates a leader append's collected batches; a retry
// fills info with the original batch's offsets and sets Duplicate.
func (l *Log) checkProducers(info *AppendInfo) error {
	if len(l.pbatches) == 0 {
		return nil
	}
	dup, isDup, err := l.ps.Check(l.pbatches, l.o.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProducer, err)
	}
	if isDup {
		info.Duplicate = true
		info.FirstOffset, info.LastOffset = dup.FirstOffset, dup.LastOffset
	}
	return nil
}

// applyProducers applies the collected batches of an append stored in
// seg; an abort marker's transaction goes to seg's transaction index. A
// failed index write takes the log offline (the batches are stored).
func (l *Log) applyProducers(seg *Segment) error {
	txns := false
	var err error
	if len(l.pbatches) > 0 {
		l.psDirty = true
	}
	for i := range l.pbatches {
		b := &l.pbatches[i]
		txns = txns || b.Transactional || b.Control
		txn, ended := l.ps.Apply(b)
		if ended && txn.Aborted && err == nil {
			err = l.addAborted(seg, producer.AbortedTxn{ProducerID: txn.ProducerID, FirstOffset: txn.FirstOffset,
				LastOffset: txn.LastOffset, LastStableOffset: l.ps.LastStableOffset(txn)})
		}
	}
	l.pbatches = l.pbatches[:0]
	if txns {
		l.noteTxns()
	}
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// snapshotOffsets lists the offsets of the log's .snapshot files, ascending.
func (l *Log) snapshotOffsets() ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("segment: list %s: %w", l.dir, err)
	}
	var offs []int64
	for _, n := range names {
		if b, suf, ok := ParseFileName(n); ok && suf == SnapshotSuffix {
			offs = append(offs, b)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
}

// removeSnapshots removes the snapshots whose offset keep rejects (after
// retention: those below the new log start). A failure is logged: such a
// snapshot is older than the newest kept and only read when every newer
// one is damaged; then its producers are checked against the log anyway.
func (l *Log) removeSnapshots(keep func(off int64) bool) {
	offs, err := l.snapshotOffsets()
	if err != nil {
		l.o.Logger.Error("listing producer snapshots failed", "dir", l.dir, "err", err)
		return
	}
	for _, off := range offs {
		if keep(off) {
			continue
		}
		if err := l.fs.Remove(FilePath(l.dir, off, SnapshotSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.o.Logger.Error("removing producer snapshot failed", "dir", l.dir, "offset", off, "err", err)
		}
	}
}

// dropSnapshot removes a snapshot the load will not use (above the log
// end, or damaged), first handing it to Options.SaveCut when rep is set
// (Open: recovery keeps what it removes). With dry nothing changes. why
// goes to rep.SideFilesTrimmed.
func (l *Log) dropSnapshot(off int64, why string, rep *LoadReport, dry bool) error {
	path := FilePath(l.dir, off, SnapshotSuffix)
	if rep != nil {
		rep.SideFilesTrimmed = append(rep.SideFilesTrimmed, FileName(off, SnapshotSuffix)+": "+why)
	}
	if dry {
		return nil
	}
	if rep != nil && l.o.SaveCut != nil {
		st, err := l.fs.Stat(path)
		if err != nil {
			return fmt.Errorf("segment: %w", err)
		}
		if _, err := l.o.SaveCut(path, 0, st.Size(), "snapshot"); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrSaveCut, path, err)
		}
	}
	if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("segment: remove %s: %w", path, err)
	}
	return nil
}

// writeSnapshot writes the producer state as of the log end (which must
// be end) to end's snapshot file (writer lock held). With sync it is
// written atomically and durably (Close); otherwise (a roll) it is written
// in place without an fsync: a crash may leave it torn, and loading then
// ignores it for an older one. Expired producers are dropped first. A
// failure is returned, for the caller to take the log offline, as Kafka
// takes the log dir offline when a snapshot cannot be written: the state
// could be rebuilt from the log, but the disk failed a write.
func (l *Log) writeSnapshot(end int64, sync bool) error {
	l.ps.Expire(l.o.Now())
	data := producer.EncodeSnapshot(l.ps.SnapshotEntries())
	path := FilePath(l.dir, end, SnapshotSuffix)
	var err error
	if sync {
		err = fsutil.WriteFileAtomic(l.fs, path, data)
	} else {
		var f interface {
			Write([]byte) (int, error)
			Close() error
		}
		if f, err = l.fs.Create(path); err == nil {
			_, err = f.Write(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("segment: writing producer snapshot %s: %w", path, err)
	}
	l.psDirty = false
	return nil
}

// readSnapshot loads the snapshot at off.
func (l *Log) readSnapshot(off int64) (*producer.State, error) {
	path := FilePath(l.dir, off, SnapshotSuffix)
	f, err := l.fs.Open(path)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<30))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	entries, err := producer.DecodeSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := producer.LoadSnapshot(entries, off, l.o.ProducerIDExpirationMs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// dropSnapshotsAbove removes the snapshots above end (dropSnapshot).
func (l *Log) dropSnapshotsAbove(end int64, rep *LoadReport, dry bool) error {
	offs, err := l.snapshotOffsets()
	if err != nil {
		return err
	}
	return l.dropAbove(offs, end, rep, dry)
}

func (l *Log) dropAbove(offs []int64, end int64, rep *LoadReport, dry bool) error {
	for _, off := range offs {
		if off > end {
			if err := l.dropSnapshot(off, fmt.Sprintf("producer snapshot above the log end %d removed", end), rep, dry); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadProducers builds the producer state (Open, after a truncation):
// snapshots above the log end are removed, the newest that loads is the
// start, and the batches from it to the log end are applied. A damaged
// snapshot is logged, reported and removed, and the next older one
// tried; with none, the whole log is replayed, but for a log that never
// had a snapshot after a clean shutdown (one written before they existed),
// where only the last two segments are, as Kafka does on upgrade. Every
// snapshot removed and .txnindex rewritten is listed in rep (Open, and
// Inspect with dry, which changes nothing); a file that cannot be removed
// or rewritten fails the load, for its stale content would be read later.
func (l *Log) loadProducers(rep *LoadReport, dry bool) error {
	end := l.next.Load()
	segs := l.segs.Load().segs
	bad := map[*Segment]bool{}
	trimmed := map[*Segment]int{}
	if rep != nil { // Open: read the transaction indexes
		cut := map[string]bool{}
		for _, c := range rep.Cuts {
			cut[c.File] = !c.Removed
		}
		for _, s := range segs {
			ok, n, err := l.readTxnIndex(s, cut[s.Path(LogSuffix)])
			if err != nil {
				return err
			}
			if !ok {
				bad[s] = true
				rep.TxnIndexesRebuilt++
			}
			if n > 0 {
				trimmed[s] = n
			}
		}
	}
	offs, err := l.snapshotOffsets()
	if err != nil {
		return err
	}
	hadSnapshots := len(offs) > 0
	if err := l.dropAbove(offs, end, rep, dry); err != nil {
		return err
	}
	var st *producer.State
	from := segs[0].base
	for i := len(offs) - 1; i >= 0 && st == nil; i-- {
		off := offs[i]
		if off > end {
			continue
		}
		s, err := l.readSnapshot(off)
		if err != nil {
			if !errors.Is(err, producer.ErrBadSnapshot) {
				return fmt.Errorf("segment: %w", err)
			}
			l.o.Logger.Warn("ignoring damaged producer snapshot, rebuilding from the log", "dir", l.dir, "err", err)
			if rep != nil {
				rep.SnapshotsIgnored = append(rep.SnapshotsIgnored, err.Error())
			}
			if err := l.dropSnapshot(off, "damaged producer snapshot removed, the state rebuilt from the log", rep, dry); err != nil {
				return err
			}
			continue
		}
		st, from = s, max(off, from)
	}
	if st == nil {
		if !hadSnapshots && l.o.CleanShutdown && len(segs) > 2 {
			from = segs[len(segs)-2].base
		}
		st = producer.NewState(from, l.o.ProducerIDExpirationMs)
	}
	l.ps = st
	col := abortCollector{}
	n, err := replayInto(st, segs, from, end, col)
	if rep != nil {
		rep.ProducerBatchesReplayed += n
	}
	if err != nil {
		return err
	}
	st.End = end
	// A damaged .txnindex below the replayed range: rebuilt from a replay
	// of the log from its start (into a scratch state).
	full := false
	for s := range bad {
		full = full || s.base < from
	}
	if full {
		scratch := producer.NewState(segs[0].base, l.o.ProducerIDExpirationMs)
		below := abortCollector{}
		if _, err := replayInto(scratch, segs, segs[0].base, from, below); err != nil {
			return err
		}
		for s, list := range below {
			col[s] = append(list, col[s]...)
		}
	}
	if err := l.reconcileAborted(segs, from, col, bad, trimmed, rep, dry); err != nil {
		return err
	}
	l.noteTxns()
	return nil
}
