package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/record"
)

// Cleaned is a segment being written by the cleaner under temporary names
// (<base>.log.cleaned, .index.cleaned, .timeindex.cleaned). Batches go in with
// their offsets kept (Append); Seal trims the indexes and makes the files
// durable; the Log's ReplaceSegments then swaps it in, after which the segment
// lives under its final names. Abort removes the files of an unused one.
type Cleaned struct {
	seg     *Segment
	sealed  bool
	done    bool
	aborted []producer.AbortedTxn
}

// CreateCleaned starts a cleaned segment with base offset base in the log's
// directory. Stale .cleaned files of the same base are replaced.
func (l *Log) CreateCleaned(base int64) (*Cleaned, error) {
	if err := l.health.Err(); err != nil {
		return nil, err
	}
	s := &Segment{fs: l.fs, dir: l.dir, base: base, o: l.o}
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		if err := l.fs.Remove(s.Path(suf + CleanedSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("segment: remove stale %s: %w", s.Path(suf+CleanedSuffix), err)
		}
	}
	lf, err := l.fs.OpenFile(s.Path(LogSuffix+CleanedSuffix), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("segment: create %s: %w", s.Path(LogSuffix+CleanedSuffix), err)
	}
	s.log = lf
	if err := s.openIndexesAt(CleanedSuffix); err != nil {
		lf.Close()
		l.fs.Remove(s.Path(LogSuffix + CleanedSuffix))
		return nil, err
	}
	s.init(l.o.Now())
	s.next.Store(base)
	return &Cleaned{seg: s}, nil
}

// openIndexesAt opens writable indexes under the segment's names plus extra.
func (s *Segment) openIndexesAt(extra string) error {
	if extra == "" {
		return s.openIndexes(true)
	}
	oi, err := index.OpenOffsetIndex(s.fs, s.Path(IndexSuffix+extra), s.base, s.o.SegmentIndexBytes, true)
	if err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	ti, err := index.OpenTimeIndex(s.fs, s.Path(TimeIndexSuffix+extra), s.base, s.o.SegmentIndexBytes, true)
	if err != nil {
		oi.Close()
		s.fs.Remove(s.Path(IndexSuffix + extra))
		return fmt.Errorf("segment: %w", err)
	}
	s.offIdx, s.timeIdx = oi, ti
	return nil
}

// Base is the cleaned segment's base offset.
func (c *Cleaned) Base() int64 { return c.seg.base }

// Size is the bytes appended so far.
func (c *Cleaned) Size() int64 { return c.seg.Size() }

// NextOffset is one past the last offset appended (Base when empty).
func (c *Cleaned) NextOffset() int64 { return c.seg.NextOffset() }

// Append writes whole entries (v2 batches or legacy messages) whose offsets are
// kept. They must follow the offsets already appended and stay within 2^31-1 of
// the base.
func (c *Cleaned) Append(buf []byte) error {
	if c.sealed || c.done {
		return fmt.Errorf("%w: cleaned segment %d already sealed", ErrBadAppend, c.seg.base)
	}
	if len(buf) == 0 {
		return nil
	}
	if c.seg.size.Load()+int64(len(buf)) > 1<<31-1 {
		return fmt.Errorf("%w: cleaned segment %d would exceed 2 GiB", ErrTooLarge, c.seg.base)
	}
	next := c.seg.next.Load()
	for p := 0; p < len(buf); {
		h, err := record.ParseEntryHeader(buf[p:], int64(p))
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadAppend, err)
		}
		if h.TotalSize() > int64(len(buf)-p) {
			return fmt.Errorf("%w: entry at byte %d declares %d bytes, %d remain", ErrBadAppend, p, h.TotalSize(), len(buf)-p)
		}
		if h.Offset < next || h.LastOffset < h.Offset || h.LastOffset-c.seg.base > 1<<31-1 {
			return fmt.Errorf("%w: entry at byte %d holds [%d, %d], segment base %d, next %d", ErrOffsetMismatch, p, h.Offset, h.LastOffset, c.seg.base, next)
		}
		next = h.LastOffset + 1
		p += int(h.TotalSize())
	}
	return c.seg.append(buf)
}

// AddAbortedTxn adds an entry to the cleaned segment's aborted-transaction
// index, written at Seal as <base>.txnindex.cleaned and swapped in with the
// segment. Entries must come in marker order, each marker within the
// segment's offsets once sealed.
func (c *Cleaned) AddAbortedTxn(a producer.AbortedTxn) error {
	if c.sealed || c.done {
		return fmt.Errorf("%w: cleaned segment %d already sealed", ErrBadAppend, c.seg.base)
	}
	if n := len(c.aborted); n > 0 && a.LastOffset <= c.aborted[n-1].LastOffset {
		return fmt.Errorf("%w: aborted transaction ending at %d after one ending at %d", ErrOffsetMismatch, a.LastOffset, c.aborted[n-1].LastOffset)
	}
	c.aborted = append(c.aborted, a)
	return nil
}

// Seal gives the time index its final entry, trims both indexes and fsyncs the
// three files (four with an aborted-transaction index).
func (c *Cleaned) Seal() error {
	if c.sealed {
		return nil
	}
	if n := len(c.aborted); n > 0 {
		if last := c.aborted[n-1].LastOffset; c.aborted[0].LastOffset < c.seg.base || last >= c.seg.next.Load() {
			return fmt.Errorf("%w: aborted transaction markers up to %d outside cleaned segment [%d, %d)", ErrOffsetMismatch, last, c.seg.base, c.seg.next.Load())
		}
		var buf []byte
		for _, a := range c.aborted {
			buf = producer.AppendAbortedTxn(buf, a)
		}
		if err := c.writeTxnIndex(buf); err != nil {
			return err
		}
	}
	if err := c.seg.seal(); err != nil {
		return err
	}
	if err := c.seg.log.Sync(); err != nil {
		return fmt.Errorf("segment: sync %s: %w", c.seg.Path(LogSuffix+CleanedSuffix), err)
	}
	if err := c.seg.offIdx.Sync(); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	if err := c.seg.timeIdx.Sync(); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	c.seg.indexesSynced.Store(true)
	if len(c.aborted) > 0 {
		list := slices.Clone(c.aborted)
		c.seg.aborted.Store(&list)
	}
	c.sealed = true
	return nil
}

// writeTxnIndex writes and fsyncs <base>.txnindex.cleaned (a temporary
// name already: a crash leaves it to CreateCleaned or Open to remove).
func (c *Cleaned) writeTxnIndex(buf []byte) error {
	path := c.seg.Path(TxnIndexSuffix + CleanedSuffix)
	f, err := c.seg.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("segment: create %s: %w", path, err)
	}
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("segment: write %s: %w", path, err)
	}
	return nil
}

// Abort closes and removes an unused cleaned segment's files.
func (c *Cleaned) Abort() error {
	if c.done {
		return nil
	}
	c.done = true
	c.seg.closeFiles()
	return c.seg.removeAll(CleanedSuffix)
}

// ReplaceSegments swaps cleaned segments in for old ones, crash-safely, as
// Kafka's LocalLog.replaceSegments does:
//
//  1. the cleaned files are already durable (Seal);
//  2. .cleaned is renamed to .swap, segment by segment in descending base order;
//  3. the segment list is replaced in one copy-on-write store, so a reader sees
//     either the old segments or the new ones, never a gap;
//  4. the old segments' files are renamed to .deleted and removed after
//     file.delete.delay.ms (readers holding them keep reading);
//  5. .swap is renamed to the final names (the .log last);
//  6. the directory is fsynced.
//
// A crash leaves a state Open repairs: while any .cleaned file remains the swap
// is rolled back, once every new file is .swap it is rolled forward.
//
// old must be a run of consecutive segments of the current list; the cleaned
// segments must cover it (first base equal to the run's first base, each base
// below the run's end). The active segment may be replaced only when
// allowActive is set (offline compaction); the last cleaned segment then becomes
// the active one and must end at the log end offset. If the list changed since
// old was taken (retention, truncation), ErrSegmentsChanged is returned and
// nothing is touched: the caller aborts the cleaned segments. An I/O error
// once the renames have begun takes the log offline (Open repairs the files).
func (l *Log) ReplaceSegments(cleaned []*Cleaned, old []*Segment, allowActive bool) error {
	if len(cleaned) == 0 || len(old) == 0 {
		return fmt.Errorf("%w: nothing to replace", ErrBadAppend)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.health.Err(); err != nil {
		return err
	}
	segs := l.segs.Load().segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base >= old[0].base })
	if i+len(old) > len(segs) {
		return ErrSegmentsChanged
	}
	for j, o := range old {
		if segs[i+j] != o {
			return ErrSegmentsChanged
		}
	}
	replacesActive := i+len(old) == len(segs)
	if replacesActive && !allowActive {
		return fmt.Errorf("%w: the active segment cannot be replaced", ErrSegmentsChanged)
	}
	end := old[len(old)-1].next.Load()
	if cleaned[0].seg.base != old[0].base {
		return fmt.Errorf("%w: cleaned base %d, replaced base %d", ErrBadAppend, cleaned[0].seg.base, old[0].base)
	}
	for k, c := range cleaned {
		if !c.sealed || c.done {
			return fmt.Errorf("%w: cleaned segment %d not sealed", ErrBadAppend, c.seg.base)
		}
		if k > 0 && c.seg.base <= cleaned[k-1].seg.base || c.seg.next.Load() > end {
			return fmt.Errorf("%w: cleaned segment %d does not fit [%d, %d)", ErrBadAppend, c.seg.base, old[0].base, end)
		}
	}
	last := cleaned[len(cleaned)-1].seg
	if replacesActive && last.next.Load() != l.next.Load() {
		return fmt.Errorf("%w: cleaned active segment ends at %d, the log at %d", ErrBadAppend, last.next.Load(), l.next.Load())
	}
	// 2. .cleaned -> .swap, highest base first, so that a crash in the middle
	// leaves a .cleaned file below every .swap file (rolled back at Open).
	for k := len(cleaned) - 1; k >= 0; k-- {
		if err := cleaned[k].seg.renameAll(CleanedSuffix, SwapSuffix); err != nil {
			return l.fail(err)
		}
	}
	for _, c := range cleaned {
		c.done = true
	}
	// 3. One store: readers see the old run or the new one.
	ns := make([]*Segment, 0, len(segs)-len(old)+len(cleaned))
	ns = append(ns, segs[:i]...)
	for _, c := range cleaned {
		ns = append(ns, c.seg)
	}
	ns = append(ns, segs[i+len(old):]...)
	if replacesActive {
		if err := last.unseal(); err != nil {
			return l.fail(err)
		}
	}
	l.publish(ns)
	// 4. Old files to .deleted, removed after file.delete.delay.ms.
	for _, o := range old {
		l.o.Logger.Info("replacing cleaned segment", "dir", l.dir, "base", o.base, "size", o.Size())
		if err := o.renameAll("", DeletedSuffix); err != nil {
			return l.fail(err)
		}
		l.scheduleRemoval(o)
	}
	// 5. .swap -> final names, the .log last: while its .swap exists Open rolls
	// the swap forward.
	for _, c := range cleaned {
		for _, suf := range []string{IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, LogSuffix} {
			err := l.fs.Rename(c.seg.Path(suf+SwapSuffix), c.seg.Path(suf))
			if err != nil && !(suf != LogSuffix && errors.Is(err, fs.ErrNotExist)) {
				return l.fail(fmt.Errorf("segment: rename %s: %w", c.seg.Path(suf+SwapSuffix), err))
			}
		}
	}
	// 6. Make every rename durable.
	l.dirChanged()
	return l.syncDir()
}

// Acquire takes a reader's reference on the segment, keeping its files open
// even if it is deleted or replaced meanwhile; false when it is already closed.
// Pair with Release.
func (s *Segment) Acquire() bool { return s.acquire() }

// Release drops a reference taken by Acquire.
func (s *Segment) Release() { s.release() }

// IndexBytes is the bytes of the segment's offset and time index entries.
func (s *Segment) IndexBytes() (offsetIndex, timeIndex int64) {
	return s.offIdx.SizeBytes(), s.timeIdx.SizeBytes()
}

// FirstBatchTimestamp is the max timestamp of the segment's first batch (-1 when
// empty or unknown): what max.compaction.lag.ms is judged by.
func (s *Segment) FirstBatchTimestamp() int64 {
	if s.size.Load() == 0 || !s.acquire() {
		return -1
	}
	defer s.release()
	r := headerReaders.Get().(*headerReader)
	defer headerReaders.Put(r)
	r.fileSize, r.n = s.size.Load(), 0
	h, err := r.header(s.log, 0)
	if err != nil {
		return -1
	}
	return h.MaxTimestamp
}
