package server

import (
	"math"

	"github.com/stratalog/strata/cleaner"
	"github.com/stratalog/strata/recovery"
)

// newCleaner builds the cleaner manager from the broker's log.cleaner.*
// settings: compaction threads and the retention checker
// (log.retention.check.interval.ms), which replaces a retention loop of the
// server's own. Values are Kafka's, zeros included (a backoff of 0 does not
// sleep between passes).
func newCleaner(cfg *Config, ts *topicStore) (*cleaner.Manager, error) {
	rate := cfg.CleanerIOMaxBytesPerSec
	if rate >= math.MaxFloat64 {
		rate = 0 // the cleaner's "unlimited"
	}
	return cleaner.NewManager(&cleaner.Config{
		Threads:                  cfg.CleanerThreads,
		DedupeBufferBytes:        cfg.CleanerDedupeBufferBytes,
		LoadFactor:               cfg.CleanerLoadFactor,
		IOMaxBytesPerSecond:      rate,
		BackoffMs:                cfg.CleanerBackoffMs,
		RetentionCheckIntervalMs: cfg.RetentionCheckMs,
		DisableCleaner:           !cfg.CleanerEnable,
		ExplicitZeros:            true,
		Logger:                   ts.log,
		FS:                       ts.fs,
	})
}

// cleanerLogConfig is the cleaner's config of a topic's effective config c
// (topicConfig): its cleanup.policy, min.cleanable.dirty.ratio,
// min/max.compaction.lag.ms, delete.retention.ms and segment.bytes (a
// cleaner.LogConfig takes zeros as Kafka's 0).
func cleanerLogConfig(c *Config) *cleaner.LogConfig {
	return &cleaner.LogConfig{
		CleanupPolicy:          c.CleanupPolicy,
		MinCleanableDirtyRatio: c.MinCleanableRatio,
		MinCompactionLagMs:     c.MinCompactionLagMs,
		MaxCompactionLagMs:     c.MaxCompactionLagMs,
		DeleteRetentionMs:      c.DeleteRetentionMs,
		SegmentBytes:           c.SegmentBytes,
	}
}

// registerCleaner hands a partition's log to the cleaner manager with the
// topic's effective config (replacing an earlier registration).
func (ts *topicStore) registerCleaner(t *topic, p *partition) {
	if ts.cleaner == nil {
		return
	}
	sl, ok := segmentLogOf(p.log)
	if !ok {
		return
	}
	tp := recovery.TopicPartition{Topic: p.topic, Partition: p.index}
	ts.cleaner.Unregister(tp)
	if err := ts.cleaner.Register(tp, sl, cleanerLogConfig(ts.effective(t))); err != nil {
		ts.log.Error("registering log with the cleaner", "topic", t.name, "partition", p.index, "error", err)
	}
}
