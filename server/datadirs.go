package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// openDataDirs opens every log dir with recovery.OpenDataDir (lock, clean-
// shutdown marker, checkpoints, parallel recovery) and logs each report.
// optsFor gives a topic's segment options from the topic table.
func (ts *topicStore) openDataDirs(optsFor func(topic string) *segment.Options) error {
	for _, dir := range ts.cfg.LogDirs {
		dd, rep, err := recovery.OpenDataDir(dir, &recovery.Options{
			RecoveryThreads: ts.cfg.RecoveryThreads,
			OptionsFor:      optsFor,
			Logger:          ts.log,
			BrokerEpoch:     -1,
		})
		if err != nil {
			ts.closeDataDirs()
			if errors.Is(err, recovery.ErrLocked) {
				return fmt.Errorf("%w: log dir %s is in use by another broker or tool: %w", ErrDataDir, dir, err)
			}
			return fmt.Errorf("%w: recover %s: %w", ErrDataDir, dir, err)
		}
		ts.dataDirs = append(ts.dataDirs, dd)
		ts.logReport(rep)
	}
	return nil
}

// logReport logs what recovery did in one log dir.
func (ts *topicStore) logReport(rep *recovery.Report) {
	for _, p := range rep.Partitions {
		if p.SegmentsScanned == 0 && p.BytesTruncated == 0 && p.BytesPreallocatedTrimmed == 0 && p.SegmentsRemoved == 0 && p.IndexesRebuilt == 0 &&
			len(p.TempFilesRemoved) == 0 && len(p.SwapsCompleted) == 0 && len(p.SideFilesTrimmed) == 0 {
			continue
		}
		ts.log.Info("partition recovered", "dir", rep.Dir, "topic", p.Topic, "partition", p.Partition,
			"recovery_point", p.RecoveryPoint, "log_end_offset", p.LogEndOffset,
			"segments_scanned", p.SegmentsScanned, "batches_scanned", p.BatchesScanned,
			"bytes_truncated", p.BytesTruncated, "bytes_preallocated_trimmed", p.BytesPreallocatedTrimmed,
			"segments_removed", p.SegmentsRemoved,
			"indexes_rebuilt", p.IndexesRebuilt, "truncations", len(p.Truncations),
			"temp_files_removed", len(p.TempFilesRemoved), "swaps_completed", len(p.SwapsCompleted),
			"side_files_trimmed", len(p.SideFilesTrimmed))
	}
	t := rep.Totals
	for _, e := range rep.CheckpointErrors {
		ts.log.Warn("checkpoint unreadable, partitions scanned in full", "dir", rep.Dir, "file", e)
	}
	ts.log.Info("log dir loaded", "dir", rep.Dir, "clean_shutdown", rep.CleanShutdown,
		"partitions", t.Partitions, "segments_scanned", t.SegmentsScanned, "batches_scanned", t.BatchesScanned,
		"bytes_scanned", t.BytesScanned, "bytes_truncated", t.BytesTruncated, "segments_removed", t.SegmentsRemoved,
		"indexes_rebuilt", t.IndexesRebuilt, "truncations", t.Truncations, "duration", rep.Duration)
	ts.reports = append(ts.reports, rep)
}

// recoveredLog returns the log recovery loaded for tp, if any.
func (ts *topicStore) recoveredLog(tp recovery.TopicPartition) (*segment.Log, *recovery.DataDir) {
	for _, dd := range ts.dataDirs {
		if l := dd.Log(tp); l != nil {
			return l, dd
		}
	}
	return nil, nil
}

// dataDirOf returns the DataDir of a log dir (as configured in log.dirs).
func (ts *topicStore) dataDirOf(dir string) *recovery.DataDir {
	for i, d := range ts.cfg.LogDirs {
		if d == dir && i < len(ts.dataDirs) {
			return ts.dataDirs[i]
		}
	}
	for _, dd := range ts.dataDirs {
		if filepath.Clean(dd.Dir()) == filepath.Clean(dir) {
			return dd
		}
	}
	return ts.dataDirs[0]
}

// writeCheckpoints writes every log dir's checkpoints (the periodic
// log.flush.offset.checkpoint.interval.ms job).
func (ts *topicStore) writeCheckpoints() {
	for _, dd := range ts.dataDirs {
		if err := dd.WriteCheckpoints(); err != nil && !errors.Is(err, recovery.ErrClosed) {
			ts.log.Error("writing checkpoints", "dir", dd.Dir(), "error", err)
		}
	}
}

// closeDataDirs closes every DataDir: flush, close the logs, checkpoints,
// clean-shutdown marker, unlock.
func (ts *topicStore) closeDataDirs() error {
	var errs []error
	for _, dd := range ts.dataDirs {
		if err := dd.Close(); err != nil && !errors.Is(err, recovery.ErrClosed) {
			errs = append(errs, fmt.Errorf("close %s: %w", dd.Dir(), err))
		}
	}
	ts.dataDirs = nil
	return errors.Join(errs...)
}

// checkpointLoop writes checkpoints periodically until shutdown.
func (s *Server) checkpointLoop() {
	defer s.bgWG.Done()
	t := time.NewTicker(time.Duration(s.cfg.CheckpointIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.topics.writeCheckpoints()
		}
	}
}
