package recovery

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// TopicPartition names a partition.
type TopicPartition = checkpoint.TopicPartition

// DataDir is an open data directory: the logs of its partitions.
type DataDir struct {
	dir    string
	o      *Options
	unlock func() error
	health *segment.Health // shared by every log of the directory (offline.go)

	mu     sync.Mutex // guards logs and closed; serializes checkpoint writes
	logs   map[TopicPartition]*segment.Log
	closed bool
}

// partition is one partition directory found in the data directory.
type partition struct {
	tp  TopicPartition
	dir string
}

// OpenDataDir opens the data directory dir as Kafka's LogManager does at start
// (see the package doc) and returns it with a report of what recovery did.
func OpenDataDir(dir string, opts *Options) (*DataDir, *Report, error) {
	t0 := time.Now()
	o := opts.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	rep := &Report{Dir: dir}
	if st, err := o.FS.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A new data directory: make its entry durable in the parent.
		if err := o.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, rep, fmt.Errorf("recovery: create %s: %w", dir, err)
		}
		if err := o.FS.SyncDir(filepath.Dir(dir)); err != nil {
			return nil, rep, fmt.Errorf("recovery: sync dir %s: %w", filepath.Dir(dir), err)
		}
	} else if err != nil {
		return nil, rep, fmt.Errorf("recovery: %w", err)
	} else if !st.IsDir() {
		return nil, rep, fmt.Errorf("%w: %s", ErrNotDataDir, dir)
	}
	d := &DataDir{dir: dir, o: o, logs: map[TopicPartition]*segment.Log{}, health: newHealth(dir, o)}
	if o.Lock != nil {
		unlock, err := o.Lock(dir)
		if err != nil {
			if errors.Is(err, vfs.ErrLocked) {
				return nil, rep, fmt.Errorf("%w (is a broker or another strata process using it?): %w", ErrLocked, err)
			}
			return nil, rep, fmt.Errorf("recovery: lock %s: %w", dir, err)
		}
		d.unlock = unlock
	}
	fail := func(err error) (*DataDir, *Report, error) {
		d.mu.Lock()
		for _, l := range d.logs {
			_ = l.Close()
		}
		d.mu.Unlock()
		if d.unlock != nil {
			_ = d.unlock()
		}
		rep.sum()
		return nil, rep, err
	}
	clean, err := takeMarker(o.FS, dir)
	if err != nil {
		return fail(err)
	}
	rep.CleanShutdown = clean
	rps, lsos, full := readCheckpoints(o, dir, rep)
	trusted := clean && !full // else every partition is scanned from its recovery point
	rep.FullScan = full
	parts, err := listPartitions(o.FS, dir)
	if err != nil {
		return fail(err)
	}
	rep.Partitions = make([]PartitionReport, len(parts))
	shared := sharedBackup(o)
	err = forEach(len(parts), o.RecoveryThreads, func(i int) error {
		p := parts[i]
		pr := &rep.Partitions[i]
		*pr = PartitionReport{Topic: p.tp.Topic, Partition: p.tp.Partition, Dir: p.dir,
			RecoveryPoint: rps[p.tp], LogStartOffset: lsos[p.tp]}
		t := time.Now()
		so := o.segmentOptions(p.tp.Topic)
		so.RecoveryPoint, so.LogStartOffset, so.CleanShutdown = rps[p.tp], lsos[p.tp], trusted
		so.Health = d.health
		var pb *partitionBackup
		if !o.NoBackup {
			pb = &partitionBackup{fs: o.FS, pdir: p.dir, now: t0, shared: shared}
			so.SaveCut = pb.save
		}
		l, lr, err := segment.OpenWithReport(p.dir, &so)
		if lr != nil {
			partitionReport(pr, lr)
		}
		if pb != nil {
			pr.BackupDir = pb.dir()
		}
		if errors.Is(err, segment.ErrSaveCut) {
			return fmt.Errorf("%w: %s: %w (nothing was cut: make room for the backup, or repair the directory offline with strata recover)",
				ErrPartitionLoad, p.tp, err)
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPartitionLoad, p.tp, err)
		}
		d.mu.Lock()
		d.logs[p.tp] = l
		d.mu.Unlock()
		if !trusted {
			trimmed, err := trimSideFiles(o.FS, p.dir, l.LogEndOffset(), true)
			pr.SideFilesTrimmed = append(pr.SideFilesTrimmed, trimmed...)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrPartitionLoad, p.tp, err)
			}
		}
		pr.Duration = time.Since(t)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	rep.sum()
	rep.Duration = time.Since(t0)
	o.Logger.Info("data directory loaded", "dir", dir, "partitions", len(parts), "clean_shutdown", clean,
		"bytes_scanned", rep.Totals.BytesScanned, "bytes_truncated", rep.Totals.BytesTruncated, "duration", rep.Duration)
	logBackups(o, rep)
	return d, rep, nil
}

// takeMarker reports whether the clean-shutdown marker exists and removes it
// durably, so that a crash from here on is an unclean shutdown.
func takeMarker(fsys vfs.FS, dir string) (bool, error) {
	path := filepath.Join(dir, CleanShutdownFile)
	if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("recovery: %w", err)
	}
	if err := fsys.Remove(path); err != nil {
		return false, fmt.Errorf("recovery: remove %s: %w", path, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return false, fmt.Errorf("recovery: sync dir %s: %w", dir, err)
	}
	return true, nil
}

// readCheckpoints reads the recovery-point and log-start-offset checkpoints. A
// missing one is empty. An unreadable one is logged, recorded in the report and
// treated as empty; for the recovery-point checkpoint full says so: every
// partition must then be scanned from its first segment, even after a clean
// shutdown (see the package doc).
func readCheckpoints(o *Options, dir string, rep *Report) (rps, lsos map[TopicPartition]int64, full bool) {
	read := func(name, consequence string) (map[TopicPartition]int64, bool) {
		path := filepath.Join(dir, name)
		m, err := checkpoint.ReadOffsets(o.FS, path)
		if errors.Is(err, fs.ErrNotExist) {
			return map[TopicPartition]int64{}, true
		}
		if err != nil {
			o.Logger.Error("unreadable checkpoint, treating it as empty: "+consequence, "file", path, "err", err)
			rep.CheckpointErrors = append(rep.CheckpointErrors, err.Error()) // names the file
			return map[TopicPartition]int64{}, false
		}
		return m, true
	}
	rps, ok := read(checkpoint.RecoveryPointFile, "every partition is scanned in full")
	lsos, _ = read(checkpoint.LogStartOffsetFile, "each log starts at its first segment")
	return rps, lsos, !ok
}

// listPartitions returns the live partition directories of dir, sorted.
func listPartitions(fsys vfs.FS, dir string) ([]partition, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("recovery: list %s: %w", dir, err)
	}
	var out []partition
	for _, n := range names {
		tp, ok := ParsePartitionDir(n)
		if !ok {
			continue
		}
		path := filepath.Join(dir, n)
		st, err := fsys.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("recovery: %w", err)
		}
		if !st.IsDir() {
			continue
		}
		out = append(out, partition{tp, path})
	}
	slices.SortFunc(out, func(a, b partition) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	return out, nil
}

// forEach runs f(0..n-1) on workers goroutines and returns the first error;
// after an error no new items start.
func forEach(n, workers int, f func(i int) error) error {
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// Dir is the data directory.
func (d *DataDir) Dir() string { return d.dir }

// Log returns the log of tp, or nil.
func (d *DataDir) Log(tp TopicPartition) *segment.Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs[tp]
}

// Logs returns a copy of the partition to log map.
func (d *DataDir) Logs() map[TopicPartition]*segment.Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[TopicPartition]*segment.Log, len(d.logs))
	for tp, l := range d.logs {
		m[tp] = l
	}
	return m
}

// AddLog registers a log created after opening (a new partition), so that
// checkpoints and shutdown cover it. Its directory must be PartitionDir(tp).
// Open it with Options.Health set to Health(); a log with a Health of its
// own is joined to the directory's (either failing fails both).
func (d *DataDir) AddLog(tp TopicPartition, l *segment.Log) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := d.health.Err(); err != nil {
		return err
	}
	d.health.Join(l.Health())
	d.logs[tp] = l
	return nil
}

// RemoveLog forgets tp's log (a deleted partition) and returns it, or nil;
// the caller closes it. Checkpoints and shutdown no longer cover it.
func (d *DataDir) RemoveLog(tp TopicPartition) *segment.Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.logs[tp]
	delete(d.logs, tp)
	return l
}

// PartitionDir is the directory of tp's log in this data directory.
func (d *DataDir) PartitionDir(tp TopicPartition) string {
	return filepath.Join(d.dir, tp.Topic+"-"+strconv.Itoa(int(tp.Partition)))
}

// WriteCheckpoints writes the recovery-point checkpoint (every log's flushed
// offset) and the log-start-offset checkpoint (logs whose start is above their
// first segment's base), durably. An offline directory gets none (its error
// is returned); a failed write takes it offline.
func (d *DataDir) WriteCheckpoints() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return d.writeCheckpoints()
}

func (d *DataDir) writeCheckpoints() error {
	if err := d.health.Err(); err != nil {
		return err
	}
	rps := make(map[TopicPartition]int64, len(d.logs))
	lsos := map[TopicPartition]int64{}
	for tp, l := range d.logs {
		rps[tp] = l.FlushedOffset()
		if segs := l.Segments(); len(segs) > 0 && l.LogStartOffset() > segs[0].Base() {
			lsos[tp] = l.LogStartOffset()
		}
	}
	if err := checkpoint.WriteOffsets(d.o.FS, filepath.Join(d.dir, checkpoint.RecoveryPointFile), rps); err != nil {
		return d.failCheckpoint(fmt.Errorf("recovery: write %s: %w", checkpoint.RecoveryPointFile, err))
	}
	if err := checkpoint.WriteOffsets(d.o.FS, filepath.Join(d.dir, checkpoint.LogStartOffsetFile), lsos); err != nil {
		return d.failCheckpoint(fmt.Errorf("recovery: write %s: %w", checkpoint.LogStartOffsetFile, err))
	}
	return nil
}

// Shutdown is Close.
func (d *DataDir) Shutdown() error { return d.Close() }

// Close shuts the data directory down cleanly: every log is flushed and closed,
// both checkpoints are written, then the clean-shutdown marker, and the lock is
// released. If any step fails the marker is not written (the next open scans).
// An offline directory's logs are closed without writing anything, neither
// checkpoints nor the marker are written, and its error is returned.
func (d *DataDir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	logs := make([]*segment.Log, 0, len(d.logs))
	for _, l := range d.logs {
		logs = append(logs, l)
	}
	errs := make([]error, len(logs))
	_ = forEach(len(logs), d.o.RecoveryThreads, func(i int) error {
		errs[i] = logs[i].Close()
		return nil
	})
	err := errors.Join(errs...)
	if herr := d.health.Err(); herr != nil {
		err = herr // offline: one error, not one per log
	}
	if err == nil {
		err = d.writeCheckpoints()
	}
	if err == nil {
		err = writeMarker(d.o.FS, d.dir, d.o.BrokerEpoch)
	}
	if d.unlock != nil {
		if uerr := d.unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("recovery: unlock %s: %w", d.dir, uerr)
		}
	}
	return err
}

// writeMarker durably writes the clean-shutdown marker.
func writeMarker(fsys vfs.FS, dir string, brokerEpoch int64) error {
	var data []byte
	if brokerEpoch >= 0 {
		data = fmt.Appendf(nil, `{"version":0,"brokerEpoch":%d}`, brokerEpoch)
	}
	if err := fsutil.WriteFileAtomic(fsys, filepath.Join(dir, CleanShutdownFile), data); err != nil {
		return fmt.Errorf("recovery: write %s: %w", CleanShutdownFile, err)
	}
	return nil
}
