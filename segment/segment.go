package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/producer"
)

// Segment is one segment of a partition: the .log file holding the batches whose
// offsets start at Base, and its offset and time indexes.
//
// One writer (the Log, under its lock) appends; any number of readers read
// without locks. The writer publishes an append by storing size and next offset
// after the bytes and index entries are written, so a reader that loads next
// before size sees only whole, indexed data.
type Segment struct {
	fs   vfs.FS
	dir  string
	base int64
	o    *Options

	log     vfs.File
	offIdx  *index.OffsetIndex
	timeIdx *index.TimeIndex

	size  atomic.Int64 // committed bytes of .log
	next  atomic.Int64 // last offset + 1, or base when empty
	maxTs atomic.Int64 // largest timestamp so far, -1 when none
	refs  atomic.Int32 // the Log's reference plus one per active reader

	// Writer-only state.
	offsetOfMaxTs      int64                        // last offset of the batch holding maxTs
	allocated          int64                        // file size reserved by preallocation (0: none)
	wmap               []byte                       // shared writable mapping of the reserve (segment_map.go)
	mapCheck           func(off int64, n int) error // the file's vfs.MapWriteChecker, if any
	mapOff             int64                        // file offset of wmap[0]
	mapFailed          bool                         // the file cannot be mapped: appends use pwrite
	mapByFlushes       bool                         // flushes are rare enough for mapped appends
	mappedAppends      int64                        // appends copied into wmap (tests)
	seenFlushes        int64                        // flushes seen by the writer
	appendsSinceFlush  int64                        // appends since the writer saw a flush
	flushes            atomic.Int64                 // flush calls (any goroutine)
	zeroed             int64                        // the reserve is zero-filled below this (segment_zero.go)
	bytesSinceFlush    int64                        // bytes appended since the writer saw a flush
	flushIntervalBytes int64                        // bytes appended between the last two flushes seen
	bytesSinceIndex    int64                        // bytes appended since the last offset index entry
	rollTs             int64                        // max timestamp of the first batch, -1 when none
	createdMs          int64                        // wall clock at creation or open
	indexesSynced      atomic.Bool                  // indexes fsynced since they last changed

	// aborted is the segment's aborted-transaction index in memory
	// (log_txnindex.go), replaced copy-on-write; nil: none.
	aborted atomic.Pointer[[]producer.AbortedTxn]
}

// Base is the segment's base offset (its file name).
func (s *Segment) Base() int64 { return s.base }

// Size is the number of bytes of entries in the .log file: the logical end,
// which a preallocated active segment's file runs ahead of.
func (s *Segment) Size() int64 { return s.size.Load() }

// NextOffset is one past the last offset stored (Base when empty).
func (s *Segment) NextOffset() int64 { return s.next.Load() }

// MaxTimestamp is the largest record timestamp stored, or -1.
func (s *Segment) MaxTimestamp() int64 { return s.maxTs.Load() }

// Path returns the path of one of the segment's files.
func (s *Segment) Path(suffix string) string { return FilePath(s.dir, s.base, suffix) }

// Log returns the segment's .log file, for readers holding a reference.
func (s *Segment) LogFile() vfs.File { return s.log }

// OffsetIndex and TimeIndex expose the indexes (for tools and recovery).
func (s *Segment) OffsetIndex() *index.OffsetIndex { return s.offIdx }
func (s *Segment) TimeIndex() *index.TimeIndex     { return s.timeIdx }

// createSegment makes the three files of a new, empty segment. On failure it
// removes the files it created, so that the log is as before and a later
// roll at the same base can create them again; when that removal fails too
// the error wraps errNotUndone.
func createSegment(fsys vfs.FS, dir string, base int64, o *Options) (*Segment, error) {
	s := &Segment{fs: fsys, dir: dir, base: base, o: o}
	lf, err := fsys.OpenFile(s.Path(LogSuffix), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("segment: create %s: %w", s.Path(LogSuffix), err)
	}
	s.log = lf
	undo := func(err error) (*Segment, error) {
		if s.offIdx != nil {
			s.closeFiles()
		} else {
			lf.Close()
		}
		if rerr := s.removeAll(""); rerr != nil {
			return nil, fmt.Errorf("%w: %w; %w", errNotUndone, err, rerr)
		}
		return nil, err
	}
	// Stale index files of the same base (left by a crash) are replaced.
	for _, suf := range []string{IndexSuffix, TimeIndexSuffix} {
		if err := fsys.Remove(s.Path(suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return undo(fmt.Errorf("segment: remove stale %s: %w", s.Path(suf), err))
		}
	}
	if err := s.openIndexes(true); err != nil {
		return undo(err)
	}
	s.init(o.Now())
	s.next.Store(base)
	if err := s.preallocate(0); err != nil {
		return undo(err)
	}
	return s, nil
}

// preallocate extends the .log file ahead of the writer so that n more bytes
// fit inside the allocation (Options.Preallocate): to the logical end plus
// PreallocateChunk, at least the end of the append, at most SegmentBytes.
func (s *Segment) preallocate(n int64) error {
	if !s.o.Preallocate {
		return nil
	}
	end := s.size.Load() + n
	if end <= s.allocated && s.allocated > 0 {
		return nil
	}
	want := min(s.size.Load()+PreallocateChunk, s.o.SegmentBytes)
	want = max(want, end)
	if err := s.log.Allocate(want); err != nil {
		return fmt.Errorf("segment: preallocate %s to %d bytes: %w", s.Path(LogSuffix), want, err)
	}
	s.allocated = want
	return nil
}

// openSegment opens the files of an existing segment. Its size is the file's;
// next offset and timestamps are set by load or recover.
func openSegment(fsys vfs.FS, dir string, base int64, o *Options, writable bool) (*Segment, error) {
	s := &Segment{fs: fsys, dir: dir, base: base, o: o}
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	lf, err := fsys.OpenFile(s.Path(LogSuffix), flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("segment: open %s: %w", s.Path(LogSuffix), err)
	}
	s.log = lf
	st, err := lf.Stat()
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("segment: stat %s: %w", s.Path(LogSuffix), err)
	}
	if err := s.openIndexes(writable); err != nil {
		lf.Close()
		return nil, err
	}
	s.init(st.ModTime().UnixMilli())
	s.size.Store(st.Size())
	s.next.Store(base)
	return s, nil
}

func (s *Segment) init(nowMs int64) {
	s.refs.Store(1)
	s.mapByFlushes = true
	s.maxTs.Store(-1)
	s.offsetOfMaxTs = s.base
	s.rollTs = -1
	s.createdMs = nowMs
}

func (s *Segment) openIndexes(writable bool) error {
	oi, err := index.OpenOffsetIndex(s.fs, s.Path(IndexSuffix), s.base, s.o.SegmentIndexBytes, writable)
	if err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	ti, err := index.OpenTimeIndex(s.fs, s.Path(TimeIndexSuffix), s.base, s.o.SegmentIndexBytes, writable)
	if err != nil {
		oi.Close()
		return fmt.Errorf("segment: %w", err)
	}
	s.offIdx, s.timeIdx = oi, ti
	return nil
}

// acquire takes a reader's reference; false when the segment is already closed.
func (s *Segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the files.
func (s *Segment) release() {
	if s.refs.Add(-1) == 0 {
		s.closeFiles()
	}
}

func (s *Segment) closeFiles() error {
	s.unmap()
	var first error
	for _, c := range []interface{ Close() error }{s.offIdx, s.timeIdx, s.log} {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// flush makes the segment's data durable; the indexes too when asked (they are
// rebuilt by recovery above the recovery point, so the active segment skips them).
func (s *Segment) flush(indexes bool) error {
	s.flushes.Add(1)
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("segment: sync %s: %w", s.Path(LogSuffix), err)
	}
	if indexes && !s.indexesSynced.Load() {
		if err := s.offIdx.Sync(); err != nil {
			return fmt.Errorf("segment: sync %s: %w", s.Path(IndexSuffix), err)
		}
		if err := s.timeIdx.Sync(); err != nil {
			return fmt.Errorf("segment: sync %s: %w", s.Path(TimeIndexSuffix), err)
		}
		s.indexesSynced.Store(true)
	}
	return nil
}

// seal is called when the segment stops being the active one: the time index gets
// its final entry and both indexes are trimmed to their entries.
func (s *Segment) seal() error {
	// Bytes past the committed size are left by an append that failed after
	// writing (an index write failed): drop them, as Kafka trims the log on
	// roll and close, or recovery would take them for data and cut the log
	// where the next segment's offsets begin.
	st, err := s.log.Stat()
	if err != nil {
		return fmt.Errorf("segment: stat %s: %w", s.Path(LogSuffix), err)
	}
	// A preallocated segment's zero-filled reserve goes the same way.
	s.unmap()
	if size := s.size.Load(); st.Size() > size {
		if err := s.log.Truncate(size); err != nil {
			return fmt.Errorf("segment: trim %s: %w", s.Path(LogSuffix), err)
		}
	}
	s.allocated, s.zeroed = 0, 0
	if ts := s.maxTs.Load(); ts >= 0 {
		if err := s.timeIdx.AppendFinal(ts, s.offsetOfMaxTs); err != nil {
			return fmt.Errorf("segment: %w", err)
		}
	}
	if err := s.offIdx.Trim(); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	if err := s.timeIdx.Trim(); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	s.indexesSynced.Store(false)
	return nil
}

// unseal makes a trimmed segment writable again (after truncation made it active).
func (s *Segment) unseal() error {
	if err := s.offIdx.Resize(s.o.SegmentIndexBytes); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	if err := s.timeIdx.Resize(s.o.SegmentIndexBytes); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	return nil
}

// renameAll renames every file of the segment from suffix+from to suffix+to
// (e.g. "" to ".deleted"). Missing index files are skipped.
func (s *Segment) renameAll(from, to string) error {
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		err := s.fs.Rename(s.Path(suf+from), s.Path(suf+to))
		if err != nil && !(suf != LogSuffix && errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("segment: rename %s: %w", s.Path(suf+from), err)
		}
	}
	return nil
}

// removeAll removes every file of the segment with the given extra suffix.
func (s *Segment) removeAll(extra string) error {
	var first error
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		if err := s.fs.Remove(s.Path(suf + extra)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = fmt.Errorf("segment: remove %s: %w", s.Path(suf+extra), err)
		}
	}
	return first
}
