package segment

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/stratalog/strata/internal/vfs"
)

// Options configure a Log. Names follow Kafka's topic configs; zero values take
// Kafka's defaults (see EnsureDefaults and ExplicitZeros). A nil *Options
// means all defaults.
type Options struct {
	// FS is the filesystem; default vfs.OS.
	FS vfs.FS
	// SegmentBytes is segment.bytes: roll when the active segment would exceed it
	// (default 1 GiB; at most 2 GiB - 1, as positions are int32).
	SegmentBytes int64
	// SegmentMs is segment.ms: roll when the active segment's first timestamp is
	// this old (default 7 days).
	SegmentMs int64
	// SegmentIndexBytes is segment.index.bytes, the preallocated size of each
	// index file (default 10 MiB).
	SegmentIndexBytes int
	// IndexIntervalBytes is index.interval.bytes: bytes between offset index
	// entries (default 4096).
	IndexIntervalBytes int
	// FlushMessages is flush.messages: fsync after this many records (default:
	// never; the OS decides, as in Kafka).
	FlushMessages int64
	// FlushMs is flush.ms: fsync when the oldest unflushed append is this old,
	// checked by a background flusher (default: never).
	FlushMs int64
	// FileDeleteDelayMs is file.delete.delay.ms: how long files renamed to
	// .deleted are kept for readers still using them (default 60000; negative:
	// remove at once, Kafka's 0).
	FileDeleteDelayMs int64
	// RetentionMs is retention.ms (default 7 days; -1 keeps forever).
	RetentionMs int64
	// RetentionBytes is retention.bytes (default -1: no size limit).
	RetentionBytes int64
	// Preallocate is preallocate (log.preallocate on the broker): a new active
	// segment's .log file is extended with fallocate ahead of the writer, in
	// chunks of PreallocateChunk up to SegmentBytes, so an fsync after an append
	// inside the allocation need not commit a new file size. The segment keeps
	// its logical size in memory; the file is trimmed to it on roll and clean
	// close, and recovery cuts the zero-filled tail a crash leaves without
	// calling it corruption (LoadReport.BytesPreallocatedTrimmed). Default false,
	// as in Kafka.
	Preallocate bool
	// MapAppendsBelow: with Preallocate, an append smaller than this many bytes
	// is copied into a shared mapping of the reserve instead of written with
	// pwrite (segment_map.go): no system call per append, one page fault per
	// page instead. While the log is being flushed the limit is at most 1 KiB,
	// as fdatasync must then clean every mapped page it writes. Default 4096
	// (measured on a VM where a fault on a fresh page and a pwrite call both
	// cost about 2.5 µs); -1 or any value below 1: never map.
	MapAppendsBelow int
	// MaxBatchBytes caps one entry read from disk (default 64 MiB); larger
	// size fields are treated as corruption.
	MaxBatchBytes int
	// ExplicitZeros makes a zero RetentionMs, RetentionBytes or FlushMs mean
	// Kafka's 0 instead of "the default": retention.ms=0 and
	// retention.bytes=0 delete every segment the next ApplyRetention reaches
	// (rolling the active one first), flush.ms=0 fsyncs at the flusher's
	// next check. Callers that fill in Kafka's defaults themselves (the
	// broker) set it. Zero in fields Kafka refuses to be zero still means
	// the default.
	ExplicitZeros bool

	// RecoveryPoint: batches below it are trusted at Open (their CRCs are not
	// rechecked); segments from the one holding it onwards are scanned. Default 0:
	// scan everything. Set by the recovery package from Kafka's checkpoint.
	RecoveryPoint int64
	// CleanShutdown skips the scan (the clean-shutdown marker was present).
	CleanShutdown bool
	// LogStartOffset from the log-start-offset checkpoint (default: the first
	// segment's base offset).
	LogStartOffset int64
	// SaveCut, when set, is called by Open before it cuts bytes from a
	// segment file: the tail [pos, pos+n) of a .log (kind "tail"), or a whole
	// file of a segment it removes (pos 0, n its size; kind "segment" for the
	// .log, "index" for its .index, .timeindex and .txnindex). It returns
	// where the bytes were saved, for the log line; an error stops Open with
	// nothing cut. The recovery package sets it to keep a backup.
	SaveCut func(file string, pos, n int64, kind string) (savedTo string, err error)

	// Health is the failure state the log shares with the other logs of its
	// directory (see Health); default: one of its own.
	Health *Health

	// Now returns the wall clock in milliseconds (default time.Now).
	Now func() int64
	// Go runs the log's background work: the directory fsync after a roll
	// or a retention delete and what waits for it (the flush of the sealed
	// segments, the recovery point's raise); the writer returns without
	// waiting for them.
	// Default: go task(). A deterministic simulation supplies an executor
	// that runs each task later, as one of its scheduled events. Close
	// waits for every task handed to Go, so such an executor must have run
	// them all before the log is closed (Close, or a caller that closes
	// it), or Close blocks for ever. The flush.ms flusher and delayed
	// deletions (file.delete.delay.ms > 0) still use their own goroutines
	// and timers: a simulation leaves them off (FlushMs unset,
	// FileDeleteDelayMs < 0).
	Go func(task func())
	// Logger receives what the log does (default slog.Default()).
	Logger *slog.Logger
	// OnFlush, if set, is called after each fsync group that made records
	// durable (FlushTo), with how long it took: the broker's
	// LogFlushRateAndTimeMs. It runs on the flushing goroutine.
	OnFlush func(time.Duration)

	// ProducerIDExpirationMs is producer.id.expiration.ms: a producer
	// without an open transaction whose last batch is older is forgotten
	// (default 1 day).
	ProducerIDExpirationMs int64
}

// Defaults, Kafka's.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * 3600 * 1000
	DefaultSegmentIndexBytes  = 10 << 20
	DefaultIndexIntervalBytes = 4096
	DefaultFileDeleteDelayMs  = 60000
	DefaultRetentionMs        = 7 * 24 * 3600 * 1000
	DefaultMaxBatchBytes      = 64 << 20
	// DefaultProducerIDExpirationMs is producer.id.expiration.ms's default.
	DefaultProducerIDExpirationMs = 86400000
	// PreallocateChunk is how far ahead of the writer a preallocated segment's
	// file is extended (capped at SegmentBytes), as etcd's WAL preallocates
	// 64 MB segments: one size change, one journal commit, per chunk.
	PreallocateChunk = 64 << 20
	// DefaultMapAppendsBelow is Options.MapAppendsBelow's default.
	DefaultMapAppendsBelow = 4096
	// Never is the value of FlushMessages/FlushMs that disables application fsync.
	Never = math.MaxInt64
)

// EnsureDefaults returns a copy of o (nil allowed) with every zero field set to
// its default (but for the fields ExplicitZeros keeps).
func (o *Options) EnsureDefaults() *Options {
	var n Options
	if o != nil {
		n = *o
	}
	if n.FS == nil {
		n.FS = vfs.OS
	}
	if n.SegmentBytes == 0 {
		n.SegmentBytes = DefaultSegmentBytes
	}
	if n.SegmentMs == 0 {
		n.SegmentMs = DefaultSegmentMs
	}
	if n.SegmentIndexBytes == 0 {
		n.SegmentIndexBytes = DefaultSegmentIndexBytes
	}
	if n.IndexIntervalBytes == 0 {
		n.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if n.FlushMessages == 0 {
		n.FlushMessages = Never
	}
	n.defaultZeros()
	if n.FileDeleteDelayMs == 0 {
		n.FileDeleteDelayMs = DefaultFileDeleteDelayMs
	}
	if n.MaxBatchBytes == 0 {
		n.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if n.MapAppendsBelow == 0 {
		n.MapAppendsBelow = DefaultMapAppendsBelow
	}
	if n.Now == nil {
		n.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if n.Go == nil {
		n.Go = func(task func()) { go task() }
	}
	if n.Logger == nil {
		n.Logger = slog.Default()
	}
	if n.ProducerIDExpirationMs == 0 {
		n.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	return &n
}

// defaultZeros gives zero FlushMs, RetentionMs and RetentionBytes their
// defaults unless ExplicitZeros says zero is meant.
func (o *Options) defaultZeros() {
	if o.ExplicitZeros {
		return
	}
	if o.FlushMs == 0 {
		o.FlushMs = Never
	}
	if o.RetentionMs == 0 {
		o.RetentionMs = DefaultRetentionMs
	}
	if o.RetentionBytes == 0 {
		o.RetentionBytes = -1
	}
}

// Validate reports the first invalid setting.
func (o *Options) Validate() error {
	switch {
	case o.SegmentBytes < 14 || o.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("%w: segment.bytes %d must be in [14, %d]", ErrInvalidConfig, o.SegmentBytes, math.MaxInt32)
	case o.SegmentMs < 1:
		return fmt.Errorf("%w: segment.ms %d must be positive", ErrInvalidConfig, o.SegmentMs)
	case o.SegmentIndexBytes < 12 || o.SegmentIndexBytes > math.MaxInt32:
		return fmt.Errorf("%w: segment.index.bytes %d must be at least 12", ErrInvalidConfig, o.SegmentIndexBytes)
	case o.IndexIntervalBytes < 0:
		return fmt.Errorf("%w: index.interval.bytes %d must not be negative", ErrInvalidConfig, o.IndexIntervalBytes)
	case o.FlushMessages < 1:
		return fmt.Errorf("%w: flush.messages %d must be positive", ErrInvalidConfig, o.FlushMessages)
	case o.FlushMs < 0:
		return fmt.Errorf("%w: flush.ms %d must not be negative", ErrInvalidConfig, o.FlushMs)
	case o.RetentionMs < -1:
		return fmt.Errorf("%w: retention.ms %d must be -1 or more", ErrInvalidConfig, o.RetentionMs)
	case o.RetentionBytes < -1:
		return fmt.Errorf("%w: retention.bytes %d must be -1 or more", ErrInvalidConfig, o.RetentionBytes)
	case o.MaxBatchBytes < 61:
		return fmt.Errorf("%w: max batch bytes %d too small", ErrInvalidConfig, o.MaxBatchBytes)
	}
	return nil
}
