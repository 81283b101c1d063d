package record

import (
	"errors"
	"fmt"
)

// ErrCorrupt marks every error caused by bytes that do not form a valid entry.
// Test with IsCorruption.
var ErrCorrupt = errors.New("record: corrupt data")

// ErrTruncated means the data ends inside an entry: a torn tail, not corruption
// of what is there. It is also marked as corruption for callers that do not care.
var ErrTruncated = errors.New("record: truncated entry")

var (
	ErrBadMagic     = errors.New("record: unknown magic")
	ErrBadSize      = errors.New("record: invalid entry size")
	ErrCRC          = errors.New("record: CRC mismatch")
	ErrBadRecord    = errors.New("record: invalid record")
	ErrUnknownCodec = errors.New("record: unknown compression codec")
	ErrBadCount     = errors.New("record: record count disagrees with batch")
	ErrCompression  = errors.New("record: decompression failed")
	ErrNotV2        = errors.New("record: not a v2 record batch")
)

// ErrBadOptions is returned by encoders given options or records they cannot
// encode (not a corruption).
var ErrBadOptions = errors.New("record: invalid batch options")

// ErrProduce marks a batch that is well formed but breaks a rule Kafka applies
// only to batches received from producers (ValidateProduce).
var ErrProduce = errors.New("record: batch not acceptable from a producer")

// ErrNullKey marks a record without a key where one is required
// (StreamOptions.RequireKeys: a compacted topic's produce).
var ErrNullKey = errors.New("record: record has no key")

// CorruptionError carries where a corruption was found.
type CorruptionError struct {
	Pos    int64 // byte position of the entry in its file or buffer, -1 if unknown
	Offset int64 // offset of the entry, -1 if unknown
	Err    error // the specific sentinel (ErrCRC, ErrBadSize, ...)
	Detail string
}

func (e *CorruptionError) Error() string {
	s := fmt.Sprintf("%v at position %d", e.Err, e.Pos)
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (offset %d)", e.Offset)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap lets errors.Is find both the sentinel and ErrCorrupt.
func (e *CorruptionError) Unwrap() []error { return []error{e.Err, ErrCorrupt} }

// Corrupt builds a CorruptionError.
func Corrupt(err error, pos, offset int64, format string, args ...any) error {
	d := format
	if len(args) > 0 {
		d = fmt.Sprintf(format, args...)
	}
	return &CorruptionError{Pos: pos, Offset: offset, Err: err, Detail: d}
}

// IsCorruption reports whether err was caused by invalid stored or received bytes
// (including a truncated tail).
func IsCorruption(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTruncated)
}
