package cleaner

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// Defaults, Kafka's.
const (
	DefaultThreads                  = 1
	DefaultDedupeBufferBytes        = 128 << 20
	DefaultLoadFactor               = 0.9
	DefaultBackoffMs                = 15000
	DefaultRetentionCheckIntervalMs = 300000
	DefaultMinCleanableDirtyRatio   = 0.5
	DefaultDeleteRetentionMs        = 24 * 3600 * 1000
	// MaxDedupePerThread caps one thread's share of the dedupe buffer (2 GiB).
	MaxDedupePerThread = 2 << 30
)

// Config configures a Manager with Kafka's broker settings. Zero values take
// the defaults (see ExplicitZeros); a nil *Config is all defaults.
type Config struct {
	// Threads is log.cleaner.threads.
	Threads int
	// DedupeBufferBytes is log.cleaner.dedupe.buffer.size, split across the
	// threads (each share capped at 2 GiB).
	DedupeBufferBytes int64
	// LoadFactor is log.cleaner.io.buffer.load.factor.
	LoadFactor float64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second (0: unlimited).
	IOMaxBytesPerSecond float64
	// BackoffMs is log.cleaner.backoff.ms: a thread's sleep when nothing is
	// cleanable.
	BackoffMs int64
	// RetentionCheckIntervalMs is log.retention.check.interval.ms.
	RetentionCheckIntervalMs int64
	// ProducerIDExpirationMs is producer.id.expiration.ms (default 1 day):
	// how long after its last batch a producer counts as active, its last
	// batch then kept (empty if need be) by compaction.
	ProducerIDExpirationMs int64
	// DisableCleaner turns compaction off (log.cleaner.enable=false); the
	// retention checker still runs.
	DisableCleaner bool
	// ExplicitZeros makes a zero BackoffMs mean Kafka's 0 (no sleep between
	// passes when nothing is cleanable) instead of the default. Callers
	// that fill in Kafka's defaults themselves (the broker) set it.
	ExplicitZeros bool
	// FS reads and writes cleaner-offset-checkpoint files (default vfs.OS; the
	// logs use their own).
	FS vfs.FS
	// Now returns the wall clock in ms (default time.Now).
	Now func() int64
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

func (c *Config) ensureDefaults() (Config, error) {
	var n Config
	if c != nil {
		n = *c
	}
	if n.Threads == 0 {
		n.Threads = DefaultThreads
	}
	if n.DedupeBufferBytes == 0 {
		n.DedupeBufferBytes = DefaultDedupeBufferBytes
	}
	if n.LoadFactor == 0 {
		n.LoadFactor = DefaultLoadFactor
	}
	if n.BackoffMs == 0 && !n.ExplicitZeros {
		n.BackoffMs = DefaultBackoffMs
	}
	if n.ProducerIDExpirationMs == 0 {
		n.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	if n.RetentionCheckIntervalMs == 0 {
		n.RetentionCheckIntervalMs = DefaultRetentionCheckIntervalMs
	}
	if n.FS == nil {
		n.FS = vfs.OS
	}
	if n.Now == nil {
		n.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if n.Logger == nil {
		n.Logger = slog.Default()
	}
	switch {
	case n.Threads < 1:
		return n, fmt.Errorf("%w: log.cleaner.threads %d", ErrInvalidConfig, n.Threads)
	case n.DedupeBufferBytes/int64(n.Threads) < SlotBytes:
		return n, fmt.Errorf("%w: log.cleaner.dedupe.buffer.size %d", ErrInvalidConfig, n.DedupeBufferBytes)
	case n.LoadFactor <= 0 || n.LoadFactor > 1:
		return n, fmt.Errorf("%w: load factor %g", ErrInvalidConfig, n.LoadFactor)
	case n.ProducerIDExpirationMs < 1:
		return n, fmt.Errorf("%w: producer.id.expiration.ms %d", ErrInvalidConfig, n.ProducerIDExpirationMs)
	case n.BackoffMs < 0 || n.RetentionCheckIntervalMs < 1:
		return n, fmt.Errorf("%w: backoff %d ms, retention check interval %d ms", ErrInvalidConfig, n.BackoffMs, n.RetentionCheckIntervalMs)
	}
	return n, nil
}

// LogConfig is one log's effective topic config (topic overrides over broker
// defaults). Every value means what it says, 0 included (delete.retention.ms=0
// removes tombstones at the first pass after the one that stamps their
// horizon; min.cleanable.dirty.ratio=0 cleans whenever anything is dirty):
// start from DefaultLogConfig for Kafka's defaults. A nil *LogConfig is
// DefaultLogConfig(). Only settings Kafka does not allow to be 0 take a
// default when 0: CleanupPolicy "" is "delete", MaxCompactionLagMs 0 is never,
// SegmentBytes and SegmentIndexBytes 0 are the log's own.
type LogConfig struct {
	// CleanupPolicy is cleanup.policy: "delete" (default), "compact" or
	// "compact,delete".
	CleanupPolicy string
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (Kafka's default
	// 0.5; a negative value means 0).
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms (Kafka's default 0).
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms (default: never).
	MaxCompactionLagMs int64
	// DeleteRetentionMs is delete.retention.ms (Kafka's default 24 h; a
	// negative value means 0).
	DeleteRetentionMs int64
	// SegmentBytes and SegmentIndexBytes bound cleaned groups (default: the
	// log's own segment.bytes and segment.index.bytes).
	SegmentBytes      int64
	SegmentIndexBytes int
}

// DefaultLogConfig is Kafka's default topic config for the cleaner:
// cleanup.policy=delete, min.cleanable.dirty.ratio=0.5,
// min.compaction.lag.ms=0, max.compaction.lag.ms=never,
// delete.retention.ms=24 h.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		CleanupPolicy:          "delete",
		MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      DefaultDeleteRetentionMs,
	}
}

func (c *LogConfig) ensureDefaults() LogConfig {
	if c == nil {
		return DefaultLogConfig()
	}
	n := *c
	if n.CleanupPolicy == "" {
		n.CleanupPolicy = "delete"
	}
	n.MinCleanableDirtyRatio = max(n.MinCleanableDirtyRatio, 0)
	if n.MaxCompactionLagMs == 0 {
		n.MaxCompactionLagMs = math.MaxInt64
	}
	n.DeleteRetentionMs = max(n.DeleteRetentionMs, 0)
	return n
}

// Compact reports whether the policy includes compaction.
func (c LogConfig) Compact() bool { return hasPolicy(c.CleanupPolicy, "compact") }

// Delete reports whether the policy includes deletion by retention.
func (c LogConfig) Delete() bool { return hasPolicy(c.CleanupPolicy, "delete") }

func hasPolicy(list, p string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == p {
			return true
		}
	}
	return false
}
