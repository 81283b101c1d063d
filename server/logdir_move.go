package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/internal/fsutil"
	"github.com/stratalog/strata/recovery"
	"github.com/stratalog/strata/segment"
)

// Moving a replica between a broker's log dirs (AlterReplicaLogDirs, Kafka's
// future logs and ReplicaAlterLogDirsThread). A move of partition tp to log
// dir D opens a future log D/<topic>-<partition>.<32 hex>-future, starting
// at the first batch of the current log, and a goroutine copies the current
// log's batches into it with their offsets (throttled by
// replica.alter.log.dirs.io.max.bytes.per.second). Once the copy has
// caught up, the swap holds the partition's append lock (movableLog.mu):
// it copies the last batches, gives the copy the current log start, flushes
// and closes it, renames it to D/<topic>-<partition>, reopens it there and
// makes it the partition's log; the old log is closed, renamed
// <dir>.<32 hex>-delete and removed after file.delete.delay.ms. Produce
// and fetch go on throughout; an append the old log acknowledged is copied
// before the swap, and no append reaches it after.
//
// The future log has a failure state of its own: an I/O error in D fails
// the move (its files are removed when D lets us) and the current replica
// serves on. A broker restarted mid-move finds the -future directory
// (recovery skips it), reopens it with a full scan and resumes the copy; a
// -future directory of a partition the broker no longer has is removed.
// AlterReplicaLogDirs for a replica the broker does not have yet records
// the dir: the replica is created there (reassignment with log_dirs).

// futureSuffix ends a future log's directory name (Kafka's).
const futureSuffix = "-future"

// moveChunkBytes is how much one copy step reads.
const moveChunkBytes = 1 << 20

// errMoveCancelled stops a move that another AlterReplicaLogDirs replaced.
var errMoveCancelled = errors.New("server: log dir move cancelled")

// logDirMoves is a broker's replica moves between its log dirs.
type logDirMoves struct {
	mu        sync.Mutex
	preferred map[recovery.TopicPartition]string // log dir for a replica not here yet
	active    map[recovery.TopicPartition]*logMove
	closed    bool
	quit      chan struct{} // closed at shutdown
	wg        sync.WaitGroup
	rate      atomic.Int64 // bytes per second; 0: unlimited
	static    int64        // replica.alter.log.dirs.io.max.bytes.per.second in server.properties
}

// setDynamicRate applies the dynamic broker config (cluster mode); n < 0
// (unset) goes back to the static value, 0 is unlimited.
func (d *logDirMoves) setDynamicRate(n int64) {
	if n < 0 {
		n = d.static
	}
	d.rate.Store(n)
}

func newLogDirMoves(rate int64) *logDirMoves {
	d := &logDirMoves{preferred: map[recovery.TopicPartition]string{}, active: map[recovery.TopicPartition]*logMove{},
		quit: make(chan struct{})}
	d.rate.Store(rate)
	d.static = rate
	return d
}

// logMove is one replica being copied to another log dir.
type logMove struct {
	tp        recovery.TopicPartition
	host      moveHost
	target    *recovery.DataDir
	mu        sync.Mutex // a copy step, or a truncation following the current log
	futureDir string
	future    *segment.Log
	stop      chan struct{} // closed to cancel
	done      chan struct{} // closed when the goroutine has ended
	err       error         // why it ended (nil: swapped in); read after done
}

// MoveInfo describes a replica move in progress.
type MoveInfo struct {
	Topic     string
	Partition int32
	Dir       string // the log dir it moves to
	FutureDir string
	Size      int64
	Lag       int64 // current log end offset minus the future log's
}

// futureMoves lists the moves in progress.
func (ts *topicStore) futureMoves() []MoveInfo {
	ts.moves.mu.Lock()
	mvs := make([]*logMove, 0, len(ts.moves.active))
	for _, mv := range ts.moves.active {
		mvs = append(mvs, mv)
	}
	ts.moves.mu.Unlock()
	out := make([]MoveInfo, 0, len(mvs))
	for _, mv := range mvs {
		mi := MoveInfo{Topic: mv.tp.Topic, Partition: mv.tp.Partition, Dir: mv.target.Dir(), FutureDir: mv.futureDir,
			Size: mv.future.Size()}
		if p := ts.partition(mv.tp.Topic, mv.tp.Partition); p != nil {
			mi.Lag = max(p.log.LogEndOffset()-mv.future.LogEndOffset(), 0)
		}
		out = append(out, mi)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// LogDirMoves returns the replica moves between log dirs in progress.
func (s *Server) LogDirMoves() []MoveInfo { return s.topics.futureMoves() }

// dirForNew is the log dir a new replica of tp goes to: the one
// AlterReplicaLogDirs named for it when online, else the emptiest.
func (ts *topicStore) dirForNew(tp recovery.TopicPartition) string {
	ts.moves.mu.Lock()
	d, ok := ts.moves.preferred[tp]
	delete(ts.moves.preferred, tp)
	ts.moves.mu.Unlock()
	if ok {
		if dd := ts.configuredDataDir(d); dd != nil && dd.Err() == nil {
			return dd.Dir()
		}
	}
	return ts.emptiestDir()
}

// configuredDataDir is the DataDir of a configured log dir (compared
// cleaned), nil when dir is not one.
func (ts *topicStore) configuredDataDir(dir string) *recovery.DataDir {
	if dir == "" {
		return nil
	}
	for _, dd := range ts.dataDirs {
		if filepath.Clean(dd.Dir()) == filepath.Clean(dir) {
			return dd
		}
	}
	return nil
}

// alterLogDir answers one partition of AlterReplicaLogDirs on a single node:
// the Kafka error code.
func (ts *topicStore) alterLogDir(topic string, part int32, dir string) int16 {
	if !filepath.IsAbs(dir) {
		return kerr.LogDirNotFound.Code
	}
	target := ts.configuredDataDir(dir)
	if target == nil {
		return kerr.LogDirNotFound.Code
	}
	if target.Err() != nil {
		return kerr.KafkaStorageError.Code
	}
	tp := recovery.TopicPartition{Topic: topic, Partition: part}
	p := ts.partition(topic, part)
	if p == nil {
		ts.moves.mu.Lock()
		ts.moves.preferred[tp] = target.Dir()
		ts.moves.mu.Unlock()
		return kerr.ReplicaNotAvailable.Code
	}
	m, ok := p.log.(*movableLog)
	if !ok {
		return kerr.KafkaStorageError.Code // a custom LogOpener's log cannot move
	}
	if p.offlineErr() != nil {
		return kerr.KafkaStorageError.Code
	}
	return ts.alterHostedLogDir(&nodeHost{ts: ts, p: p, m: m}, tp, target)
}

// alterHostedLogDir moves a replica the broker hosts to target (a
// configured, online log dir): the error code.
func (ts *topicStore) alterHostedLogDir(h moveHost, tp recovery.TopicPartition, target *recovery.DataDir) int16 {
	ts.moves.mu.Lock()
	old := ts.moves.active[tp]
	if old != nil && old.target == target {
		ts.moves.mu.Unlock()
		return 0 // already moving there
	}
	ts.moves.mu.Unlock()
	if old != nil {
		ts.cancelMove(old)
	}
	if filepath.Clean(filepath.Dir(h.current().Dir())) == filepath.Clean(target.Dir()) {
		return 0 // already there
	}
	if err := ts.startMove(h, tp, target, ""); err != nil {
		ts.log.Error("starting a replica move between log dirs", "topic", tp.Topic, "partition", tp.Partition, "dir", target.Dir(), "error", err)
		return kerr.KafkaStorageError.Code
	}
	return 0
}

// moveHost is the partition a move copies from and swaps into: a single
// node's movableLog (nodeHost) or a cluster replica (replicaHost).
type moveHost interface {
	current() *segment.Log
	// swap runs fn under the partition's append lock and makes the log
	// it returns the partition's log.
	swap(mv *logMove, fn func(cur *segment.Log) (*segment.Log, error)) error
	// swapped registers the new log with the cleaner.
	swapped(nl *segment.Log)
}

// nodeHost is a single node's partition.
type nodeHost struct {
	ts *topicStore
	p  *partition
	m  *movableLog
}

func (h *nodeHost) current() *segment.Log { return h.m.cur() }

func (h *nodeHost) swap(mv *logMove, fn func(cur *segment.Log) (*segment.Log, error)) error {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	nl, err := fn(h.m.cur())
	if err != nil {
		return err
	}
	h.m.loc.Store(&logLoc{log: nl, dd: mv.target, dir: nl.Dir()})
	return nil
}

func (h *nodeHost) swapped(*segment.Log) {
	if t := h.ts.get(h.p.topic); t != nil {
		h.ts.registerCleaner(t, h.p)
	}
}

// startMove opens the future log of p in target (futureDir: resume that
// directory; "": a new one) and starts copying into it.
func (ts *topicStore) startMove(h moveHost, tp recovery.TopicPartition, target *recovery.DataDir, futureDir string) error {
	src := h.current()
	opts := src.Options()
	// The future log has a failure state of its own (Health nil): an I/O
	// error in it fails the move, not the target log dir's other logs.
	opts.FS, opts.Health = ts.fs, nil
	opts.RecoveryPoint, opts.CleanShutdown = 0, false // a resumed copy is scanned in full
	opts.SaveCut = nil
	if futureDir == "" {
		futureDir = target.PartitionDir(tp) + "." + randomHex() + futureSuffix
		// The copy starts at the batch holding the log start (DeleteRecords
		// may have put it inside one); the swap sets the exact start.
		start := src.LogEndOffset()
		if r, err := src.Read(src.LogStartOffset(), 1); err == nil {
			if r.Len > 0 {
				start = r.FirstOffset
			}
			r.Release()
		}
		opts.LogStartOffset = start
	} else {
		opts.LogStartOffset = 0
	}
	if err := ts.fs.MkdirAll(futureDir, 0o755); err != nil {
		return err
	}
	future, err := segment.Open(futureDir, &opts)
	if err != nil {
		_ = ts.fs.RemoveAll(futureDir)
		return err
	}
	if err := ts.copyPartitionMetadata(src.Dir(), futureDir); err != nil {
		_ = future.Close()
		_ = ts.fs.RemoveAll(futureDir)
		return err
	}
	if err := ts.fs.SyncDir(target.Dir()); err != nil {
		_ = future.Close()
		_ = ts.fs.RemoveAll(futureDir)
		return err
	}
	mv := &logMove{tp: tp, host: h, target: target, futureDir: futureDir, future: future,
		stop: make(chan struct{}), done: make(chan struct{})}
	ts.moves.mu.Lock()
	if ts.moves.closed {
		ts.moves.mu.Unlock()
		_ = future.Close()
		return ErrClosed
	}
	ts.moves.active[tp] = mv
	ts.moves.wg.Add(1)
	ts.moves.mu.Unlock()
	ts.log.Info("replica move to another log dir started", "topic", tp.Topic, "partition", tp.Partition,
		"from", src.Dir(), "future", futureDir, "log_end_offset", src.LogEndOffset())
	go ts.runMove(mv)
	return nil
}

// cancelMove stops a move and waits for it to end (its future log is
// removed).
func (ts *topicStore) cancelMove(mv *logMove) {
	select {
	case <-mv.stop:
	default:
		close(mv.stop)
	}
	<-mv.done
}

// runMove copies until the future log has caught up, then swaps it in.
func (ts *topicStore) runMove(mv *logMove) {
	defer ts.moves.wg.Done()
	defer close(mv.done)
	err := ts.copyAndSwap(mv)
	ts.moves.mu.Lock()
	if ts.moves.active[mv.tp] == mv {
		delete(ts.moves.active, mv.tp)
	}
	ts.moves.mu.Unlock()
	mv.err = err
	if err == nil {
		return
	}
	_ = mv.future.Close()
	if errors.Is(err, ErrClosed) {
		// Shutdown: the -future directory stays, the move resumes at the
		// next start.
		return
	}
	if rmErr := ts.fs.RemoveAll(mv.futureDir); rmErr != nil {
		ts.log.Warn("removing the future log of a failed move", "dir", mv.futureDir, "error", rmErr)
	}
	if errors.Is(err, errMoveCancelled) {
		ts.log.Info("replica move between log dirs cancelled", "topic", mv.tp.Topic, "partition", mv.tp.Partition, "future", mv.futureDir)
		return
	}
	ts.log.Error("replica move between log dirs failed: the current replica serves on", "topic", mv.tp.Topic,
		"partition", mv.tp.Partition, "future", mv.futureDir, "error", err)
}

func (ts *topicStore) copyAndSwap(mv *logMove) error {
	var buf []byte
	began, copied := time.Now(), int64(0)
	for {
		select {
		case <-mv.stop:
			return errMoveCancelled
		default:
		}
		select {
		case <-ts.moves.quit:
			return ErrClosed
		default:
		}
		src := mv.host.current()
		if err := src.Err(); err != nil {
			return fmt.Errorf("current log: %w", err)
		}
		chunk := int64(moveChunkBytes)
		if rate := ts.moves.rate.Load(); rate > 0 {
			chunk = min(chunk, max(rate/10, 1)) // a tenth of a second's worth
		}
		mv.mu.Lock()
		n, err := copyStep(src, mv.future, &buf, chunk)
		mv.mu.Unlock()
		if err != nil {
			return err
		}
		if n == 0 {
			if caughtUp := mv.future.LogEndOffset() >= src.LogEndOffset(); caughtUp {
				return ts.swapIn(mv)
			}
		}
		copied += int64(n)
		if rate := ts.moves.rate.Load(); rate > 0 && n > 0 {
			due := began.Add(time.Duration(float64(copied) / float64(rate) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-mv.stop:
					t.Stop()
					return errMoveCancelled
				case <-ts.moves.quit:
					t.Stop()
					return ErrClosed
				}
			}
		}
		if n == 0 {
			// Caught up to a moment ago: wait for an append (or a poll
			// tick, the swap needs the lock the next time round).
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-src.Changed():
			case <-t.C:
			case <-mv.stop:
				t.Stop()
				return errMoveCancelled
			case <-ts.moves.quit:
				t.Stop()
				return ErrClosed
			}
			t.Stop()
		}
	}
}

// copyStep copies the batches after the future log's end (up to
// chunk bytes, at least one batch) and returns the bytes copied. Records the current log
// deleted below the future's end (retention) are not a problem; a log start
// above it (the copy fell behind retention) starts the copy over there.
func copyStep(src, future *segment.Log, buf *[]byte, chunk int64) (int, error) {
	off := future.LogEndOffset()
	if start := src.LogStartOffset(); off < start {
		r, err := src.Read(start, 1)
		if err != nil {
			return 0, fmt.Errorf("current log: %w", err)
		}
		base := r.FirstOffset
		r.Release()
		if err := future.TruncateTo(base); err != nil { // below its start: empties it and starts at base
			return 0, fmt.Errorf("future log: %w", err)
		}
		off = future.LogEndOffset()
	}
	if off >= src.LogEndOffset() {
		return 0, nil
	}
	var b []byte
	for {
		r, err := src.Read(off, chunk)
		if err != nil {
			return 0, fmt.Errorf("current log: %w", err)
		}
		b, err = r.ReadInto((*buf)[:0])
		r.Release()
		if err != nil {
			return 0, fmt.Errorf("current log: %w", err)
		}
		*buf = b
		// A region may end inside a batch (maxBytes cuts it, as a fetch
		// does): copy the whole batches, or read again for the first.
		whole, need := leadingBatches(b)
		if whole > 0 || len(b) == 0 {
			b = b[:whole]
			break
		}
		if need <= chunk {
			return 0, fmt.Errorf("current log: unreadable batch header at offset %d", off)
		}
		chunk = need
	}
	if len(b) == 0 {
		return 0, nil
	}
	if _, err := future.AppendAssigned(b); err != nil {
		return 0, fmt.Errorf("future log: %w", err)
	}
	return len(b), nil
}

// swapIn makes the caught-up future log the partition's log, under the
// partition's append lock.
func (ts *topicStore) swapIn(mv *logMove) error {
	var old *segment.Log
	var final string
	err := mv.host.swap(mv, func(src *segment.Log) (*segment.Log, error) {
		mv.mu.Lock()
		defer mv.mu.Unlock()
		var buf []byte
		for mv.future.LogEndOffset() < src.LogEndOffset() {
			if _, err := copyStep(src, mv.future, &buf, moveChunkBytes); err != nil {
				return nil, err
			}
		}
		if s := src.LogStartOffset(); s > mv.future.LogStartOffset() {
			if err := mv.future.SetLogStartOffset(s); err != nil {
				return nil, fmt.Errorf("future log: %w", err)
			}
		}
		if err := mv.future.Flush(); err != nil {
			return nil, fmt.Errorf("future log: %w", err)
		}
		end, start := mv.future.LogEndOffset(), mv.future.LogStartOffset()
		if err := mv.future.Close(); err != nil {
			return nil, fmt.Errorf("future log: %w", err)
		}
		final = mv.target.PartitionDir(mv.tp)
		if err := ts.fs.Rename(mv.futureDir, final); err != nil {
			return nil, fmt.Errorf("future log: rename to %s: %w", final, err)
		}
		undo := func(cause error) (*segment.Log, error) {
			if err := ts.fs.Rename(final, mv.futureDir); err != nil {
				ts.log.Error("moving a failed future log back to its -future name", "dir", final, "error", err)
			}
			return nil, cause
		}
		if err := ts.fs.SyncDir(mv.target.Dir()); err != nil {
			return undo(fmt.Errorf("future log: %w", err))
		}
		opts := src.Options()
		opts.FS, opts.Health = ts.fs, mv.target.Health()
		opts.RecoveryPoint, opts.LogStartOffset, opts.SaveCut = end, start, nil
		nl, err := segment.Open(final, &opts)
		if err != nil {
			return undo(fmt.Errorf("future log: reopen %s: %w", final, err))
		}
		if err := mv.target.AddLog(mv.tp, nl); err != nil {
			_ = nl.Close()
			return undo(fmt.Errorf("future log: %w", err))
		}
		// The copy is the partition's log from here on.
		if ts.cleaner != nil {
			ts.cleaner.Unregister(mv.tp)
		}
		for _, dd := range ts.dataDirs {
			if dd != mv.target && dd.Log(mv.tp) == src {
				dd.RemoveLog(mv.tp)
			}
		}
		old = src
		return nl, nil
	})
	if err != nil {
		return err
	}
	nl := mv.host.current()
	mv.host.swapped(nl)
	if err := old.Close(); err != nil {
		ts.log.Warn("closing the replaced log", "dir", old.Dir(), "error", err)
	}
	if err := ts.retireDir(old.Dir()); err != nil {
		ts.log.Error("the replaced log's directory stays: remove it by hand", "dir", old.Dir(), "error", err)
	}
	for _, dd := range []*recovery.DataDir{ts.dataDirOf(filepath.Dir(old.Dir())), mv.target} {
		if err := dd.WriteCheckpoints(); err != nil && !errors.Is(err, recovery.ErrClosed) {
			ts.log.Warn("writing checkpoints after a replica move", "dir", dd.Dir(), "error", err)
		}
	}
	ts.log.Info("replica moved to another log dir", "topic", mv.tp.Topic, "partition", mv.tp.Partition,
		"from", old.Dir(), "to", final, "log_end_offset", nl.LogEndOffset())
	return nil
}

// copyPartitionMetadata copies partition.metadata (the topic id) into the
// future log's directory; none to copy is fine.
func (ts *topicStore) copyPartitionMetadata(from, to string) error {
	b, err := readFile(ts.fs, filepath.Join(from, PartitionMetadataFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(ts.fs, filepath.Join(to, PartitionMetadataFile), b)
}

// moveTruncated follows a truncation of tp's current log (a follower cut
// it to l's end) into a future copy beyond it: the copied tail is cut too.
// Called under the partition's role lock, so no append follows before.
func (ts *topicStore) moveTruncated(tp recovery.TopicPartition, l *segment.Log) {
	ts.moves.mu.Lock()
	mv := ts.moves.active[tp]
	ts.moves.mu.Unlock()
	if mv == nil {
		return
	}
	mv.mu.Lock()
	defer mv.mu.Unlock()
	if end := l.LogEndOffset(); mv.future.LogEndOffset() > end {
		if err := mv.future.TruncateTo(end); err != nil {
			ts.log.Error("truncating the future log with its replica", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		}
	}
}

// resumeMoves runs at start, after the partitions are open: every -future
// directory of a partition the broker has resumes its move; the others are
// removed.
func (ts *topicStore) resumeMoves() {
	ts.resumeFutureDirs(ts.log, func(tp recovery.TopicPartition, dd *recovery.DataDir) moveHost {
		p := ts.partition(tp.Topic, tp.Partition)
		if p == nil {
			return nil
		}
		m, _ := p.log.(*movableLog)
		if m == nil || m.loc.Load().dd == dd {
			return nil
		}
		return &nodeHost{ts: ts, p: p, m: m}
	})
}

// resumeFutureDirs walks the -future directories of the online log dirs:
// the move of each resumes on the host hostOf gives for its partition and
// target dir; one with no host (a partition not here, or already in that
// dir) or a name that does not parse is removed.
func (ts *topicStore) resumeFutureDirs(log *slog.Logger, hostOf func(recovery.TopicPartition, *recovery.DataDir) moveHost) {
	for _, dd := range ts.dataDirs {
		if dd.Err() != nil {
			continue
		}
		for _, name := range subdirs(ts.fs, dd.Dir()) {
			if !strings.HasSuffix(name, futureSuffix) {
				continue
			}
			path := filepath.Join(dd.Dir(), name)
			var h moveHost
			tp, ok := parseFutureDir(name)
			if ok {
				h = hostOf(tp, dd)
			}
			if h == nil {
				log.Warn("removing a future log of a partition this broker does not have here", "dir", path)
				if err := ts.fs.RemoveAll(path); err != nil {
					log.Error("removing a stale future log", "dir", path, "error", err)
				}
				continue
			}
			if err := ts.startMove(h, tp, dd, path); err != nil {
				log.Error("resuming a replica move between log dirs", "dir", path, "error", err)
			}
		}
	}
}

// parseFutureDir splits "<topic>-<partition>.<hex>-future".
func parseFutureDir(name string) (recovery.TopicPartition, bool) {
	base := strings.TrimSuffix(name, futureSuffix)
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return recovery.TopicPartition{}, false
	}
	return recovery.ParsePartitionDir(base[:i])
}

// stopMoves stops every move at shutdown (before the logs close); their
// -future directories stay for the next start.
func (ts *topicStore) stopMoves() {
	ts.moves.mu.Lock()
	if !ts.moves.closed {
		ts.moves.closed = true
		close(ts.moves.quit)
	}
	ts.moves.mu.Unlock()
	ts.moves.wg.Wait()
}

// cancelMovesOf cancels the moves of a topic's partitions (it is being
// deleted).
func (ts *topicStore) cancelMovesOf(topic string) {
	ts.moves.mu.Lock()
	var mvs []*logMove
	for tp, mv := range ts.moves.active {
		if tp.Topic == topic {
			mvs = append(mvs, mv)
		}
	}
	ts.moves.mu.Unlock()
	for _, mv := range mvs {
		ts.cancelMove(mv)
	}
}

// leadingBatches is the length of b's leading whole record batches, and when
// there is none, the size of the first one (0 when even its header is cut).
func leadingBatches(b []byte) (whole int, first int64) {
	const header = 12 // base offset, batch length
	for len(b)-whole >= header {
		n := int64(binary.BigEndian.Uint32(b[whole+8:whole+12])) + header
		if n < header+1 || int64(len(b)-whole) < n {
			if whole == 0 {
				return 0, n
			}
			return whole, 0
		}
		whole += int(n)
	}
	return whole, 0
}
