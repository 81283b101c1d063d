package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

// Transactions, partition side. An abort marker appended (by any path)
// adds its transaction to the aborted-transaction index of the segment
// holding the marker, Kafka's %020d.txnindex, and to the segment's copy in
// memory, which Fetch at read_committed consults (AbortedTxns). The last
// stable offset is the first offset of the oldest open transaction, capped
// by the high watermark. Open reads every segment's .txnindex and checks
// it against its segment; the entries from the replayed batches (after
// the producer snapshot) are recomputed and the file rewritten where it
// disagrees, and a damaged file below the snapshot is rebuilt by replaying
// the log from its start.

// abortedOf returns the segment's aborted transactions (nil: none).
func (s *Segment) abortedOf() []producer.AbortedTxn {
	if p := s.aborted.Load(); p != nil {
		return *p
	}
	return nil
}

// LastStableOffset is the first offset a read_committed consumer may not
// read: the first offset of the oldest open transaction, or the high
// watermark when that is lower or no transaction is open.
func (l *Log) LastStableOffset() int64 {
	hw := l.hw.Load()
	if fu := l.firstUnstable.Load(); fu >= 0 && fu < hw {
		return fu
	}
	return hw
}

// FirstUnstableOffset is the first offset of the oldest open transaction;
// ok is false when none is open. The last stable offset is the smaller of
// it and whatever high watermark the caller serves (a replica's).
func (l *Log) FirstUnstableOffset() (off int64, ok bool) {
	fu := l.firstUnstable.Load()
	return fu, fu >= 0
}

// ReadStable is ReadToHighWatermark stopping at the last stable offset
// too: what a read_committed consumer may read.
func (l *Log) ReadStable(offset, maxBytes int64) (Region, error) {
	return l.read(offset, maxBytes, true, true)
}

// AbortedTxns appends to dst the aborted transactions that hold offsets in
// [from, upTo): those whose marker is at or after from and whose first
// offset is below upTo.
func (l *Log) AbortedTxns(from, upTo int64, dst []producer.AbortedTxn) []producer.AbortedTxn {
	segs := l.segs.Load().segs
	for _, s := range segs[locate(segs, from):] {
		for _, a := range s.abortedOf() {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				dst = append(dst, a)
			}
		}
	}
	return dst
}

// noteTxns refreshes the first unstable offset after an append that held
// transactional or control batches (writer lock held).
func (l *Log) noteTxns() {
	if fu, ok := l.ps.FirstUnstableOffset(); ok {
		l.firstUnstable.Store(fu)
	} else {
		l.firstUnstable.Store(-1)
	}
}

// addAborted records an aborted transaction in seg's index (writer lock
// held): appended to its .txnindex file, then published in memory.
func (l *Log) addAborted(seg *Segment, a producer.AbortedTxn) error {
	path := seg.Path(TxnIndexSuffix)
	f, err := l.fs.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("segment: open %s: %w", path, err)
	}
	_, err = f.Write(producer.AppendAbortedTxn(nil, a))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("segment: append to %s: %w", path, err)
	}
	list := append(slices.Clone(seg.abortedOf()), a)
	seg.aborted.Store(&list)
	return nil
}

// readTxnIndex loads a segment's .txnindex at Open; ok is false when the
// file is damaged (logged: it is rebuilt). In a segment this Open cut
// (wasCut), entries whose marker is at or past the segment's new end are
// dropped, as Kafka's TransactionIndex.truncateTo does after a cut (trimmed
// counts them: the file is rewritten); in another they are damage.
func (l *Log) readTxnIndex(s *Segment, wasCut bool) (ok bool, trimmed int, err error) {
	path := s.Path(TxnIndexSuffix)
	f, err := l.fs.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("segment: open %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<30))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, 0, fmt.Errorf("segment: read %s: %w", path, err)
	}
	limit := s.next.Load()
	if wasCut {
		limit = math.MaxInt64
	}
	list, derr := producer.DecodeTxnIndex(data, s.base, limit)
	if derr != nil {
		l.o.Logger.Warn("ignoring damaged transaction index, rebuilding it from the log", "file", path, "err", derr)
		return false, 0, nil
	}
	next := s.next.Load()
	for len(list) > 0 && list[len(list)-1].LastOffset >= next {
		list = list[:len(list)-1]
		trimmed++
	}
	if len(list) > 0 {
		s.aborted.Store(&list)
	}
	return true, trimmed, nil
}

// writeTxnIndex replaces a segment's .txnindex with list (removed when
// empty) and publishes it.
func (l *Log) writeTxnIndex(s *Segment, list []producer.AbortedTxn) error {
	path := s.Path(TxnIndexSuffix)
	if len(list) == 0 {
		if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("segment: remove %s: %w", path, err)
		}
		s.aborted.Store(nil)
		return nil
	}
	var buf []byte
	for _, a := range list {
		buf = producer.AppendAbortedTxn(buf, a)
	}
	if err := fsutil.WriteFileAtomic(l.fs, path, buf); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	list = slices.Clone(list)
	s.aborted.Store(&list)
	return nil
}

// abortCollector gathers, during a replay, the aborted transactions by the
// segment holding their marker.
type abortCollector map[*Segment][]producer.AbortedTxn

// replayInto applies the batches holding offsets in [from, end) to st,
// collecting aborted transactions into col (nil: not collected); it
// returns how many batches had a producer.
func replayInto(st *producer.State, segs []*Segment, from, end int64, col abortCollector) (int, error) {
	n := 0
	var sc record.FileScanner
	for i, s := range segs {
		if from >= end {
			break
		}
		if i+1 < len(segs) && segs[i+1].base <= from {
			continue
		}
		size := s.size.Load()
		pos, _, ok, err := s.find(from, size)
		if err != nil {
			return n, fmt.Errorf("segment: replaying producer state from %s: %w", s.Path(LogSuffix), err)
		}
		if !ok {
			continue
		}
		sc.Reset(s.log, pos, size, record.ScanOptions{})
		for sc.Next() {
			h := sc.Header()
			if h.LastOffset >= end {
				break
			}
			if h.Magic != 2 || h.LastOffset < from {
				continue
			}
			pb, ok := producer.BatchOf(sc.Batch())
			if !ok {
				continue
			}
			n++
			if txn, ended := st.Apply(&pb); ended && txn.Aborted && col != nil {
				col[s] = append(col[s], producer.AbortedTxn{ProducerID: txn.ProducerID, FirstOffset: txn.FirstOffset,
					LastOffset: txn.LastOffset, LastStableOffset: st.LastStableOffset(txn)})
			}
		}
		if err := sc.Err(); err != nil {
			return n, fmt.Errorf("segment: replaying producer state from %s: %w", s.Path(LogSuffix), err)
		}
		from = max(from, s.next.Load())
	}
	return n, nil
}

// reconcileAborted makes the indexes of the segments holding offsets at or
// above from agree with col, what the replay from from found: the entries
// below from are kept, those above replaced; a file that differs (or had
// entries past its segment's end, trimmed) is rewritten and listed in rep.
// With dry nothing is written.
func (l *Log) reconcileAborted(segs []*Segment, from int64, col abortCollector, rebuilt map[*Segment]bool,
	trimmed map[*Segment]int, rep *LoadReport, dry bool) error {
	for _, s := range segs {
		if s.next.Load() <= from && !rebuilt[s] && trimmed[s] == 0 {
			continue
		}
		var want []producer.AbortedTxn
		for _, a := range s.abortedOf() {
			if a.LastOffset < from && !rebuilt[s] {
				want = append(want, a)
			}
		}
		want = append(want, col[s]...)
		if !rebuilt[s] && trimmed[s] == 0 && slices.Equal(want, s.abortedOf()) {
			continue
		}
		if rep != nil {
			name := FileName(s.base, TxnIndexSuffix)
			var line string
			switch {
			case rebuilt[s]:
				line = fmt.Sprintf("%s: damaged, rebuilt from the log: %d aborted transactions", name, len(want))
			case trimmed[s] > 0 && slices.Equal(want, s.abortedOf()):
				line = fmt.Sprintf("%s: %d aborted transactions ending at or past %d dropped", name, trimmed[s], s.next.Load())
			default:
				line = fmt.Sprintf("%s: rewritten to agree with the log: %d aborted transactions, %d ending past its end dropped",
					name, len(want), trimmed[s])
			}
			rep.SideFilesTrimmed = append(rep.SideFilesTrimmed, line)
		}
		if dry {
			continue
		}
		if err := l.writeTxnIndex(s, want); err != nil {
			return err
		}
	}
	return nil
}
