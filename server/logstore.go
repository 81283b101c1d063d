package server

import (
	"github.com/stratalog/strata/segment"
)

// PartitionLog is what the broker needs from a partition's log. *segment.Log
// implements it; the recovery package's managed logs will too.
type PartitionLog interface {
	Append(buf []byte) (segment.AppendInfo, error)
	Read(offset, maxBytes int64) (segment.Region, error)
	Snapshot() segment.Snapshot
	LogStartOffset() int64
	LogEndOffset() int64
	OffsetForTimestamp(ts int64) (segment.TimestampOffset, bool, error)
	Changed() <-chan struct{}
	Flush() error
	Close() error
}

// LogOpener opens (creating if needed) the log of one partition directory.
// The default opens it with segment.Open; recovery will swap in its own.
type LogOpener func(dir string, opts *segment.Options) (PartitionLog, error)

func openSegmentLog(dir string, opts *segment.Options) (PartitionLog, error) {
	l, err := segment.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return l, nil
}
