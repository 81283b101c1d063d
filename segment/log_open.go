package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// LoadReport says what opening a log found and did.
type LoadReport struct {
	Dir              string
	Segments         int
	SegmentsScanned  int
	BytesScanned     int64
	BytesTruncated   int64
	SegmentsRemoved  int      // segments after a truncation point, deleted
	IndexesRebuilt   int      // indexes found bad below the recovery point
	Truncations      []string // each cut: file, position, reason
	TempFilesRemoved []string // .deleted / .cleaned / stray swap and index files
	SwapsCompleted   []string
	Duration         time.Duration
}

// Open opens (creating if needed) the partition directory dir.
//
// Loading follows Kafka's LogLoader: leftover .deleted and .cleaned files are
// removed and .swap files finished or dropped; then every segment from the one
// holding opts.RecoveryPoint on is scanned (framing, magic, size, CRC, offset
// order), its indexes rebuilt and its .log cut at the first invalid entry, and the
// segments after a cut are removed. Segments below the recovery point are trusted
// but their indexes are checked against the log and rebuilt when bad. With
// opts.CleanShutdown nothing is scanned.
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
	l := &Log{dir: dir, o: o, fs: o.FS}
	if _, err := o.FS.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A new partition directory: make its entry durable in the parent.
		if err := o.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, rep, fmt.Errorf("segment: create %s: %w", dir, err)
		}
		if err := o.FS.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, rep, fmt.Errorf("segment: sync dir %s: %w", filepath.Dir(dir), err)
		}
	} else if err != nil {
		return nil, rep, fmt.Errorf("segment: %w", err)
	}
	bases, err := l.prepareFiles(rep)
	if err != nil {
		return nil, rep, err
	}
	segs := make([]*Segment, 0, len(bases))
	fail := func(err error) (*Log, *LoadReport, error) {
		for _, s := range segs {
			s.closeFiles()
		}
		return nil, rep, err
	}
	for _, b := range bases {
		s, err := openSegment(l.fs, dir, b, o, true)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, s)
	}
	first := 0
	if !o.CleanShutdown {
		first = locate(segs, o.RecoveryPoint)
	}
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if i < first || o.CleanShutdown {
			err := s.loadTail()
			if err == nil {
				err = s.checkIndexes()
			}
			if err == nil {
				continue
			}
			if !isRecoverable(err) {
				return fail(err)
			}
			o.Logger.Warn("rebuilding segment indexes", "dir", dir, "base", s.base, "reason", err)
			rep.IndexesRebuilt++
		}
		res, err := s.recover(true)
		if err != nil {
			return fail(err)
		}
		rep.SegmentsScanned++
		rep.BytesScanned += res.ValidBytes + res.TruncatedBytes
		if res.TruncatedBytes == 0 {
			continue
		}
		rep.BytesTruncated += res.TruncatedBytes
		rep.Truncations = append(rep.Truncations, fmt.Sprintf("%s: cut at byte %d, %d bytes dropped: %v",
			s.Path(LogSuffix), res.ValidBytes, res.TruncatedBytes, res.Err))
		o.Logger.Warn("truncated corrupt segment tail", "file", s.Path(LogSuffix), "position", res.ValidBytes,
			"bytes", res.TruncatedBytes, "err", res.Err)
		for _, later := range segs[i+1:] {
			rep.BytesTruncated += later.Size()
			rep.Truncations = append(rep.Truncations, fmt.Sprintf("%s: removed, %d bytes, after the cut in %s",
				later.Path(LogSuffix), later.Size(), s.Path(LogSuffix)))
			later.closeFiles()
			if err := later.removeAll(""); err != nil {
				segs = segs[:i+1]
				return fail(err)
			}
			rep.SegmentsRemoved++
		}
		segs = segs[:i+1]
		break
	}
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
	if len(segs) == 0 {
		s, err := createSegment(l.fs, dir, o.LogStartOffset, o)
		if err != nil {
			return fail(err)
		}
		segs = append(segs, s)
		if err := l.fs.SyncDir(dir); err != nil {
			return fail(fmt.Errorf("segment: sync dir %s: %w", dir, err))
		}
	}
	if err := segs[len(segs)-1].unseal(); err != nil {
		return fail(err)
	}
	l.publish(segs)
	end := segs[len(segs)-1].next.Load()
	l.next.Store(end)
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
	l.lastFlushMs.Store(o.Now())
	if o.FlushMs != Never {
		l.stopFlusher = make(chan struct{})
		l.bg.Add(1)
		go l.runFlusher()
	}
	rep.Segments = len(segs)
	rep.Duration = time.Since(t0)
	return l, rep, nil
}

// isRecoverable tells corruption (rebuild from the log) from I/O failure.
func isRecoverable(err error) bool {
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) && (isCorruption(err) || errors.Is(err, errIndexMismatch))
}

// prepareFiles lists the directory, removes temporary leftovers and finishes or
// drops swaps as Kafka's loader does, and returns the segment base offsets.
func (l *Log) prepareFiles(rep *LoadReport) ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("segment: list %s: %w", l.dir, err)
	}
	var files []dirFile
	minCleaned := int64(1<<63 - 1)
	for _, n := range names {
		b, suf, ok := ParseFileName(n)
		if !ok {
			continue
		}
		files = append(files, dirFile{b, suf, n})
		if len(suf) > len(CleanedSuffix) && suf[len(suf)-len(CleanedSuffix):] == CleanedSuffix && b < minCleaned {
			minCleaned = b
		}
	}
	remove := func(f dirFile, why string) error {
		if err := l.fs.Remove(filepath.Join(l.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("segment: remove %s: %w", f.name, err)
		}
		rep.TempFilesRemoved = append(rep.TempFilesRemoved, f.name+" ("+why+")")
		return nil
	}
	var kept []dirFile
	swapBases := map[int64]bool{}
	for _, f := range files {
		switch {
		case hasTemp(f.suffix, DeletedSuffix):
			if err := remove(f, "pending deletion"); err != nil {
				return nil, err
			}
		case hasTemp(f.suffix, CleanedSuffix):
			if err := remove(f, "unfinished cleaning output"); err != nil {
				return nil, err
			}
		case hasTemp(f.suffix, SwapSuffix) && f.base >= minCleaned:
			if err := remove(f, "swap of an unfinished operation"); err != nil {
				return nil, err
			}
		default:
			if hasTemp(f.suffix, SwapSuffix) && baseSuffix(f.suffix) == LogSuffix {
				swapBases[f.base] = true
			}
			kept = append(kept, f)
		}
	}
	if len(swapBases) > 0 {
		var err error
		if kept, err = l.completeSwaps(kept, swapBases, rep); err != nil {
			return nil, err
		}
	}
	logs := map[int64]bool{}
	for _, f := range kept {
		if f.suffix == LogSuffix {
			logs[f.base] = true
		}
	}
	var bases []int64
	for _, f := range kept {
		switch f.suffix {
		case LogSuffix:
			bases = append(bases, f.base)
		case IndexSuffix, TimeIndexSuffix, TxnIndexSuffix:
			if !logs[f.base] {
				if err := remove(f, "index without a log"); err != nil {
					return nil, err
				}
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
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

// completeSwaps rolls forward swaps whose .cleaned files were all renamed: the
// old files in the swapped offset range are removed and the .swap suffixes
// dropped (Kafka's LogLoader, steps 2-3).
func (l *Log) completeSwaps(files []dirFile, swapBases map[int64]bool, rep *LoadReport) ([]dirFile, error) {
	minBase, maxNext := int64(1<<63-1), int64(-1)
	for b := range swapBases {
		name := FilePath(l.dir, b, LogSuffix+SwapSuffix)
		next, err := nextOffsetOf(l.fs, name, b)
		if err != nil {
			return nil, err
		}
		minBase = min(minBase, b)
		maxNext = max(maxNext, next)
	}
	var out []dirFile
	for _, f := range files {
		if !hasTemp(f.suffix, SwapSuffix) && f.base >= minBase && f.base < maxNext {
			if err := l.fs.Remove(filepath.Join(l.dir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("segment: remove replaced %s: %w", f.name, err)
			}
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
		if err := l.fs.Rename(filepath.Join(l.dir, f.name), filepath.Join(l.dir, final)); err != nil {
			return nil, fmt.Errorf("segment: finish swap %s: %w", f.name, err)
		}
		rep.SwapsCompleted = append(rep.SwapsCompleted, f.name)
		out[i] = dirFile{f.base, f.suffix[:len(f.suffix)-len(SwapSuffix)], final}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return nil, fmt.Errorf("segment: sync dir %s: %w", l.dir, err)
	}
	return out, nil
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
