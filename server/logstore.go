package server

import (
	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/segment"
)

// PartitionLog is what the broker needs from a partition's log. *segment.Log
// implements it (logs loaded by recovery.OpenDataDir are *segment.Log).
type PartitionLog interface {
	Append(buf []byte) (segment.AppendInfo, error)
	Read(offset, maxBytes int64) (segment.Region, error)
	ReadToHighWatermark(offset, maxBytes int64) (segment.Region, error)
	// Transactions: the read_committed bound, and the aborted
	// transactions of a range (segment.Log's).
	ReadStable(offset, maxBytes int64) (segment.Region, error)
	LastStableOffset() int64
	AbortedTxns(from, upTo int64, dst []producer.AbortedTxn) []producer.AbortedTxn
	Snapshot() segment.Snapshot
	LogStartOffset() int64
	LogEndOffset() int64
	HighWatermark() int64
	OffsetForTimestamp(ts int64) (segment.TimestampOffset, bool, error)
	Changed() <-chan struct{}
	Flush() error
	Close() error
}

// LogOpener opens (creating if needed) the log of a partition directory that
// recovery did not load (a new partition). The default is segment.Open. A
// *segment.Log it returns is registered with the log dir's recovery.DataDir
// (checkpoints, clean shutdown) and the cleaner; any other PartitionLog is
// flushed and closed by the server itself.
type LogOpener func(dir string, opts *segment.Options) (PartitionLog, error)

func openSegmentLog(dir string, opts *segment.Options) (PartitionLog, error) {
	l, err := segment.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return l, nil
}
