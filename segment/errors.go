package segment

import (
	"errors"

	"github.com/stratalog/strata/index"
	"github.com/stratalog/strata/record"
)

var (
	// ErrInvalidConfig is returned by Open for settings out of range.
	ErrInvalidConfig = errors.New("segment: invalid configuration")
	// ErrOffsetOutOfRange: a read below the log start offset or above the log end.
	ErrOffsetOutOfRange = errors.New("segment: offset out of range")
	// ErrClosed: the log or segment was closed.
	ErrClosed = errors.New("segment: closed")
	// ErrSegmentGone: a reader tried to use a segment whose files were already
	// deleted (it held a snapshot longer than file.delete.delay.ms).
	ErrSegmentGone = errors.New("segment: segment deleted")
	// ErrBadAppend: the bytes handed to Append are not well-framed v2 batches.
	ErrBadAppend = errors.New("segment: invalid append")
	// ErrOffsetMismatch: an append with assigned offsets does not continue the log.
	ErrOffsetMismatch = errors.New("segment: appended offsets do not continue the log")
	// ErrTooLarge: a batch larger than segment.bytes can never be stored.
	ErrTooLarge = errors.New("segment: batch larger than segment.bytes")
	// ErrSegmentsChanged: ReplaceSegments found the segments to replace no longer
	// in the list (deleted or truncated meanwhile), or asked to replace the
	// active segment.
	ErrSegmentsChanged = errors.New("segment: segments changed during cleaning")
	// ErrOffline: the log's directory failed (an I/O error that could not be
	// undone, see Health and the package doc); the log refuses every
	// operation until it is repaired and reopened. Kafka answers
	// KAFKA_STORAGE_ERROR.
	ErrOffline = errors.New("segment: log directory offline after an I/O error")
	// errNotUndone marks a failed operation whose undo failed too: the log
	// cannot tell what is on disk and goes offline.
	errNotUndone = errors.New("segment: undoing the failed operation failed")
	// errMappedFault marks a failed write through a memory mapping (a fault:
	// an I/O error paging the file in, or a file cut behind the log's back):
	// the log goes offline, as it cannot tell what reached the file.
	errMappedFault = errors.New("segment: fault in a mapped write")
	// ErrProducer: a leader append refused by the producer state (a
	// sequence gap, a fenced epoch, an unknown producer: the wrapped
	// producer error says which); nothing was appended.
	ErrProducer = errors.New("segment: refused by producer state")
	// ErrSaveCut: Options.SaveCut failed, so loading cut nothing and stopped.
	ErrSaveCut = errors.New("segment: could not save the bytes to cut")
)

// isCorruption reports whether err comes from bad bytes on disk (log or index)
// rather than from the I/O system.
func isCorruption(err error) bool {
	return record.IsCorruption(err) || errors.Is(err, index.ErrCorruptIndex)
}
