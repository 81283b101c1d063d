package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/segment"
)

// Role is what a broker is for a partition.
type Role uint8

// Roles.
const (
	// RoleNone: not (or no longer) a replica told what to do: it neither
	// takes produce nor fetches (before the first LeaderAndIsr, after
	// StopReplica).
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// PartitionState is one partition's part of a LeaderAndIsr request.
type PartitionState struct {
	ControllerEpoch int32
	Leader          int32
	LeaderEpoch     int32
	ISR             []int32
	// PartitionEpoch is the state znode's version (LeaderAndIsr's
	// ZKVersion): AlterPartition must name it.
	PartitionEpoch int32
	Replicas       []int32
	IsNew          bool
}

// Partition is one partition's replication state over its log and
// leader-epoch cache: leader or follower, the ISR, the high watermark, the
// followers' progress (leader) or the fetch state (follower).
//
// Methods take the time (milliseconds) as an argument, never wait for
// anything but the log's own I/O and start no goroutine. They are safe for
// concurrent use: appends and follower fetches run concurrently (a shared
// lock), role changes and follower-side writes exclusively.
type Partition struct {
	tp     TopicPartition
	cfg    *Config
	logger *slog.Logger
	fs     vfs.FS

	// roleMu is held shared by leader appends and fetch serving, and
	// exclusively by whatever changes the role or rewrites the log (become
	// leader or follower, stop, follower appends and truncations), so no
	// append of an old leadership lands after the log was truncated for a
	// new one.
	roleMu sync.RWMutex
	// mu guards the fields below it.
	mu sync.Mutex

	log    *segment.Log
	epochs *EpochCache

	role            Role
	leader          int32
	leaderEpoch     int32
	partitionEpoch  int32
	controllerEpoch int32
	replicas        []int32
	isr             isrState
	proposals       uint64          // numbers ISR proposals; never reset
	remotes         []remoteReplica // leader: the other assigned replicas, by id
	hw              int64
	epochStart      int64  // leader: its log end offset when its epoch began
	gen             uint64 // counts leaderships lost: a produce waiter's fence
	failed          error  // a storage error: no replication until the next LeaderAndIsr
	fetch           fetchState
	notify          chan struct{}
	reopen          func(startAt int64) (*segment.Log, error)
	onChange        func() // tells the Manager new work may be due
}

// remoteReplica is the leader's view of a follower (Kafka's Replica).
type remoteReplica struct {
	id                 int32
	leo                int64 // its last fetch offset; -1 unknown
	logStart           int64
	lastCaughtUpMs     int64
	lastFetchLeaderLEO int64 // the leader's log end offset at its previous fetch
	lastFetchMs        int64
}

// newPartition loads a partition over an open log: the leader-epoch cache
// (rebuilt from the batches when the checkpoint is missing or malformed,
// completed from the batches above the log's recovery point otherwise, and
// clamped to the log), and the high watermark from the checkpointed value
// (clamped to [log start, log end]; 0 when none was checkpointed).
func newPartition(tp TopicPartition, l *segment.Log, checkpointedHW int64, cfg *Config) (*Partition, error) {
	p := &Partition{
		tp:              tp,
		cfg:             cfg,
		logger:          cfg.Logger.With("topic", tp.Topic, "partition", tp.Partition),
		fs:              l.Options().FS,
		log:             l,
		leader:          -1,
		leaderEpoch:     -1,
		partitionEpoch:  -1,
		controllerEpoch: -1,
		epochStart:      -1,
	}
	if err := p.loadEpochs(); err != nil {
		return nil, err
	}
	p.hw = min(max(checkpointedHW, l.LogStartOffset()), l.LogEndOffset())
	return p, nil
}

// loadEpochs opens the epoch cache and makes it agree with the log: clamped
// to the log's offsets, each entry checked against the batch it names, and
// completed (or rebuilt) from the batches.
//
// A power loss can leave the durable checkpoint ahead of the durable log in
// two ways: an entry whose records were lost (it may now start below the log
// end, the log having lost part of the tail), and, since a truncation is not
// durable until the file is synced, a truncated tail of older epochs back in
// the log under entries that came after the truncation. Either would make
// the cache answer a leader's diverging-epoch check for records the log does
// not hold, and the divergence would go unnoticed; so the cache is cut at
// the first entry whose start does not hold a batch of its epoch, and the
// batches from there fill it again (Kafka's recovery adds the epochs of the
// batches it scans the same way).
func (p *Partition) loadEpochs() error {
	c, err := OpenEpochCache(p.fs, p.log.Dir())
	scanFrom := p.log.FlushedOffset() // the recovery point: batches above it were just scanned by Open
	if err != nil {
		if c == nil {
			return err
		}
		p.logger.Warn("leader-epoch-checkpoint unreadable, rebuilding it from the log", "err", err)
		scanFrom = p.log.LogStartOffset()
	} else if _, statErr := p.fs.Stat(c.Path()); statErr != nil {
		scanFrom = p.log.LogStartOffset() // no checkpoint yet: a log from before replication, or a new one
	}
	p.epochs = c
	if err := c.TruncateFromEnd(p.log.LogEndOffset()); err != nil {
		return err
	}
	if err := c.TruncateFromStart(p.log.LogStartOffset()); err != nil {
		return err
	}
	// Moving the log start cuts the cache at once but reaches the
	// log-start-offset-checkpoint only at its next write: after a crash the
	// log may start below the first entry again, with batches of epochs the
	// cache no longer knows. A leader would answer a follower's older epoch
	// as ending at the first entry and miss a divergence below it; rebuild
	// the cache from the log start then.
	if es := c.Entries(); len(es) > 0 && es[0].StartOffset > p.log.LogStartOffset() {
		below, err := p.epochBatchBelow(es[0].StartOffset)
		if err != nil {
			return err
		}
		if below {
			p.logger.Warn("the log starts below leader-epoch-checkpoint: rebuilding it from the log start", "log_start", p.log.LogStartOffset(), "epochs", es)
			if err := c.Clear(); err != nil {
				return err
			}
			scanFrom = p.log.LogStartOffset()
		}
	}
	if latest, ok := c.Latest(); ok && latest.StartOffset > scanFrom {
		scanFrom = latest.StartOffset
	}
	bad, err := p.firstWrongEpoch()
	if err != nil {
		return err
	}
	if bad >= 0 {
		p.logger.Warn("leader-epoch-checkpoint names records the log does not hold: rebuilding it from there", "offset", bad, "epochs", c.Entries())
		if err := c.TruncateFromEnd(bad); err != nil {
			return err
		}
		scanFrom = min(scanFrom, bad)
	}
	return p.scanEpochs(scanFrom)
}

// epochBatchBelow tells whether a batch with a leader epoch starts between
// the log start and end.
func (p *Partition) epochBatchBelow(end int64) (bool, error) {
	var buf []byte
	for off := p.log.LogStartOffset(); off < end; {
		r, err := p.log.Read(off, 64<<10)
		if err != nil {
			return false, fmt.Errorf("%w: checking leader epochs of %s: %w", ErrStorage, p.log.Dir(), err)
		}
		if r.Len == 0 {
			r.Release()
			return false, nil
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			return false, fmt.Errorf("%w: checking leader epochs of %s: %w", ErrStorage, p.log.Dir(), err)
		}
		next := off
		it := record.NewIterator(buf, record.ScanOptions{})
		for it.Next() {
			h := it.Header()
			if h.Offset >= end {
				return false, nil
			}
			if h.Magic == 2 && it.Batch().PartitionLeaderEpoch() >= 0 {
				return true, nil
			}
			next = h.LastOffset + 1
		}
		if next <= off {
			return false, nil
		}
		off = next
	}
	return false, nil
}

// firstWrongEpoch returns the start offset of the first cache entry whose
// first batch (the one holding the start offset, or the next) is of another
// epoch, -1 when all agree. An entry whose range holds no batch (compacted
// away) is not checked.
func (p *Partition) firstWrongEpoch() (int64, error) {
	es := p.epochs.Entries()
	var hdr [record.BatchHeaderSize]byte
	for i, e := range es {
		r, err := p.log.Read(e.StartOffset, 1)
		if err != nil {
			return -1, fmt.Errorf("%w: checking leader epochs of %s: %w", ErrStorage, p.log.Dir(), err)
		}
		if r.Len < record.BatchHeaderSize {
			r.Release()
			if r.Len == 0 {
				return e.StartOffset, nil // nothing at or after the start: no batch of this epoch
			}
			continue // a legacy message
		}
		_, err = r.File.ReadAt(hdr[:], r.Pos)
		r.Release()
		if err != nil {
			return -1, fmt.Errorf("%w: checking leader epochs of %s: %w", ErrStorage, p.log.Dir(), err)
		}
		b := record.Batch(hdr[:])
		if b.Magic() != 2 || i+1 < len(es) && b.BaseOffset() >= es[i+1].StartOffset {
			continue
		}
		if b.PartitionLeaderEpoch() != e.Epoch {
			return e.StartOffset, nil
		}
	}
	return -1, nil
}

// scanEpochs adds the epochs of the batches from offset from to the log end
// that the cache does not know (newer than its latest), as Kafka's recovery
// does for the segments it scans.
func (p *Partition) scanEpochs(from int64) error {
	var buf []byte
	end := p.log.LogEndOffset()
	for off := max(from, p.log.LogStartOffset()); off < end; {
		r, err := p.log.Read(off, 64<<10)
		if err != nil {
			return fmt.Errorf("%w: scanning %s for leader epochs: %w", ErrStorage, p.log.Dir(), err)
		}
		if r.Len == 0 {
			r.Release()
			return nil
		}
		buf, err = r.ReadInto(buf)
		r.Release()
		if err != nil {
			return fmt.Errorf("%w: scanning %s for leader epochs: %w", ErrStorage, p.log.Dir(), err)
		}
		next := off
		it := record.NewIterator(buf, record.ScanOptions{})
		for it.Next() {
			h := it.Header()
			if h.Magic == 2 {
				if e := it.Batch().PartitionLeaderEpoch(); e > p.epochs.LatestEpoch() {
					if _, err := p.epochs.Assign(e, h.Offset); err != nil {
						return err
					}
				}
			}
			next = h.LastOffset + 1
		}
		if next <= off {
			// A region whose first entry is cut short cannot happen (Read
			// returns it whole); stop rather than spin.
			return nil
		}
		off = next
	}
	return nil
}

// TopicPartition is the partition's name.
func (p *Partition) TopicPartition() TopicPartition { return p.tp }

// Log is the partition's log. It changes only when a follower that fell
// behind the leader's log start offset starts its log over there, and when
// SwapLog moves it to another log dir.
func (p *Partition) Log() *segment.Log {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log
}

// Role is the partition's current role.
func (p *Partition) Role() Role {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.role
}

// Leader is the current leader's broker id (-1 when unknown).
func (p *Partition) Leader() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader
}

// LeaderEpoch is the current leader epoch (-1 before the first LeaderAndIsr).
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaderEpoch
}

// PartitionEpoch is the partition state's version the ISR was last read at.
func (p *Partition) PartitionEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.partitionEpoch
}

// ISR is the committed in-sync replica set (leader only; empty otherwise).
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.isr.committed)
}

// InSync tells whether broker id is in the committed ISR (Kafka's
// isReplicaInSync: a replica the leader throttle never holds back).
func (p *Partition) InSync(id int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.isr.committed, id)
}

// MaximalISR is the ISR the high watermark and acks=-1 count: the committed
// one plus a member whose addition is pending (Kafka's maximal ISR).
func (p *Partition) MaximalISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.isr.maximal())
}

// Epochs returns the leader-epoch cache's entries.
func (p *Partition) Epochs() []EpochEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epochs.Entries()
}

// HighWatermark is what consumers may read up to: the replication high
// watermark, never past the log's own high watermark (the end of the appends
// that returned, after their fsync under flush.messages).
func (p *Partition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(p.hw, p.log.HighWatermark())
}

// CheckpointHighWatermark is the value replication-offset-checkpoint keeps.
func (p *Partition) CheckpointHighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hw
}

// HWChanged returns a channel closed when the high watermark next moves, or
// the partition changes role or leader epoch: what produce waiters and
// consumers long-polling a follower sleep on.
func (p *Partition) HWChanged() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.notify == nil {
		p.notify = make(chan struct{})
	}
	return p.notify
}

// wake closes the notification channel (mu held).
func (p *Partition) wake() {
	if p.notify != nil {
		close(p.notify)
		p.notify = nil
	}
}

// changed tells the Manager that a request may be due (mu may be held: the
// callback only signals).
func (p *Partition) changed() {
	if p.onChange != nil {
		p.onChange()
	}
}

// Failed is the storage error that stopped the partition, nil normally.
func (p *Partition) Failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// fail records a storage error (mu held): the partition stops taking produce
// and fetching until the next LeaderAndIsr, and its log's Health fails, which
// takes the log dir it shares with other partitions offline (Kafka's
// LogDirFailureChannel: any partition's I/O error takes its log dir offline,
// and the broker tells the controller). The log itself keeps its dir online
// after a write it could undo (a full disk refusing an append); the
// partition then stopped alone, its replica out of the ISR only once the
// leader's lag check noticed, and the controller unaware.
func (p *Partition) fail(err error) error {
	if !errors.Is(err, ErrStorage) {
		err = fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if p.failed == nil {
		p.logger.Error("partition failed", "err", err)
		p.failed = err
		if h := p.log.Health(); h != nil {
			h.Fail(err)
		}
	}
	return err
}

// checkLeaderEpoch is KIP-320's check of a request's current_leader_epoch
// (mu held): -1 is not checked.
func (p *Partition) checkLeaderEpoch(current int32) error {
	switch {
	case current == -1:
		return nil
	case current < p.leaderEpoch:
		return fmt.Errorf("%w: request has %d, partition %s is at %d", ErrFencedLeaderEpoch, current, p.tp, p.leaderEpoch)
	case current > p.leaderEpoch:
		return fmt.Errorf("%w: request has %d, partition %s is at %d", ErrUnknownLeaderEpoch, current, p.tp, p.leaderEpoch)
	}
	return nil
}

// CheckLeaderEpoch is KIP-320's check for a consumer's Fetch or ListOffsets
// naming current_leader_epoch (-1: unchecked): ErrFencedLeaderEpoch below
// this replica's epoch, ErrUnknownLeaderEpoch above; then, if requireLeader,
// ErrNotLeader unless this broker leads.
func (p *Partition) CheckLeaderEpoch(current int32, requireLeader bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLeaderEpoch(current); err != nil {
		return err
	}
	if requireLeader && p.role != RoleLeader {
		return fmt.Errorf("%w: %s", ErrNotLeader, p.tp)
	}
	return nil
}

// setAssignment records the assigned replicas and keeps the progress of the
// followers that stay (mu held).
func (p *Partition) setAssignment(replicas []int32) {
	p.replicas = slices.Clone(replicas)
	var remotes []remoteReplica
	for _, id := range replicas {
		if id == p.cfg.BrokerID || slices.ContainsFunc(remotes, func(r remoteReplica) bool { return r.id == id }) {
			continue
		}
		i := slices.IndexFunc(p.remotes, func(r remoteReplica) bool { return r.id == id })
		if i >= 0 {
			remotes = append(remotes, p.remotes[i])
		} else {
			remotes = append(remotes, remoteReplica{id: id, leo: -1, logStart: -1, lastFetchLeaderLEO: -1})
		}
	}
	slices.SortFunc(remotes, func(a, b remoteReplica) int { return int(a.id) - int(b.id) })
	p.remotes = remotes
}

func (p *Partition) remote(id int32) *remoteReplica {
	for i := range p.remotes {
		if p.remotes[i].id == id {
			return &p.remotes[i]
		}
	}
	return nil
}

// Stop makes the partition stop replicating (StopReplica): no produce, no
// fetching, waiting produces answered NOT_LEADER_OR_FOLLOWER.
func (p *Partition) Stop() {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == RoleLeader {
		p.gen++
	}
	p.role = RoleNone
	p.isr = isrState{}
	p.fetch = fetchState{}
	p.wake()
}

// close closes the log (Manager.Close, StopReplica with delete).
func (p *Partition) close() error {
	p.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Close()
}

func parentDir(dir string) string { return filepath.Dir(dir) }

// logDir is the log directory holding the partition directory.
func (p *Partition) logDir() string { return parentDir(p.Log().Dir()) }

// ReadCommitted reads for a consumer: whole batches from the one holding
// offset, never reaching the high watermark (HighWatermark); an offset
// between the high watermark and the log end reads as an empty region, as in
// Kafka. Offsets outside the log are segment.ErrOffsetOutOfRange. Release
// the region when done.
func (p *Partition) ReadCommitted(offset, maxBytes int64) (segment.Region, error) {
	return p.ReadConsumer(offset, maxBytes, false)
}

// LastStableOffset is what a read_committed consumer may read up to: the
// high watermark, or the first offset of the oldest open transaction when
// that is lower.
func (p *Partition) LastStableOffset() int64 {
	p.mu.Lock()
	l := p.log
	hw := min(p.hw, l.HighWatermark())
	p.mu.Unlock()
	if fu, ok := l.FirstUnstableOffset(); ok {
		return min(hw, fu)
	}
	return hw
}

// ReadConsumer is ReadCommitted, stopping at the last stable offset when
// stable is set (a read_committed consumer).
func (p *Partition) ReadConsumer(offset, maxBytes int64, stable bool) (segment.Region, error) {
	p.mu.Lock()
	l := p.log
	hw := min(p.hw, l.HighWatermark())
	p.mu.Unlock()
	if fu, ok := l.FirstUnstableOffset(); ok && stable {
		hw = min(hw, fu)
	}
	v := l.Snapshot()
	if offset >= hw && offset <= v.End && offset >= v.Start {
		return segment.Region{FirstOffset: offset}, nil
	}
	v.End = min(v.End, hw)
	return v.Read(offset, maxBytes)
}

// MaxFollowerLag is, on a leader, how many offsets its furthest-behind
// follower is below the leader's log end offset (a follower not heard from
// yet counts from offset 0); 0 on a follower or without followers.
func (p *Partition) MaxFollowerLag() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader {
		return 0
	}
	leo := p.log.LogEndOffset()
	var lag int64
	for _, r := range p.remotes {
		lag = max(lag, leo-max(r.leo, 0))
	}
	return lag
}
