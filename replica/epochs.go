package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
)

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry = checkpoint.EpochEntry

// Undefined epoch and offset, as Kafka's UNDEFINED_EPOCH(_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EpochCache is a partition's leader-epoch cache (Kafka's
// LeaderEpochFileCache): for each leader epoch of the log, the offset of its
// first record, epochs and start offsets both strictly increasing. Every
// change is written to leader-epoch-checkpoint in the partition directory
// (internal/checkpoint's format, a durable atomic replace) before the call
// returns. It is not safe for concurrent use; Partition guards it.
type EpochCache struct {
	fs      vfs.FS
	path    string
	entries []EpochEntry
}

// OpenEpochCache loads dir's leader-epoch-checkpoint. A missing file is an
// empty cache; a malformed one is an empty cache and an error wrapping
// checkpoint.ErrMalformed, so the caller can rebuild it from the log's batches
// (the file only summarises them). Entries that are not increasing are dropped
// the way Assign drops them. Other read errors are returned with a nil cache.
func OpenEpochCache(fsys vfs.FS, dir string) (*EpochCache, error) {
	c := &EpochCache{fs: fsys, path: filepath.Join(dir, checkpoint.LeaderEpochFile)}
	es, err := checkpoint.ReadEpochs(fsys, c.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case errors.Is(err, checkpoint.ErrMalformed):
		return c, err
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	for _, e := range es {
		if e.Epoch >= 0 && e.StartOffset >= 0 && c.needsUpdate(e) {
			c.insert(e)
		}
	}
	return c, nil
}

// Path is the checkpoint file's path.
func (c *EpochCache) Path() string { return c.path }

// Entries returns a copy of the entries, oldest first.
func (c *EpochCache) Entries() []EpochEntry { return slices.Clone(c.entries) }

// Latest returns the newest entry; ok is false when the cache is empty.
func (c *EpochCache) Latest() (e EpochEntry, ok bool) {
	if len(c.entries) == 0 {
		return EpochEntry{Epoch: UndefinedEpoch, StartOffset: UndefinedEpochOffset}, false
	}
	return c.entries[len(c.entries)-1], true
}

// LatestEpoch is the newest epoch, or UndefinedEpoch.
func (c *EpochCache) LatestEpoch() int32 {
	e, _ := c.Latest()
	return e.Epoch
}

// needsUpdate is Kafka's rule: a new epoch, or the latest epoch starting
// earlier, changes the cache; the latest epoch again at a later offset does
// not.
func (c *EpochCache) needsUpdate(e EpochEntry) bool {
	last, ok := c.Latest()
	return !ok || e.Epoch != last.Epoch || e.StartOffset < last.StartOffset
}

// insert drops the entries the new one contradicts (an epoch at or above it,
// or a start offset at or past it) and appends it, keeping both sequences
// increasing.
func (c *EpochCache) insert(e EpochEntry) {
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= e.Epoch || c.entries[n-1].StartOffset >= e.StartOffset) {
		n--
	}
	c.entries = append(c.entries[:n], e)
}

// Assign records that epoch starts at startOffset, as Kafka does: the latest
// epoch again (at a later offset) is ignored; otherwise entries it
// contradicts (epochs at or above it, start offsets at or past it) are
// removed first. It reports whether the cache changed. When the checkpoint
// cannot be written the cache is left as it was and the error wraps
// ErrStorage.
func (c *EpochCache) Assign(epoch int32, startOffset int64) (bool, error) {
	e := EpochEntry{Epoch: epoch, StartOffset: startOffset}
	if epoch < 0 || startOffset < 0 {
		return false, fmt.Errorf("%w: leader epoch entry (%d, %d)", ErrInvalidRequest, epoch, startOffset)
	}
	if !c.needsUpdate(e) {
		return false, nil
	}
	old := slices.Clone(c.entries)
	c.insert(e)
	if err := c.flush(); err != nil {
		c.entries = old
		return false, err
	}
	return true, nil
}

// EndOffsetFor answers OffsetForLeaderEpoch with Kafka's semantics, logEnd
// being the log end offset:
//   - UndefinedEpoch, an empty cache, or an epoch above every known one:
//     (UndefinedEpoch, UndefinedEpochOffset);
//   - the latest epoch: (epoch, logEnd);
//   - an epoch below every known one: (epoch, start of the first entry);
//   - otherwise: the largest known epoch <= epoch, and the start offset of
//     the next known epoch (where the found epoch ended).
func (c *EpochCache) EndOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	undefined := func() (int32, int64) { return UndefinedEpoch, UndefinedEpochOffset }
	last, ok := c.Latest()
	switch {
	case epoch == UndefinedEpoch || !ok:
		return undefined()
	case epoch == last.Epoch:
		return epoch, logEnd
	case epoch > last.Epoch:
		return undefined()
	}
	// higher: the first entry with an epoch above the requested one (exists:
	// the latest is above it).
	higher, _ := slices.BinarySearchFunc(c.entries, epoch, func(e EpochEntry, t int32) int {
		if e.Epoch <= t {
			return -1
		}
		return 1
	})
	if higher == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// TruncateFromEnd removes the entries starting at or after endOffset (the
// log was cut there). A negative offset does nothing. The in-memory cache
// follows the log even when the checkpoint write fails (the error wraps
// ErrStorage): loading clamps a stale file to the log end anyway.
func (c *EpochCache) TruncateFromEnd(endOffset int64) error {
	last, ok := c.Latest()
	if endOffset < 0 || !ok || last.StartOffset < endOffset {
		return nil
	}
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	c.entries = c.entries[:n]
	return c.flush()
}

// TruncateFromStart drops the entries before startOffset (the log start
// moved there): the last entry at or below it is kept, starting at
// startOffset, so truncateFromStart(6) keeps an entry starting at 6. A
// negative offset does nothing.
func (c *EpochCache) TruncateFromStart(startOffset int64) error {
	if startOffset < 0 {
		return nil
	}
	n := 0
	for n < len(c.entries) && c.entries[n].StartOffset <= startOffset {
		n++
	}
	if n == 0 || n == 1 && c.entries[0].StartOffset == startOffset {
		return nil
	}
	first := EpochEntry{Epoch: c.entries[n-1].Epoch, StartOffset: startOffset}
	c.entries = append([]EpochEntry{first}, c.entries[n:]...)
	return c.flush()
}

// Clear removes every entry.
func (c *EpochCache) Clear() error {
	c.entries = c.entries[:0]
	return c.flush()
}

func (c *EpochCache) flush() error {
	if err := checkpoint.WriteEpochs(c.fs, c.path, c.entries); err != nil {
		return fmt.Errorf("%w: leader epoch checkpoint: %w", ErrStorage, err)
	}
	return nil
}
