package server

import (
	"fmt"
	"strconv"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// newCleaner builds the cleaner manager from the broker's log.cleaner.*
// settings: compaction threads and the retention checker
// (log.retention.check.interval.ms), which replaces a retention loop of the
// server's own.
func newCleaner(cfg *Config, ts *topicStore) (*cleaner.Manager, error) {
	return cleaner.NewManager(&cleaner.Config{
		Threads:                  cfg.CleanerThreads,
		DedupeBufferBytes:        cfg.CleanerDedupeBufferBytes,
		LoadFactor:               cfg.CleanerLoadFactor,
		IOMaxBytesPerSecond:      cfg.CleanerIOMaxBytesPerSec,
		BackoffMs:                cfg.CleanerBackoffMs,
		RetentionCheckIntervalMs: cfg.RetentionCheckMs,
		DisableCleaner:           !cfg.CleanerEnable,
		Logger:                   ts.log,
		FS:                       ts.fs,
	})
}

// cleanerLogConfig is a topic's effective cleaner config: its overrides over
// the broker defaults.
func (ts *topicStore) cleanerLogConfig(configs map[string]string) (*cleaner.LogConfig, error) {
	c := ts.cfg
	lc := &cleaner.LogConfig{
		CleanupPolicy:          c.CleanupPolicy,
		MinCleanableDirtyRatio: c.MinCleanableRatio,
		MinCompactionLagMs:     c.MinCompactionLagMs,
		MaxCompactionLagMs:     c.MaxCompactionLagMs,
		DeleteRetentionMs:      c.DeleteRetentionMs,
		SegmentBytes:           c.SegmentBytes,
	}
	for k, v := range configs {
		var err error
		switch k {
		case "cleanup.policy":
			_, err = parseCleanupPolicy(v)
			lc.CleanupPolicy = v
		case "min.cleanable.dirty.ratio":
			lc.MinCleanableDirtyRatio, err = strconv.ParseFloat(v, 64)
			if err == nil && (lc.MinCleanableDirtyRatio < 0 || lc.MinCleanableDirtyRatio > 1) {
				err = fmt.Errorf("out of [0,1]")
			}
		case "min.compaction.lag.ms":
			lc.MinCompactionLagMs, err = parseNonNegative(v)
		case "max.compaction.lag.ms":
			lc.MaxCompactionLagMs, err = parseNonNegative(v)
			if err == nil && lc.MaxCompactionLagMs < 1 {
				err = fmt.Errorf("must be at least 1")
			}
		case "delete.retention.ms":
			lc.DeleteRetentionMs, err = parseNonNegative(v)
		case "segment.bytes":
			lc.SegmentBytes, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %v", ErrConfig, k, v, err)
		}
	}
	if lc.MinCompactionLagMs > lc.MaxCompactionLagMs {
		return nil, fmt.Errorf("%w: min.compaction.lag.ms %d above max.compaction.lag.ms %d", ErrConfig, lc.MinCompactionLagMs, lc.MaxCompactionLagMs)
	}
	return lc, nil
}

func parseNonNegative(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil && n < 0 {
		err = fmt.Errorf("must not be negative")
	}
	return n, err
}

// registerCleaner hands a partition's log to the cleaner manager with the
// topic's effective config (replacing an earlier registration).
func (ts *topicStore) registerCleaner(t *topic, p *partition) {
	if ts.cleaner == nil {
		return
	}
	sl, ok := p.log.(*segment.Log)
	if !ok {
		return
	}
	lc, err := ts.cleanerLogConfig(t.configs)
	if err != nil { // checked when the configs were set
		ts.log.Error("cleaner config", "topic", t.name, "error", err)
		return
	}
	tp := recovery.TopicPartition{Topic: p.topic, Partition: p.index}
	ts.cleaner.Unregister(tp)
	if err := ts.cleaner.Register(tp, sl, lc); err != nil {
		ts.log.Error("registering log with the cleaner", "topic", t.name, "partition", p.index, "error", err)
	}
}
