package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/internal/vfs"
)

// LoadReport says what opening a log found and did (or, from Inspect, would do).
type LoadReport struct {
	Dir             string `json:"dir"`
	Segments        int    `json:"segments"`
	SegmentsScanned int    `json:"segments_scanned"`
	BatchesScanned  int    `json:"batches_scanned"`
	BytesScanned    int64  `json:"bytes_scanned"`
	BytesTruncated  int64  `json:"bytes_truncated"`
	// BytesPreallocatedTrimmed is the zero-filled reserve cut from segments
	// written with Options.Preallocate after a crash: expected, not data loss.
	BytesPreallocatedTrimmed int64    `json:"bytes_preallocated_trimmed,omitempty"`
	SegmentsRemoved          int      `json:"segments_removed"`             // segments after a truncation point, deleted
	IndexesRebuilt           int      `json:"indexes_rebuilt"`              // segments below the recovery point whose indexes were bad or missing
	Truncations              []string `json:"-"`                            // each cut as text: file, position, reason
	Cuts                     []Cut    `json:"truncations,omitempty"`        // each cut, structured
	TempFilesRemoved         []string `json:"temp_files_removed,omitempty"` // .deleted / .cleaned / stray swap and index files
	SwapsCompleted           []string `json:"swaps_completed,omitempty"`
	TxnIndexesRebuilt        int      `json:"txn_indexes_rebuilt,omitempty"` // damaged .txnindex files rebuilt
	// SideFilesTrimmed lists each producer snapshot removed (above the log
	// end, or damaged; saved first through SaveCut, kind "snapshot") and
	// each .txnindex rewritten to agree with the log, naming the file and
	// what went.
	SideFilesTrimmed []string `json:"side_files_trimmed,omitempty"`
	// SnapshotsIgnored are the damaged producer snapshots ignored (and
	// removed); ProducerBatchesReplayed the batches read to rebuild the
	// producer state after the newest good one.
	SnapshotsIgnored        []string      `json:"snapshots_ignored,omitempty"`
	ProducerBatchesReplayed int           `json:"producer_batches_replayed,omitempty"`
	LogEndOffset            int64         `json:"log_end_offset"`
	Duration                time.Duration `json:"duration_ns"`
}

// Cut is one truncation made by recovery: the bytes of File from Position on
// were dropped. FirstOffset is the first offset lost (the segment's next offset
// after the cut); EndOffset is one past the last offset the dropped entries'
// headers claim (-1 when no header could be read), an upper bound given
// without checking CRCs. Removed says the whole segment went (Position 0): it
// came after a cut at or above the recovery point. BelowRecoveryPoint says the
// cut was in a segment below the recovery point (or any segment after a clean
// shutdown): only its tail went, the segments after it were kept.
type Cut struct {
	File               string `json:"file"`
	Position           int64  `json:"position"`
	FirstOffset        int64  `json:"first_offset"`
	EndOffset          int64  `json:"end_offset"`
	Bytes              int64  `json:"bytes"`
	Reason             string `json:"reason"`
	Removed            bool   `json:"removed,omitempty"`
	BelowRecoveryPoint bool   `json:"below_recovery_point,omitempty"`
}

// Open opens (creating if needed) the partition directory dir.
//
// Loading follows Kafka's LogLoader: leftover .deleted and .cleaned files are
// removed and .swap files finished or dropped. Segments below
// opts.RecoveryPoint (every segment, with opts.CleanShutdown) are trusted: their
// tails are walked and their indexes checked against the log, and a segment
// failing that is rebuilt from a scan, as Kafka rebuilds a segment whose index
// sanity check fails. If that scan finds a torn or garbage tail, only that
// segment's tail is cut (logged at ERROR with its offsets and bytes) and the
// segments after it are kept: the log then has a gap in its offsets, never a
// loss of data below the recovery point. From the segment holding the recovery
// point on (unflushed data after a crash), every entry is scanned (framing,
// magic, size, CRC, offset order), the indexes rebuilt and the .log cut at the
// first invalid entry, and the segments after that cut are removed, Kafka's
// rule. opts.SaveCut, when set, is given every byte before it is cut.
func Open(dir string, opts *Options) (*Log, error) {
	l, _, err := OpenWithReport(dir, opts)
	return l, err
}

// OpenWithReport is Open returning what loading did.
func OpenWithReport(dir string, opts *Options) (*Log, *LoadReport, error) {
	t0 := time.Now()
	o := opts.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	rep := &LoadReport{Dir: dir}
	l := &Log{dir: dir, o: o, fs: o.FS, health: o.Health}
	if l.health == nil {
		l.health = NewHealth(nil)
	} else if err := l.health.Err(); err != nil {
		return nil, nil, err
	}
	if _, err := o.FS.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A new partition directory; its entry is made durable in the parent
		// with its first segment, below.
		if err := o.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, rep, fmt.Errorf("segment: create %s: %w", dir, err)
		}
	} else if err != nil {
		return nil, rep, fmt.Errorf("segment: %w", err)
	}
	plan, err := planFiles(o.FS, dir, rep)
	if err != nil {
		return nil, rep, err
	}
	if err := plan.apply(o.FS, dir); err != nil {
		return nil, rep, err
	}
	segs := make([]*Segment, 0, len(plan.bases))
	fail := func(err error) (*Log, *LoadReport, error) {
		for _, s := range segs {
			s.closeFiles()
		}
		return nil, rep, err
	}
	for _, b := range plan.bases {
		s, err := openSegment(l.fs, dir, b, o, true)
		if err != nil && index.IsCorruption(err) {
			// An index file that cannot even be opened (length not a multiple of
			// its entry size): start it afresh and rebuild it from the log.
			o.Logger.Warn("replacing unreadable index", "dir", dir, "base", b, "err", err)
			for _, suf := range []string{IndexSuffix, TimeIndexSuffix} {
				if rerr := l.fs.Remove(FilePath(dir, b, suf)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
					return fail(fmt.Errorf("segment: remove %s: %w", FilePath(dir, b, suf), rerr))
				}
			}
			plan.missingIndex[b] = indexReason(dir, b, true, true, "unreadable, replaced")
			s, err = openSegment(l.fs, dir, b, o, true)
		}
		if err != nil {
			return fail(err)
		}
		segs = append(segs, s)
	}
	kept, err := loadSegments(segs, o, rep, plan.missingIndex, true)
	if err != nil {
		return fail(err)
	}
	segs = segs[:kept]
	if len(segs) > 0 && o.LogStartOffset > segs[len(segs)-1].next.Load() {
		// The files end below the checkpointed log start (removed by hand): start
		// over there, as Kafka does.
		for _, s := range segs {
			s.closeFiles()
			if err := s.removeAll(""); err != nil {
				return fail(err)
			}
			rep.SegmentsRemoved++
		}
		segs = segs[:0]
	}
	created := false
	if len(segs) == 0 {
		s, err := createSegment(l.fs, dir, o.LogStartOffset, o)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, s)
		created = true
	}
	if created || !o.CleanShutdown {
		// The directory's entries and its own entry in the parent are made
		// durable for a new log, and after an unclean shutdown, which may
		// have been an earlier Open that failed before its syncs.
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := l.fs.SyncDir(d); err != nil {
				return fail(fmt.Errorf("segment: sync dir %s: %w", d, err))
			}
		}
	}
	if err := segs[len(segs)-1].unseal(); err != nil {
		return fail(err)
	}
	l.publish(segs)
	end := segs[len(segs)-1].next.Load()
	l.next.Store(end)
	l.hw.Store(end)
	start := segs[0].base
	if o.LogStartOffset > start {
		start = o.LogStartOffset
	}
	l.start.Store(start)
	flushed := end
	if !o.CleanShutdown && o.RecoveryPoint < end {
		flushed = o.RecoveryPoint
	}
	l.flushed.Store(flushed)
	l.firstUnstable.Store(-1)
	if err := l.loadProducers(rep, false); err != nil {
		return fail(err)
	}
	l.lastFlushMs.Store(o.Now())
	l.flushMs.Store(o.FlushMs)
	if o.FlushMs != Never {
		l.startFlusher()
	}
	rep.Segments = len(segs)
	rep.LogEndOffset = end
	rep.Duration = time.Since(t0)
	return l, rep, nil
}

// loadSegments applies Kafka's load rules to the opened segments, oldest first:
// segments below the recovery point (all of them after a clean shutdown) are
// trusted, their tails walked and their indexes checked; one that fails is
// rebuilt by a scan, which cuts only its own torn tail. From the segment
// holding the recovery point on, every entry is scanned and the log cut at the
// first invalid one, and the segments after that cut are dropped. It returns
// how many segments remain. With writable false nothing is changed on disk:
// the report says what would be done.
func loadSegments(segs []*Segment, o *Options, rep *LoadReport, missingIndex map[int64]string, writable bool) (int, error) {
	first := 0
	if !o.CleanShutdown {
		first = locate(segs, o.RecoveryPoint)
	}
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		limit := int64(math.MaxInt64)
		if i+1 < len(segs) {
			limit = segs[i+1].base
		}
		trusted := i < first || o.CleanShutdown
		if trusted {
			var err error
			if why := missingIndex[s.base]; why != "" {
				err = fmt.Errorf("%w: %s", errIndexMismatch, why)
			} else if err = s.loadTail(); err == nil {
				err = s.checkIndexes()
			}
			if err == nil && s.next.Load() > limit {
				err = fmt.Errorf("%w: %s: offsets up to %d reach the next segment's base %d",
					errIndexMismatch, s.Path(LogSuffix), s.next.Load()-1, limit)
			}
			if err == nil {
				continue
			}
			if !isRecoverable(err) {
				return 0, err
			}
			o.Logger.Warn("rebuilding segment indexes", "dir", s.dir, "base", s.base, "reason", err)
			rep.IndexesRebuilt++
		}
		res, err := s.recoverBelow(writable, limit)
		if err != nil {
			return 0, err
		}
		rep.SegmentsScanned++
		rep.BatchesScanned += res.Batches
		rep.BytesScanned += res.ValidBytes + res.TruncatedBytes
		if res.PreallocatedBytes > 0 {
			rep.BytesPreallocatedTrimmed += res.PreallocatedBytes
			o.Logger.Info("trimmed preallocated segment tail", "file", s.Path(LogSuffix), "position", res.ValidBytes,
				"bytes", res.PreallocatedBytes)
		}
		if res.TruncatedBytes == 0 {
			continue
		}
		rep.BytesTruncated += res.TruncatedBytes
		rep.Truncations = append(rep.Truncations, fmt.Sprintf("%s: cut at byte %d, %d bytes dropped: %v",
			s.Path(LogSuffix), res.ValidBytes, res.TruncatedBytes, res.Err))
		rep.Cuts = append(rep.Cuts, Cut{File: s.Path(LogSuffix), Position: res.ValidBytes, FirstOffset: s.next.Load(),
			EndOffset: res.DroppedEnd, Bytes: res.TruncatedBytes, Reason: errString(res.Err), BelowRecoveryPoint: trusted})
		if trusted {
			// Below the recovery point: Kafka rebuilds the segment and keeps
			// the ones after it, so must we. Data was lost where a flushed
			// segment was damaged: say exactly what.
			next := any("none")
			if i+1 < len(segs) {
				next = segs[i+1].base
			}
			o.Logger.Error("cut the damaged tail of a segment below the recovery point; the segments after it are kept, leaving a gap in the offsets",
				"file", s.Path(LogSuffix), "position", res.ValidBytes, "bytes", res.TruncatedBytes,
				"first_offset_lost", s.next.Load(), "end_offset_claimed", res.DroppedEnd, "next_segment_base", next,
				"saved_to", res.SavedTo, "err", res.Err)
			continue
		}
		o.Logger.Warn("truncated corrupt segment tail", "file", s.Path(LogSuffix), "position", res.ValidBytes,
			"bytes", res.TruncatedBytes, "first_offset_lost", s.next.Load(), "saved_to", res.SavedTo, "err", res.Err)
		for _, later := range segs[i+1:] {
			c := Cut{File: later.Path(LogSuffix), Position: 0, FirstOffset: later.base,
				EndOffset: headerEnd(later.log, 0, later.Size()), Bytes: later.Size(), Reason: "segment after a cut", Removed: true}
			rep.BytesTruncated += c.Bytes
			rep.Truncations = append(rep.Truncations, fmt.Sprintf("%s: removed, %d bytes, after the cut in %s",
				c.File, c.Bytes, s.Path(LogSuffix)))
			rep.Cuts = append(rep.Cuts, c)
			if writable {
				saved, err := later.saveWhole(o)
				if err != nil {
					return 0, err
				}
				o.Logger.Warn("removed segment after a cut", "file", c.File, "bytes", c.Bytes, "first_offset", c.FirstOffset,
					"end_offset_claimed", c.EndOffset, "saved_to", saved)
				later.closeFiles()
				if err := later.removeAll(""); err != nil {
					return 0, err
				}
			}
			rep.SegmentsRemoved++
		}
		return i + 1, nil
	}
	return len(segs), nil
}

// saveWhole hands every file of a segment about to be removed to
// o.SaveCut, and returns where the .log went.
func (s *Segment) saveWhole(o *Options) (string, error) {
	if o.SaveCut == nil {
		return "", nil
	}
	var logSaved string
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		path := s.Path(suf)
		st, err := s.fs.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("segment: %w", err)
		}
		kind := "index"
		if suf == LogSuffix {
			kind = "segment"
		}
		saved, err := o.SaveCut(path, 0, st.Size(), kind)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrSaveCut, path, err)
		}
		if suf == LogSuffix {
			logSaved = saved
		}
	}
	return logSaved, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// headerEnd walks entry headers of f in [pos, size) without checking CRCs and
// returns one past the largest last offset they claim, or -1 when none reads.
func headerEnd(f vfs.File, pos, size int64) int64 {
	r := headerReaders.Get().(*headerReader)
	defer headerReaders.Put(r)
	r.fileSize, r.n, r.start = size, 0, 0
	end := int64(-1)
	for pos < size {
		h, err := r.header(f, pos)
		if err != nil {
			break
		}
		end = max(end, h.LastOffset+1)
		pos += h.TotalSize()
	}
	return end
}

// isRecoverable tells corruption (rebuild from the log) from I/O failure.
func isRecoverable(err error) bool {
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) && (isCorruption(err) || errors.Is(err, errIndexMismatch))
}

// filePlan is what loading does to a partition directory's files before it opens
// the segments: temporary leftovers to remove, swaps to finish, and the segments
// that result.
type filePlan struct {
	remove       []string          // file names to remove, in order
	orphans      []string          // index files without a log, removed after the renames
	renames      [][2]string       // swap file name -> final name, after the removals
	bases        []int64           // segment base offsets after the plan, sorted
	current      map[string]string // final name -> name now (differs for swaps)
	swapped      bool
	missingIndex map[int64]string // segments whose offset or time index file is missing: which (indexReason)
}

// planFiles lists the directory and decides, as Kafka's loader does, which
// leftovers go and which swaps are finished; it changes nothing. Removals and
// swaps are recorded in rep.
func planFiles(fsys vfs.FS, dir string, rep *LoadReport) (*filePlan, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("segment: list %s: %w", dir, err)
	}
	p := &filePlan{current: map[string]string{}, missingIndex: map[int64]string{}}
	var files []dirFile
	minCleaned := int64(1<<63 - 1)
	for _, n := range names {
		b, suf, ok := ParseFileName(n)
		if !ok {
			continue
		}
		files = append(files, dirFile{b, suf, n})
		if hasTemp(suf, CleanedSuffix) && b < minCleaned {
			minCleaned = b
		}
	}
	remove := func(f dirFile, why string) {
		p.remove = append(p.remove, f.name)
		rep.TempFilesRemoved = append(rep.TempFilesRemoved, f.name+" ("+why+")")
	}
	var kept []dirFile
	swapBases := map[int64]bool{}
	for _, f := range files {
		switch {
		case hasTemp(f.suffix, DeletedSuffix):
			remove(f, "pending deletion")
		case hasTemp(f.suffix, CleanedSuffix):
			remove(f, "unfinished cleaning output")
		case hasTemp(f.suffix, SwapSuffix) && f.base >= minCleaned:
			remove(f, "swap of an unfinished operation")
		default:
			if hasTemp(f.suffix, SwapSuffix) && baseSuffix(f.suffix) == LogSuffix {
				swapBases[f.base] = true
			}
			kept = append(kept, f)
		}
	}
	if len(swapBases) > 0 {
		// Roll the swaps forward (Kafka's LogLoader, steps 2-3): the old files in
		// the swapped offset range go and the .swap suffixes are dropped.
		minBase, maxNext := int64(1<<63-1), int64(-1)
		for b := range swapBases {
			next, err := nextOffsetOf(fsys, FilePath(dir, b, LogSuffix+SwapSuffix), b)
			if err != nil {
				return nil, err
			}
			minBase = min(minBase, b)
			maxNext = max(maxNext, next)
		}
		var out []dirFile
		for _, f := range kept {
			// A producer snapshot is no segment file: it describes the
			// producers as of its offset, whatever the cleaner rewrote.
			if !hasTemp(f.suffix, SwapSuffix) && f.suffix != SnapshotSuffix && f.base >= minBase && f.base < maxNext {
				p.remove = append(p.remove, f.name)
				rep.TempFilesRemoved = append(rep.TempFilesRemoved, f.name+" (replaced by a swap)")
				continue
			}
			out = append(out, f)
		}
		for i, f := range out {
			if !hasTemp(f.suffix, SwapSuffix) {
				continue
			}
			final := f.name[:len(f.name)-len(SwapSuffix)]
			p.renames = append(p.renames, [2]string{f.name, final})
			rep.SwapsCompleted = append(rep.SwapsCompleted, f.name)
			out[i] = dirFile{f.base, f.suffix[:len(f.suffix)-len(SwapSuffix)], final}
			p.current[final] = f.name
		}
		kept = out
		p.swapped = true
	}
	logs := map[int64]bool{}
	present := map[string]bool{}
	for _, f := range kept {
		present[f.name] = true
		if f.suffix == LogSuffix {
			logs[f.base] = true
		}
	}
	for _, f := range kept {
		switch f.suffix {
		case LogSuffix:
			p.bases = append(p.bases, f.base)
			ix, tix := present[FileName(f.base, IndexSuffix)], present[FileName(f.base, TimeIndexSuffix)]
			if !ix || !tix {
				p.missingIndex[f.base] = indexReason(dir, f.base, !ix, !tix, "missing")
			}
		case IndexSuffix, TimeIndexSuffix, TxnIndexSuffix:
			if !logs[f.base] {
				p.orphans = append(p.orphans, f.name)
				rep.TempFilesRemoved = append(rep.TempFilesRemoved, f.name+" (index without a log)")
			}
		}
	}
	sort.Slice(p.bases, func(i, j int) bool { return p.bases[i] < p.bases[j] })
	return p, nil
}

// apply carries the plan out: removals, then swap renames, then orphan indexes,
// then a directory sync when swaps were finished.
func (p *filePlan) apply(fsys vfs.FS, dir string) error {
	for _, n := range p.remove {
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("segment: remove %s: %w", n, err)
		}
	}
	for _, r := range p.renames {
		if err := fsys.Rename(filepath.Join(dir, r[0]), filepath.Join(dir, r[1])); err != nil {
			return fmt.Errorf("segment: finish swap %s: %w", r[0], err)
		}
	}
	for _, n := range p.orphans {
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("segment: remove %s: %w", n, err)
		}
	}
	if p.swapped {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("segment: sync dir %s: %w", dir, err)
		}
	}
	return nil
}

// path returns where the file that will be called final is now.
func (p *filePlan) path(dir, final string) string {
	if n, ok := p.current[final]; ok {
		return filepath.Join(dir, n)
	}
	return filepath.Join(dir, final)
}

func hasTemp(suffix, temp string) bool {
	return len(suffix) > len(temp) && suffix[len(suffix)-len(temp):] == temp
}

// dirFile is a segment file found in the directory.
type dirFile struct {
	base   int64
	suffix string
	name   string
}

// nextOffsetOf walks the entry headers of a .log file (no CRC check) and returns
// one past its last offset, stopping at the first framing problem.
func nextOffsetOf(fsys vfs.FS, path string, base int64) (int64, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, fmt.Errorf("segment: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("segment: stat %s: %w", path, err)
	}
	r := headerReaders.Get().(*headerReader)
	defer headerReaders.Put(r)
	r.fileSize, r.n = st.Size(), 0
	next := base
	for pos := int64(0); ; {
		h, err := r.header(f, pos)
		if err != nil {
			if err == io.EOF || isCorruption(err) {
				return next, nil
			}
			return 0, err
		}
		next = max(next, h.LastOffset+1)
		pos += h.TotalSize()
	}
}

// indexReason names the index files of segment base (the offset index, the
// time index or both) with what is wrong with them.
func indexReason(dir string, base int64, offset, time bool, what string) string {
	var names []string
	if offset {
		names = append(names, FilePath(dir, base, IndexSuffix))
	}
	if time {
		names = append(names, FilePath(dir, base, TimeIndexSuffix))
	}
	return strings.Join(names, ", ") + ": " + what
}
