package index

import (
	"errors"
	"fmt"
)

// ErrCorruptIndex marks every error caused by index bytes that cannot be trusted: a
// file length that is not a multiple of the entry size, entries out of order, a
// zero-padded tail, positions past the end of the log, offsets below the base. The
// caller's answer is to rebuild the index from the log (Reset, then Append). Test
// with errors.Is(err, ErrCorruptIndex) or IsCorruption.
var ErrCorruptIndex = errors.New("index: corrupt index")

var (
	// ErrIndexFull is returned by Append when the index has no free slot. The
	// segment layer rolls a new segment.
	ErrIndexFull = errors.New("index: index is full")
	// ErrInvalidOffset is returned by Append for an offset that would break the
	// index order (not larger than the last offset in an offset index, smaller than
	// the last offset in a time index) or that is below the base offset.
	ErrInvalidOffset = errors.New("index: invalid offset")
	// ErrOffsetOverflow is returned by Append when offset - baseOffset does not fit
	// in an int32 (Kafka's IndexOffsetOverflowException). The segment must roll.
	ErrOffsetOverflow = errors.New("index: relative offset overflows int32")
	// ErrInvalidPosition is returned by OffsetIndex.Append for a negative position
	// or one not larger than the last entry's.
	ErrInvalidPosition = errors.New("index: invalid position")
	// ErrInvalidSize is returned for a maximum size smaller than one entry, a
	// Resize below the current entries, or a Resize beyond the length mapped at
	// open.
	ErrInvalidSize = errors.New("index: invalid index size")
	// ErrOutOfRange is returned by Entry for a slot outside [0, Entries()).
	ErrOutOfRange = errors.New("index: entry out of range")
	// ErrReadOnly is returned by every mutation of an index opened read-only.
	ErrReadOnly = errors.New("index: index is read-only")
	// ErrClosed is returned by operations on a closed index.
	ErrClosed = errors.New("index: index is closed")
	// ErrMappedWrite is returned by Append when the file refused an entry
	// written through its mapping (vfs.OpMapWrite of an injected file): the
	// entry is not published.
	ErrMappedWrite = errors.New("index: write through the mapping failed")
)

// CorruptionError says where an index is corrupt. It unwraps to ErrCorruptIndex.
type CorruptionError struct {
	Path string // index file
	// Entry is the slot number of the offending entry, or -1 when the problem is the
	// file as a whole (its length).
	Entry int
	// FilePos is the byte position of the entry (or the file length) in the index
	// file.
	FilePos int64
	// Offset is the absolute log offset stored in the entry, -1 if not applicable.
	Offset int64
	// Position is the log byte position of an offset-index entry, -1 if not
	// applicable.
	Position int64
	// Timestamp is the timestamp of a time-index entry, -1 if not applicable.
	Timestamp int64
	// Reason says what is wrong, in words.
	Reason string

	timeIndex bool
}

func (e *CorruptionError) Error() string {
	s := fmt.Sprintf("%v: %s", ErrCorruptIndex, e.Path)
	if e.Entry >= 0 {
		s += fmt.Sprintf(": entry %d at byte %d", e.Entry, e.FilePos)
		if e.timeIndex {
			s += fmt.Sprintf(" (timestamp %d, offset %d)", e.Timestamp, e.Offset)
		} else {
			s += fmt.Sprintf(" (offset %d, position %d)", e.Offset, e.Position)
		}
	}
	return s + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrCorruptIndex) true.
func (e *CorruptionError) Unwrap() error { return ErrCorruptIndex }

// IsCorruption reports whether err marks an index that cannot be trusted and must
// be rebuilt.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorruptIndex) }

func corruptFile(path string, size int64, reason string) error {
	return &CorruptionError{Path: path, Entry: -1, FilePos: size, Offset: -1, Position: -1, Timestamp: -1, Reason: reason}
}
