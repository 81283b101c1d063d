package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
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
			FS:              ts.fs,
			RecoveryThreads: ts.cfg.RecoveryThreads,
			OptionsFor:      optsFor,
			Logger:          ts.log,
			BrokerEpoch:     -1,
			OnOffline:       ts.dirs.offline,
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

// makeLogDir creates a missing log dir and makes its entry durable in the
// parent, as Kafka does (a topic table or checkpoint synced inside a log dir
// whose own entry a power loss takes away is lost with it).
func (ts *topicStore) makeLogDir(dir string) error {
	if _, err := ts.fs.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := ts.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return ts.fs.SyncDir(filepath.Dir(filepath.Clean(dir)))
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

// writeCheckpoints writes every online log dir's checkpoints (the periodic
// log.flush.offset.checkpoint.interval.ms job).
func (ts *topicStore) writeCheckpoints() {
	for _, dd := range ts.dataDirs {
		if dd.Offline() {
			continue // reported once when it went offline
		}
		if err := dd.WriteCheckpoints(); err != nil && !errors.Is(err, recovery.ErrClosed) && !errors.Is(err, segment.ErrOffline) {
			ts.log.Error("writing checkpoints", "dir", dd.Dir(), "error", err)
		}
	}
}

// closeDataDirs closes every DataDir: flush, close the logs, checkpoints,
// clean-shutdown marker, unlock. An offline one is closed without writing
// and reported in the error.
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

// Offline log dirs: the broker's side of Kafka's LogDirFailureChannel
// (KIP-112). recovery reports a data directory that went offline (an I/O
// error a log could not undo, or a failed checkpoint) to logDirFailures.offline,
// from the goroutine that hit the error and possibly under a log's locks: it
// only records the failure and queues it. The server's logDirFailureLoop,
// like Kafka's LogDirFailureHandler thread, then takes the directory's
// partitions out of the cleaner, tells Options.OnLogDirOffline (where the
// cluster layer will notify the controller), and when every log dir has
// failed, logs it and closes Server.AllLogDirsFailed, on which strata broker
// exits non-zero. The partitions of an offline dir answer produce, fetch and
// list-offsets with KAFKA_STORAGE_ERROR (partition.offlineErr).

// logDirFailure is one log dir that went offline.
type logDirFailure struct {
	dir string
	err error
}

// logDirFailures records the offline log dirs.
type logDirFailures struct {
	total  int
	events chan logDirFailure // one per dir at most: never blocks

	mu      sync.Mutex
	failed  map[string]error
	allDown chan struct{} // closed when every log dir has failed
}

func newLogDirFailures(total int) *logDirFailures {
	return &logDirFailures{total: total, events: make(chan logDirFailure, total),
		failed: map[string]error{}, allDown: make(chan struct{})}
}

// offline is recovery.Options.OnOffline: record and queue, nothing else.
func (f *logDirFailures) offline(dir string, err error) {
	f.mu.Lock()
	_, seen := f.failed[dir]
	if !seen {
		f.failed[dir] = err
	}
	f.mu.Unlock()
	if !seen {
		select {
		case f.events <- logDirFailure{dir, err}:
		default: // more dirs than configured (cannot happen): the map has it
		}
	}
}

// snapshot returns the offline dirs and their causes.
func (f *logDirFailures) snapshot() map[string]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]error, len(f.failed))
	for d, err := range f.failed {
		m[d] = err
	}
	return m
}

// logDirFailureLoop handles each log dir that goes offline, until shutdown.
func (s *Server) logDirFailureLoop() {
	defer s.bgWG.Done()
	f := s.topics.dirs
	for {
		select {
		case <-s.done:
			return
		case ev := <-f.events:
			s.handleLogDirFailure(ev)
		}
	}
}

// handleLogDirFailure takes an offline dir's partitions out of the cleaner,
// reports the dir, and signals when no log dir is left.
func (s *Server) handleLogDirFailure(ev logDirFailure) {
	var tps []recovery.TopicPartition
	for _, dd := range s.topics.dataDirs {
		if dd.Dir() == ev.dir {
			for tp := range dd.Logs() {
				tps = append(tps, tp)
			}
		}
	}
	if s.topics.cleaner != nil {
		for _, tp := range tps {
			s.topics.cleaner.Unregister(tp)
		}
	}
	failed := s.topics.dirs.snapshot()
	s.log.Error("log dir offline: its partitions answer KAFKA_STORAGE_ERROR until it is repaired and the broker restarted",
		"dir", ev.dir, "partitions", len(tps), "offline_dirs", len(failed), "log_dirs", len(s.cfg.LogDirs), "cause", ev.err)
	if s.onLogDirOffline != nil {
		s.onLogDirOffline(ev.dir, ev.err)
	}
	if s.cl != nil {
		s.cl.logDirOffline(ev.dir)
	}
	if len(failed) >= len(s.cfg.LogDirs) {
		s.log.Error("every log dir is offline: the broker cannot serve anything and stops", "log_dirs", s.cfg.LogDirs)
		f := s.topics.dirs
		f.mu.Lock()
		select {
		case <-f.allDown:
		default:
			close(f.allDown)
		}
		f.mu.Unlock()
	}
}

// OfflineLogDirs returns the log dirs that went offline, with the I/O error
// that took each down.
func (s *Server) OfflineLogDirs() map[string]error { return s.topics.dirs.snapshot() }

// AllLogDirsFailed is closed when every log dir has gone offline: nothing
// can be served any more, and the broker should stop (Kafka exits).
func (s *Server) AllLogDirsFailed() <-chan struct{} { return s.topics.dirs.allDown }

// offlineErr is the error of the log dir holding p when it is offline, else
// nil.
func (p *partition) offlineErr() error {
	if dd := p.dataDir(); dd != nil {
		return dd.Err()
	}
	if e, ok := p.log.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}
