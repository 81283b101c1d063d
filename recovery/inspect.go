package recovery

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/stratalog/strata/segment"
)

// Inspect does what OpenDataDir would, read-only: it takes no lock and changes no
// file (the clean-shutdown marker stays, nothing is truncated, rebuilt, removed
// or renamed), and reports what opening would do. Files are opened read-only.
func Inspect(dir string, opts *Options) (*Report, error) {
	t0 := time.Now()
	o := opts.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Dir: dir, DryRun: true}
	st, err := o.FS.Stat(dir)
	if err != nil {
		return rep, fmt.Errorf("recovery: %w", err)
	}
	if !st.IsDir() {
		return rep, fmt.Errorf("%w: %s", ErrNotDataDir, dir)
	}
	if _, err := o.FS.Stat(filepath.Join(dir, CleanShutdownFile)); err == nil {
		rep.CleanShutdown = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("recovery: %w", err)
	}
	rps, lsos, full := readCheckpoints(o, dir, rep)
	trusted := rep.CleanShutdown && !full
	rep.FullScan = full
	parts, err := listPartitions(o.FS, dir)
	if err != nil {
		return rep, err
	}
	rep.Partitions = make([]PartitionReport, len(parts))
	err = forEach(len(parts), o.RecoveryThreads, func(i int) error {
		p := parts[i]
		pr := &rep.Partitions[i]
		*pr = PartitionReport{Topic: p.tp.Topic, Partition: p.tp.Partition, Dir: p.dir,
			RecoveryPoint: rps[p.tp], LogStartOffset: lsos[p.tp]}
		so := o.segmentOptions(p.tp.Topic)
		so.RecoveryPoint, so.LogStartOffset, so.CleanShutdown = rps[p.tp], lsos[p.tp], trusted
		pr.Duration = 0
		lr, err := InspectPartition(p.dir, &so)
		if lr != nil {
			partitionReport(pr, lr)
			pr.Duration = lr.Duration
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPartitionLoad, p.tp, err)
		}
		if !trusted {
			trimmed, err := trimSideFiles(o.FS, p.dir, lr.LogEndOffset, false)
			pr.SideFilesTrimmed = append(pr.SideFilesTrimmed, trimmed...)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrPartitionLoad, p.tp, err)
			}
		}
		return nil
	})
	rep.sum()
	rep.Duration = time.Since(t0)
	return rep, err
}

// InspectPartition is segment.Inspect: the read-only load of one partition
// directory with the given options (recovery point, log start, clean shutdown).
func InspectPartition(dir string, opts *segment.Options) (*segment.LoadReport, error) {
	return segment.Inspect(dir, opts)
}
