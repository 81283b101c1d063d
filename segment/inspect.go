package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/internal/vfs"
)

// Inspect performs the checks Open would on the partition directory dir and
// reports what loading would truncate, rebuild, remove and rename, without
// changing anything: files are opened read-only, indexes are only validated
// (never rebuilt), leftovers and swaps are listed but not touched. The report's
// LogEndOffset is the log end Open would find.
//
// Segments whose .swap would be rolled forward are read from the .swap files.
func Inspect(dir string, opts *Options) (*LoadReport, error) {
	t0 := time.Now()
	o := opts.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rep := &LoadReport{Dir: dir}
	if _, err := o.FS.Stat(dir); err != nil {
		return rep, fmt.Errorf("segment: %w", err)
	}
	plan, err := planFiles(o.FS, dir, rep)
	if err != nil {
		return rep, err
	}
	segs := make([]*Segment, 0, len(plan.bases))
	defer func() {
		for _, s := range segs {
			s.closeFiles()
		}
	}()
	for _, b := range plan.bases {
		s, err := openSegmentReadOnly(o.FS, dir, b, o, plan)
		if err != nil {
			return rep, err
		}
		if s.offIdx == nil || s.timeIdx == nil {
			if plan.missingIndex[b] == "" {
				plan.missingIndex[b] = indexReason(dir, b, s.offIdx == nil, s.timeIdx == nil, "unreadable")
			}
			if err := s.emptyIndexes(); err != nil {
				s.closeFiles()
				return rep, err
			}
		}
		segs = append(segs, s)
	}
	kept, err := loadSegments(segs, o, rep, plan.missingIndex, false)
	if err != nil {
		return rep, err
	}
	rep.Segments = kept
	rep.LogEndOffset = o.LogStartOffset
	if kept > 0 {
		if end := segs[kept-1].next.Load(); end >= o.LogStartOffset {
			rep.LogEndOffset = end
		} else {
			rep.SegmentsRemoved += kept
			rep.Segments = 0
		}
	}
	if rep.Segments == 0 {
		rep.Segments = 1 // Open creates an empty one
	}
	// The producer state's files, as Open would load them: the snapshots
	// and .txnindex files it would remove or rewrite are reported.
	l := &Log{fs: o.FS, dir: dir, o: o}
	l.next.Store(rep.LogEndOffset)
	l.firstUnstable.Store(-1)
	if kept > 0 && rep.LogEndOffset == segs[kept-1].next.Load() {
		l.publish(segs[:kept])
		err = l.loadProducers(rep, true)
	} else { // Open starts an empty log: only the snapshots above it go
		err = l.dropSnapshotsAbove(rep.LogEndOffset, rep, true)
	}
	if err != nil {
		return rep, err
	}
	rep.Duration = time.Since(t0)
	return rep, nil
}

// openSegmentReadOnly opens a segment's files read-only, from where the plan says
// they are now. A missing index leaves the field nil.
func openSegmentReadOnly(fsys vfs.FS, dir string, base int64, o *Options, plan *filePlan) (*Segment, error) {
	s := &Segment{fs: fsys, dir: dir, base: base, o: o}
	path := plan.path(dir, FileName(base, LogSuffix))
	lf, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("segment: open %s: %w", path, err)
	}
	s.log = lf
	st, err := lf.Stat()
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("segment: stat %s: %w", path, err)
	}
	ip := plan.path(dir, FileName(base, IndexSuffix))
	if oi, err := index.OpenOffsetIndex(fsys, ip, base, o.SegmentIndexBytes, false); err == nil {
		s.offIdx = oi
	} else if !errors.Is(err, fs.ErrNotExist) && !index.IsCorruption(err) {
		lf.Close()
		return nil, fmt.Errorf("segment: %w", err)
	}
	tp := plan.path(dir, FileName(base, TimeIndexSuffix))
	if ti, err := index.OpenTimeIndex(fsys, tp, base, o.SegmentIndexBytes, false); err == nil {
		s.timeIdx = ti
	} else if !errors.Is(err, fs.ErrNotExist) && !index.IsCorruption(err) {
		if s.offIdx != nil {
			s.offIdx.Close()
		}
		lf.Close()
		return nil, fmt.Errorf("segment: %w", err)
	}
	s.init(st.ModTime().UnixMilli())
	s.size.Store(st.Size())
	s.next.Store(base)
	return s, nil
}

// emptyIndexes stands in for missing (or unreadable) indexes of a read-only
// segment with empty in-memory ones, so the segment is closed uniformly; loading
// rebuilds such a segment anyway.
func (s *Segment) emptyIndexes() error {
	mem := vfs.NewMem()
	if s.offIdx == nil {
		oi, err := index.OpenOffsetIndex(mem, "/i", s.base, 12, true)
		if err != nil {
			return fmt.Errorf("segment: %w", err)
		}
		s.offIdx = oi
	}
	if s.timeIdx == nil {
		ti, err := index.OpenTimeIndex(mem, "/t", s.base, 12, true)
		if err != nil {
			return fmt.Errorf("segment: %w", err)
		}
		s.timeIdx = ti
	}
	return nil
}
