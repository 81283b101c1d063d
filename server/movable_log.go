package server

import (
	"sync"
	"sync/atomic"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// movableLog is a single node's partition log behind one indirection, so
// AlterReplicaLogDirs can swap it for its copy in another log dir (Kafka's
// Partition.futureLog replacing Partition.log) while produce and fetch go
// on. Appends and log-start changes hold mu shared; the swap holds it
// exclusively, so no append lands in the old log after its tail was copied.
// Reads load the current log without a lock: one that loaded the old log
// just before a swap reads the same offsets from it (it is closed only
// after file.delete.delay.ms).
type movableLog struct {
	mu  sync.RWMutex
	loc atomic.Pointer[logLoc]
}

// logLoc is where a partition's log lives.
type logLoc struct {
	log *segment.Log
	dd  *recovery.DataDir
	dir string
}

func newMovableLog(l *segment.Log, dd *recovery.DataDir) *movableLog {
	m := &movableLog{}
	m.loc.Store(&logLoc{log: l, dd: dd, dir: l.Dir()})
	return m
}

func (m *movableLog) cur() *segment.Log { return m.loc.Load().log }

func (m *movableLog) Append(buf []byte) (segment.AppendInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cur().Append(buf)
}

func (m *movableLog) Read(offset, maxBytes int64) (segment.Region, error) {
	return m.cur().Read(offset, maxBytes)
}

func (m *movableLog) ReadToHighWatermark(offset, maxBytes int64) (segment.Region, error) {
	return m.cur().ReadToHighWatermark(offset, maxBytes)
}

func (m *movableLog) ReadStable(offset, maxBytes int64) (segment.Region, error) {
	return m.cur().ReadStable(offset, maxBytes)
}

func (m *movableLog) LastStableOffset() int64 { return m.cur().LastStableOffset() }

func (m *movableLog) AbortedTxns(from, upTo int64, dst []producer.AbortedTxn) []producer.AbortedTxn {
	return m.cur().AbortedTxns(from, upTo, dst)
}

func (m *movableLog) Snapshot() segment.Snapshot { return m.cur().Snapshot() }
func (m *movableLog) LogStartOffset() int64      { return m.cur().LogStartOffset() }
func (m *movableLog) LogEndOffset() int64        { return m.cur().LogEndOffset() }
func (m *movableLog) HighWatermark() int64       { return m.cur().HighWatermark() }
func (m *movableLog) Size() int64                { return m.cur().Size() }
func (m *movableLog) Err() error                 { return m.cur().Err() }
func (m *movableLog) Changed() <-chan struct{}   { return m.cur().Changed() }
func (m *movableLog) Flush() error               { return m.cur().Flush() }
func (m *movableLog) Close() error               { return m.cur().Close() }

func (m *movableLog) OffsetForTimestamp(ts int64) (segment.TimestampOffset, bool, error) {
	return m.cur().OffsetForTimestamp(ts)
}

// SetLogStartOffset is DeleteRecords' (shared with appends: a swap copies
// the log start it finds).
func (m *movableLog) SetLogStartOffset(off int64) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cur().SetLogStartOffset(off)
}

// Reconfigure applies a topic's new configs (under the swap lock: the copy
// is reopened with the options of the log it replaces).
func (m *movableLog) Reconfigure(o segment.Options) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cur().Reconfigure(o)
}

// segmentLogOf is the *segment.Log behind a partition log (a movableLog's
// current one), if any.
func segmentLogOf(pl PartitionLog) (*segment.Log, bool) {
	switch l := pl.(type) {
	case *segment.Log:
		return l, true
	case *movableLog:
		return l.cur(), true
	}
	return nil, false
}

// dataDir is the DataDir holding the partition's log now (it changes when a
// move to another log dir completes).
func (p *partition) dataDir() *recovery.DataDir {
	if m, ok := p.log.(*movableLog); ok {
		return m.loc.Load().dd
	}
	return p.dd
}

// logDir is the partition's directory now.
func (p *partition) logDir() string {
	if m, ok := p.log.(*movableLog); ok {
		return m.loc.Load().dir
	}
	return p.dir
}
