package segment

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/producer"
)

// Log is one partition directory: an ordered list of segments, the last of which
// (the active segment) takes appends.
//
// Concurrency: appends, rolls, truncation and deletions take the writer lock.
// Readers never take it: they load the current segment list (an immutable
// snapshot, replaced copy-on-write by the writer) and reference-count the segment
// they read, so a deleted segment stays readable for whoever still holds it.
type Log struct {
	dir string
	o   *Options
	fs  vfs.FS

	mu     sync.Mutex // the writer lock
	segs   atomic.Pointer[segList]
	next   atomic.Int64 // log end offset
	hw     atomic.Int64 // high watermark: the end of the appends that have returned
	start  atomic.Int64 // log start offset
	closed atomic.Bool
	health *Health // shared by the logs of one directory; failed: offline

	// hwMu orders the high watermark raise after an append's fsync (outside
	// the writer lock) with truncation, which lowers next, hw and flushed.
	hwMu sync.Mutex
	// awaitFlush is the end of the last append that waits for an fsync
	// (flush.messages): while flushed is below it, later appends wait for
	// a flush too instead of raising the high watermark over it.
	awaitFlush atomic.Int64

	// Directory syncs (log_dirsync.go): dirGen counts changes of the
	// directory's entries that must become durable (a roll's new files,
	// retention's renames), dirSynced the count the last SyncDir covered.
	dirMu     sync.Mutex
	dirGen    atomic.Int64
	dirSynced atomic.Int64

	// testHook, set by tests before use, runs at named points of an
	// operation ("appended", "flushed": see append).
	testHook func(stage string)

	flushMu     sync.Mutex   // one fsync at a time (group commit)
	flushed     atomic.Int64 // everything below is durable: the recovery point
	lastFlushMs atomic.Int64
	flushMs     atomic.Int64   // flush.ms, read by the flusher (Reconfigure changes it)
	stopFlusher chan struct{}  // set under mu once a flusher runs
	bg          sync.WaitGroup // background flushes and delayed deletions
	pendingMu   sync.Mutex
	pendingDel  map[*Segment]*time.Timer
	notifyMu    sync.Mutex
	notify      chan struct{}
	hasWaiters  atomic.Bool

	// Producer state (log_producers.go), under the writer lock: ps follows
	// every stored batch; pbatches are the producer batches of the append
	// being made.
	ps            *producer.State
	pbatches      []producer.Batch
	firstUnstable atomic.Int64 // first offset of the oldest open transaction, -1: none
	// psDirty: producer batches were appended, or the log truncated, since
	// Open or the last snapshot; Close writes one only then (a log opened
	// and closed unchanged, by an offline tool's dry run, keeps its files).
	psDirty bool
}

// background runs task through Options.Go; Close waits for it.
func (l *Log) background(task func()) {
	l.bg.Add(1)
	l.o.Go(func() {
		defer l.bg.Done()
		task()
	})
}

// segList is an immutable snapshot of the segments, oldest first.
type segList struct {
	segs []*Segment
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Options returns the effective options (defaults filled).
func (l *Log) Options() Options {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.o
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.next.Load() }

// HighWatermark is the end of the appends that have returned: what a
// consumer may read. It trails LogEndOffset only while an append waits for
// the fsync that flush.messages asks for, so that (as in Kafka, where the
// flush is part of the append and the high watermark moves after it)
// consumers never see a record a crash could still take back.
func (l *Log) HighWatermark() int64 { return l.hw.Load() }

// Err is nil while the log is usable, else the error (wrapping ErrOffline
// and the cause) that took its directory offline; see Health.
func (l *Log) Err() error { return l.health.Err() }

// Health is the failure state the log shares with its directory.
func (l *Log) Health() *Health { return l.health }

// fail takes the log's directory offline because of cause, an I/O error the
// operation could not undo, and returns the error the operation returns
// (ErrOffline wrapping cause). The first failure of a directory is logged
// here when nobody else watches the Health (a data directory logs it
// itself).
func (l *Log) fail(cause error) error {
	err, first := l.health.fail(cause)
	if first {
		if l.health.onFail == nil {
			l.o.Logger.Error("log offline after an I/O error: no more appends, flushes or checkpoints until it is repaired",
				"dir", l.dir, "err", cause)
		}
		l.wake()
	}
	if !errors.Is(cause, ErrOffline) {
		err = fmt.Errorf("%w: %w", ErrOffline, cause)
	}
	return err
}

// failIO is fail for an error of an I/O operation, passing through nil and
// errors that are not I/O errors (an offline log's own error).
func (l *Log) failIO(err error) error {
	if err == nil || errors.Is(err, ErrOffline) {
		return err
	}
	return l.fail(err)
}

// hook runs the test hook, if any.
func (l *Log) hook(stage string) {
	if l.testHook != nil {
		l.testHook(stage)
	}
}

// raiseHighWatermark moves the high watermark up to end (never past the log
// end, which a truncation meanwhile may have lowered) and wakes waiters. The
// caller holds the writer lock or hwMu, either of which excludes truncation.
func (l *Log) raiseHighWatermark(end int64) {
	if l.health.Err() != nil {
		return // nothing moves past a failed write
	}
	end = min(end, l.next.Load())
	for {
		cur := l.hw.Load()
		if cur >= end {
			return
		}
		if l.hw.CompareAndSwap(cur, end) {
			l.wake()
			return
		}
	}
}

// LogStartOffset is the first offset readable.
func (l *Log) LogStartOffset() int64 { return l.start.Load() }

// FlushedOffset is the recovery point: every offset below it is on stable storage.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// Segments returns the current segment list, oldest first. The slice is shared
// and must not be modified.
func (l *Log) Segments() []*Segment { return l.segs.Load().segs }

// Size is the total bytes of all segment files.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.Segments() {
		n += s.Size()
	}
	return n
}

// active returns the active segment (writer lock held).
func (l *Log) active() *Segment {
	s := l.segs.Load().segs
	return s[len(s)-1]
}

// locate returns the index of the segment holding off: the last segment whose
// base is <= off (0 when off is below every base).
func locate(segs []*Segment, off int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > off })
	if i > 0 {
		i--
	}
	return i
}

// Changed returns a channel closed when the high watermark next moves (or on
// truncation or close).
// It allocates only when someone waits.
func (l *Log) Changed() <-chan struct{} {
	l.notifyMu.Lock()
	defer l.notifyMu.Unlock()
	if l.notify == nil {
		l.notify = make(chan struct{})
		l.hasWaiters.Store(true)
	}
	return l.notify
}

func (l *Log) wake() {
	if !l.hasWaiters.Load() {
		return
	}
	l.notifyMu.Lock()
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
		l.hasWaiters.Store(false)
	}
	l.notifyMu.Unlock()
}

// Close flushes the log, closes every segment and stops background work. Readers
// must have released their regions; pending deletions are carried out now.
// An offline log (see Health) is closed without writing anything: no flush,
// no trim, no pending deletion; Close returns its error.
func (l *Log) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopFlusher != nil { // under mu: Reconfigure may have just started one
		close(l.stopFlusher)
	}
	err := l.Flush()
	if err == nil {
		err = l.syncDir() // a roll with nothing appended after it
	}
	l.pendingMu.Lock()
	for s, t := range l.pendingDel {
		if t.Stop() {
			delete(l.pendingDel, s)
			if l.health.Err() == nil {
				l.finishDelete(s)
			} else {
				l.dropRef(s)
			}
			l.bg.Done()
		}
	}
	l.pendingMu.Unlock()
	l.bg.Wait()
	segs := l.segs.Load().segs
	if len(segs) > 0 && l.health.Err() == nil && l.ps != nil && l.psDirty {
		if e := l.writeSnapshot(l.next.Load(), true); e != nil && err == nil {
			err = l.fail(e)
		}
	}
	if len(segs) > 0 && l.health.Err() == nil {
		// The trim seal makes must be durable before the broker writes its
		// clean-shutdown marker, or a power loss after a clean stop would
		// bring the untrimmed (zero-padded) indexes back behind the marker.
		if e := segs[len(segs)-1].seal(); e != nil && err == nil {
			err = l.fail(e)
		} else if e == nil {
			if e := segs[len(segs)-1].flush(true); e != nil && err == nil {
				err = l.fail(e)
			}
		}
	}
	if herr := l.health.Err(); herr != nil && err == nil {
		err = herr
	}
	for _, s := range segs {
		if s.refs.Add(-1) == 0 {
			if e := s.closeFiles(); e != nil && err == nil {
				err = e
			}
		}
	}
	l.wake()
	if err != nil {
		return fmt.Errorf("segment: close %s: %w", l.dir, err)
	}
	return nil
}
