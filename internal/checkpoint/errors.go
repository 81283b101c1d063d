package checkpoint

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed marks every error about a checkpoint's content.
	ErrMalformed = errors.New("checkpoint: malformed checkpoint")
	// ErrInvalidTopic is returned when writing a topic name Kafka would refuse.
	ErrInvalidTopic = errors.New("checkpoint: invalid topic name")
	// ErrInvalidPartition is returned when writing a negative partition.
	ErrInvalidPartition = errors.New("checkpoint: invalid partition")
)

// ParseError describes what is wrong with a checkpoint and on which line (1-based;
// 0 when the file ends early). It matches ErrMalformed with errors.Is.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%v: %s", ErrMalformed, e.Msg)
	}
	return fmt.Sprintf("%v: line %d: %s", ErrMalformed, e.Line, e.Msg)
}

// Unwrap returns ErrMalformed.
func (e *ParseError) Unwrap() error { return ErrMalformed }

func malformed(line int, format string, args ...any) error {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}
