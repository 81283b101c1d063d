package cleaner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/segment"
)

// Manager runs compaction and retention in the background over registered
// logs: log.cleaner.threads cleaner threads, each repeatedly cleaning the log
// with the highest dirty ratio, and one retention checker every
// log.retention.check.interval.ms. A failure while cleaning one partition
// marks it uncleanable (logged with the reason) and the threads go on with the
// others.
type Manager struct {
	cfg      Config
	throttle *Throttler

	mu     sync.Mutex
	logs   map[checkpoint.TopicPartition]*managed
	cks    map[string]map[checkpoint.TopicPartition]int64 // by log dir
	ckMu   sync.Mutex                                     // one checkpoint write at a time
	maps   chan *OffsetMap
	wake   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
	start  sync.Once
}

type managed struct {
	tp          checkpoint.TopicPartition
	l           *segment.Log
	cfg         LogConfig
	logDir      string
	inProgress  bool
	uncleanable string
	passes      int
	last        PassStats
}

// NewManager returns a stopped manager; Register logs, then Start.
func NewManager(cfg *Config) (*Manager, error) {
	c, err := cfg.ensureDefaults()
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:      c,
		throttle: NewThrottler(c.IOMaxBytesPerSecond),
		logs:     map[checkpoint.TopicPartition]*managed{},
		cks:      map[string]map[checkpoint.TopicPartition]int64{},
		maps:     make(chan *OffsetMap, c.Threads),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	return m, nil
}

// Register hands the manager a log and its effective topic config. The log's
// entry in cleaner-offset-checkpoint (in the log's parent directory) is read
// on first use of that directory.
func (m *Manager) Register(tp checkpoint.TopicPartition, l *segment.Log, cfg *LogConfig) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	logDir := filepath.Dir(filepath.Clean(l.Dir()))
	if _, ok := m.cks[logDir]; !ok {
		ck, err := checkpoint.ReadOffsets(m.cfg.FS, filepath.Join(logDir, checkpoint.CleanerOffsetFile))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.cfg.Logger.Warn("ignoring unreadable cleaner checkpoint", "dir", logDir, "err", err)
		}
		if ck == nil {
			ck = map[checkpoint.TopicPartition]int64{}
		}
		m.cks[logDir] = ck
	}
	m.logs[tp] = &managed{tp: tp, l: l, cfg: cfg.ensureDefaults(), logDir: logDir}
	m.poke()
	return nil
}

// Unregister forgets a log, waiting for a pass over it to finish.
func (m *Manager) Unregister(tp checkpoint.TopicPartition) {
	for {
		m.mu.Lock()
		e, ok := m.logs[tp]
		if !ok || !e.inProgress {
			delete(m.logs, tp)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// Uncleanable returns the partitions marked uncleanable, with the reason.
func (m *Manager) Uncleanable() map[checkpoint.TopicPartition]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[checkpoint.TopicPartition]string{}
	for tp, e := range m.logs {
		if e.uncleanable != "" {
			out[tp] = e.uncleanable
		}
	}
	return out
}

// FirstDirtyOffset returns the checkpointed first dirty offset of a log.
func (m *Manager) FirstDirtyOffset(tp checkpoint.TopicPartition) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.logs[tp]
	if !ok {
		return 0, false
	}
	v, ok := m.cks[e.logDir][tp]
	return v, ok
}

// Start launches the cleaner threads and the retention checker.
func (m *Manager) Start() {
	m.start.Do(func() {
		if !m.cfg.DisableCleaner {
			for i := 0; i < m.cfg.Threads; i++ {
				m.wg.Add(1)
				go m.cleanerThread()
			}
		}
		m.wg.Add(1)
		go m.retentionThread()
	})
}

// Close stops the threads, waiting for running passes to finish.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) cleanerThread() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		default:
		}
		if st, ok := m.CleanOnce(); ok && st.BytesIn > 0 {
			continue // more may be dirty; a failed or empty pass backs off
		}
		select {
		case <-m.stop:
			return
		case <-m.wake:
		case <-time.After(time.Duration(m.cfg.BackoffMs) * time.Millisecond):
		}
	}
}

func (m *Manager) retentionThread() {
	defer m.wg.Done()
	t := time.NewTicker(time.Duration(m.cfg.RetentionCheckIntervalMs) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.CheckRetention()
		}
	}
}

// CheckRetention applies retention (Log.ApplyRetention) to every registered
// log whose policy includes delete, and returns the segments deleted. Errors
// are logged per log.
func (m *Manager) CheckRetention() int {
	m.mu.Lock()
	var todo []*managed
	for _, e := range m.logs {
		if e.cfg.Delete() {
			todo = append(todo, e)
		}
	}
	m.mu.Unlock()
	total := 0
	for _, e := range todo {
		n, err := e.l.ApplyRetention()
		total += n
		if err != nil && !errors.Is(err, segment.ErrClosed) {
			m.cfg.Logger.Error("retention failed", "partition", e.tp.String(), "err", err)
		}
	}
	return total
}

// DirtyOf returns a registered log's dirty section now.
func (m *Manager) DirtyOf(tp checkpoint.TopicPartition) (Dirty, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.logs[tp]
	if !ok {
		return Dirty{}, false
	}
	return m.dirty(e, m.cfg.Now()), true
}

func (m *Manager) dirty(e *managed, now int64) Dirty {
	fd, ok := m.cks[e.logDir][e.tp]
	if !ok {
		fd = -1
	}
	return dirtySection(e.l, fd, now, e.cfg.MinCompactionLagMs, false)
}

// grab picks the filthiest eligible log and marks it in progress.
func (m *Manager) grab(now int64) (*managed, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *managed
	bestRatio := -1.0
	var bestDirty int64
	for _, e := range m.logs {
		if !e.cfg.Compact() || e.inProgress || e.uncleanable != "" {
			continue
		}
		d := m.dirty(e, now)
		if d.CleanableBytes == 0 {
			continue
		}
		r := d.Ratio()
		lagged := d.FirstDirtyTimestamp >= 0 && now-d.FirstDirtyTimestamp > e.cfg.MaxCompactionLagMs
		if r <= e.cfg.MinCleanableDirtyRatio && !lagged {
			continue
		}
		if lagged {
			r = 2 // overdue logs go first
		}
		if r > bestRatio {
			best, bestRatio, bestDirty = e, r, d.FirstDirty
		}
	}
	if best != nil {
		best.inProgress = true
	}
	return best, bestDirty
}

// CleanOnce runs one pass over the filthiest eligible log, if any, in the
// calling goroutine. ok is false when no log was eligible.
func (m *Manager) CleanOnce() (PassStats, bool) {
	now := m.cfg.Now()
	e, firstDirty := m.grab(now)
	if e == nil {
		return PassStats{}, false
	}
	om, err := m.offsetMap()
	if err != nil {
		m.finish(e, PassStats{}, err)
		return PassStats{}, true
	}
	defer func() {
		select {
		case m.maps <- om:
		default:
		}
	}()
	lo := e.l.Options()
	segBytes, idxBytes := e.cfg.SegmentBytes, int64(e.cfg.SegmentIndexBytes)
	if segBytes == 0 {
		segBytes = lo.SegmentBytes
	}
	if idxBytes == 0 {
		idxBytes = int64(lo.SegmentIndexBytes)
	}
	st, err := clean(e.l, om, firstDirty, passOptions{
		now:                now,
		deleteRetentionMs:  e.cfg.DeleteRetentionMs,
		minCompactionLagMs: e.cfg.MinCompactionLagMs,
		producerExpiryMs:   m.cfg.ProducerIDExpirationMs,
		segmentBytes:       segBytes,
		indexBytes:         idxBytes,
		throttle:           m.throttle,
		logger:             m.cfg.Logger,
	})
	m.finish(e, st, err)
	return st, true
}

func (m *Manager) offsetMap() (*OffsetMap, error) {
	select {
	case om := <-m.maps:
		return om, nil
	default:
	}
	share := min(m.cfg.DedupeBufferBytes/int64(m.cfg.Threads), MaxDedupePerThread)
	return NewOffsetMap(share, m.cfg.LoadFactor)
}

// finish records a pass's outcome: the checkpoint on success, uncleanable on
// failure (an aborted pass is retried later).
func (m *Manager) finish(e *managed, st PassStats, err error) {
	switch {
	case err == nil:
		m.mu.Lock()
		m.cks[e.logDir][e.tp] = st.EndOffset
		ck := make(map[checkpoint.TopicPartition]int64, len(m.cks[e.logDir]))
		for k, v := range m.cks[e.logDir] {
			ck[k] = v
		}
		e.passes++
		e.last = st
		m.mu.Unlock()
		m.ckMu.Lock()
		werr := checkpoint.WriteOffsets(m.cfg.FS, filepath.Join(e.logDir, checkpoint.CleanerOffsetFile), ck)
		m.ckMu.Unlock()
		if werr != nil {
			m.cfg.Logger.Error("writing cleaner checkpoint failed", "dir", e.logDir, "err", werr)
		}
		m.cfg.Logger.Info("cleaned log", "partition", e.tp.String(), "first_dirty", st.FirstDirtyOffset,
			"end", st.EndOffset, "keys", st.MapKeys, "bytes_in", st.BytesIn, "bytes_out", st.BytesOut,
			"records_in", st.RecordsIn, "records_out", st.RecordsOut, "partial", st.Partial)
	case errors.Is(err, ErrNothingToClean):
	case errors.Is(err, ErrAborted), errors.Is(err, segment.ErrClosed):
		m.cfg.Logger.Info("cleaning pass aborted", "partition", e.tp.String(), "reason", err)
	default:
		reason := fmt.Sprint(err)
		m.cfg.Logger.Error("marking partition uncleanable", "partition", e.tp.String(), "reason", reason)
		m.mu.Lock()
		e.uncleanable = reason
		m.mu.Unlock()
	}
	m.mu.Lock()
	e.inProgress = false
	m.mu.Unlock()
}
