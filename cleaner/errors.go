package cleaner

import "errors"

var (
	// ErrMapTooSmall: the offset map cannot hold even one batch's keys.
	ErrMapTooSmall = errors.New("cleaner: offset map too small for one batch")
	// ErrMapFull: Put on a full offset map.
	ErrMapFull = errors.New("cleaner: offset map full")
	// ErrOffsetSpan: an offset too far from the pass's first offset for the
	// map's 32-bit relative offsets.
	ErrOffsetSpan = errors.New("cleaner: offset outside the pass's 2^31 span")
	// ErrNothingToClean: the log has no cleanable dirty section.
	ErrNothingToClean = errors.New("cleaner: nothing to clean")
	// ErrInvalidConfig: a setting out of range.
	ErrInvalidConfig = errors.New("cleaner: invalid configuration")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("cleaner: closed")
	// ErrAborted: the log changed under the pass (segments deleted or
	// truncated); the cleaned output was discarded.
	ErrAborted = errors.New("cleaner: pass aborted, the log changed")
)
