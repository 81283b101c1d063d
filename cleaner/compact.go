package cleaner

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

// CompactOptions configure CompactDir. Zero values take the defaults noted,
// except DeleteRetentionMs, where 0 means 0 (start from DefaultCompactOptions
// for Kafka's 24 h). A nil *CompactOptions is DefaultCompactOptions().
type CompactOptions struct {
	// FS is the filesystem (default vfs.OS).
	FS vfs.FS
	// DryRun decides everything and reports it, changing no file.
	DryRun bool
	// DedupeBufferBytes is log.cleaner.dedupe.buffer.size (default 128 MiB);
	// LoadFactor is log.cleaner.io.buffer.load.factor (default 0.9).
	DedupeBufferBytes int64
	LoadFactor        float64
	// SegmentBytes and SegmentIndexBytes bound a group of segments cleaned
	// into one (defaults: Kafka's 1 GiB and 10 MiB).
	SegmentBytes      int64
	SegmentIndexBytes int
	// DeleteRetentionMs is delete.retention.ms: a pass stamps each batch
	// holding tombstones with the delete horizon now + DeleteRetentionMs, and
	// a later pass at or past it removes them. 0 means 0 (the next pass
	// removes them); negative values mean 0.
	DeleteRetentionMs int64
	// MinCompactionLagMs is min.compaction.lag.ms (default 0).
	MinCompactionLagMs int64
	// ProducerIDExpirationMs is producer.id.expiration.ms (default 1 day):
	// a producer's last batch within it of now is kept, empty if need be.
	ProducerIDExpirationMs int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second (default
	// unlimited).
	IOMaxBytesPerSecond float64
	// FromStart ignores the cleaner-offset-checkpoint: every segment is dirty.
	FromStart bool
	// Now returns the wall clock in ms (default time.Now).
	Now func() int64
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// DefaultCompactOptions is CompactOptions with Kafka's delete.retention.ms
// (24 h); every other field is zero, which takes its default.
func DefaultCompactOptions() CompactOptions {
	return CompactOptions{DeleteRetentionMs: DefaultDeleteRetentionMs}
}

func (o *CompactOptions) ensureDefaults() CompactOptions {
	n := DefaultCompactOptions()
	if o != nil {
		n = *o
	}
	if n.FS == nil {
		n.FS = vfs.OS
	}
	if n.DedupeBufferBytes == 0 {
		n.DedupeBufferBytes = DefaultDedupeBufferBytes
	}
	if n.LoadFactor == 0 {
		n.LoadFactor = DefaultLoadFactor
	}
	if n.SegmentBytes == 0 {
		n.SegmentBytes = segment.DefaultSegmentBytes
	}
	if n.SegmentIndexBytes == 0 {
		n.SegmentIndexBytes = segment.DefaultSegmentIndexBytes
	}
	n.DeleteRetentionMs = max(n.DeleteRetentionMs, 0)
	if n.ProducerIDExpirationMs <= 0 {
		n.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	if n.Now == nil {
		n.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if n.Logger == nil {
		n.Logger = slog.Default()
	}
	return n
}

// Report says what CompactDir did (or would do, dry).
type Report struct {
	Dir    string
	DryRun bool
	PassStats
	SegmentsBefore, SegmentsAfter int
	BytesBefore, BytesAfter       int64
	MapSlots                      int
	MapBytesPerEntry              int
	// Checkpoint is the cleaner-offset-checkpoint file updated ("" when the
	// directory name is not topic-partition, so no checkpoint applies).
	Checkpoint string
	// PassDuration is the pass itself: open, map, recopy, durable swaps and
	// checkpoint. The replaced segments' files (renamed .deleted) are removed
	// after it, as file.delete.delay.ms defers them in a broker; Duration
	// includes that removal and closing the log.
	PassDuration time.Duration
	Duration     time.Duration
}

// PartitionOf parses a partition directory name "<topic>-<partition>".
func PartitionOf(dir string) (checkpoint.TopicPartition, bool) {
	name := filepath.Base(filepath.Clean(dir))
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return checkpoint.TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || !checkpoint.ValidTopic(name[:i]) {
		return checkpoint.TopicPartition{}, false
	}
	return checkpoint.TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// CompactDir compacts one partition directory now, offline (no broker may have
// it open): one cleaning pass over the whole log, the last segment included
// (its base offset and last offset stay, so a broker can keep appending). The
// dirty section starts at the partition's entry in the log dir's
// cleaner-offset-checkpoint (or the log start), and the entry is updated after
// the pass. With DryRun nothing is written: the report says what would go.
//
// The directory is opened as after a clean shutdown (leftover .swap/.cleaned
// files are repaired and torn tails cut, but whole segments are not rescanned);
// every batch the pass copies has its CRC checked and a corrupt one fails the
// pass with nothing swapped in for its group: run recovery first.
func CompactDir(dir string, opts *CompactOptions) (rep Report, err error) {
	t0 := time.Now()
	o := opts.ensureDefaults()
	rep = Report{Dir: dir, DryRun: o.DryRun}
	if _, err := o.FS.Stat(dir); err != nil {
		return rep, fmt.Errorf("cleaner: %w", err)
	}
	if o.DryRun {
		// Opening repairs leftovers; a dry run must change nothing.
		names, err := o.FS.ReadDir(dir)
		if err != nil {
			return rep, fmt.Errorf("cleaner: %w", err)
		}
		for _, n := range names {
			if _, suf, ok := segment.ParseFileName(n); ok && (strings.HasSuffix(suf, segment.SwapSuffix) ||
				strings.HasSuffix(suf, segment.CleanedSuffix) || strings.HasSuffix(suf, segment.DeletedSuffix)) {
				return rep, fmt.Errorf("%w: %s holds unfinished operation files (%s); open it once to repair", ErrInvalidConfig, dir, n)
			}
		}
	}
	l, err := segment.Open(dir, &segment.Options{
		FS:                o.FS,
		SegmentBytes:      o.SegmentBytes,
		SegmentIndexBytes: o.SegmentIndexBytes,
		// Replaced files are renamed .deleted at once and removed when the
		// log closes, after the pass (an unlink of a large file is slow).
		FileDeleteDelayMs: 24 * 3600 * 1000,
		RetentionMs:       -1,
		CleanShutdown:     true,
		Now:               o.Now,
		Logger:            o.Logger,
	})
	if err != nil {
		return rep, err
	}
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
		rep.Duration = time.Since(t0)
	}()
	for _, s := range l.Segments() {
		rep.SegmentsBefore++
		rep.BytesBefore += s.Size()
	}
	tp, named := PartitionOf(dir)
	ckPath := ""
	firstDirty := int64(-1)
	var cks map[checkpoint.TopicPartition]int64
	if named {
		ckPath = filepath.Join(filepath.Dir(filepath.Clean(dir)), checkpoint.CleanerOffsetFile)
		cks, err = checkpoint.ReadOffsets(o.FS, ckPath)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("cleaner: %w", err)
		}
		if cks == nil {
			cks = map[checkpoint.TopicPartition]int64{}
		}
		if v, ok := cks[tp]; ok && !o.FromStart {
			firstDirty = v
		}
	}
	m, err := NewOffsetMap(o.DedupeBufferBytes, o.LoadFactor)
	if err != nil {
		return rep, err
	}
	rep.MapBytesPerEntry = SlotBytes
	defer func() { rep.MapSlots = m.Slots() }()
	st, err := clean(l, m, firstDirty, passOptions{
		now:                o.Now(),
		deleteRetentionMs:  o.DeleteRetentionMs,
		minCompactionLagMs: o.MinCompactionLagMs,
		producerExpiryMs:   o.ProducerIDExpirationMs,
		segmentBytes:       o.SegmentBytes,
		indexBytes:         int64(o.SegmentIndexBytes),
		offline:            true,
		dryRun:             o.DryRun,
		throttle:           NewThrottler(o.IOMaxBytesPerSecond),
		logger:             o.Logger,
	})
	rep.PassStats = st
	if errors.Is(err, ErrNothingToClean) {
		err = nil
	}
	if err != nil {
		return rep, err
	}
	for _, s := range l.Segments() {
		rep.SegmentsAfter++
		rep.BytesAfter += s.Size()
	}
	if named && !o.DryRun && st.EndOffset > st.FirstDirtyOffset {
		cks[tp] = st.EndOffset
		if err := checkpoint.WriteOffsets(o.FS, ckPath, cks); err != nil {
			return rep, fmt.Errorf("cleaner: %w", err)
		}
		rep.Checkpoint = ckPath
	}
	rep.PassDuration = time.Since(t0)
	return rep, nil
}
