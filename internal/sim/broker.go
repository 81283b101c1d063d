package sim

import (
	"io"
	"log/slog"
	"path"

	"github.com/stratalog/strata/internal/checkpoint"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// LogDir is each broker's log dir on its filesystem.
const LogDir = "/data"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Broker is one simulated broker process and its disk.
type Broker struct {
	ID int32
	// FS is the broker's disk; a crash replaces it by a crash clone.
	FS *vfs.MemFS
	// disk is FS as the process uses it: every operation is shown to
	// onDiskOp, where an armed power loss strikes (powerAt).
	disk vfs.FS
	// M is the running broker's replication, nil while it is down.
	M *replica.Manager

	s        *Sim
	up       bool
	serving  bool // registered once since the process started: requests are served
	inc      int  // incarnation: +1 at every start and crash
	member   *member
	meta     *metaCache
	parked   []*parkedFetch
	backs    map[replica.FetchTarget][]handBackStep // answers each fetcher has yet to hand back (handBack)
	produces []*parkedProduce
	tasks    []*task // segment background work not yet run
	pumpAt   int64   // the pending time-driven Ready, 0 when none

	alterInflight int // AlterPartition requests sent and not answered (a lost one counts until its timeout)

	powerIn int        // an armed power loss strikes at the powerIn-th mutating disk operation from now (0: none)
	dying   *vfs.MemFS // the crash state taken where power was lost; the process dies at the end of the event
}

// task is one piece of a log's background work (segment.Options.Go).
type task struct {
	fn   func()
	done bool
}

// Alive implements Node: a started broker takes requests only once it has
// registered (Kafka's KafkaServer starts processing requests after
// registerBroker): before that, its connections go nowhere. One that lost
// power in the middle of an event sends and takes nothing more.
func (b *Broker) Alive() (bool, int) { return b.up && b.serving && b.dying == nil, b.inc }

// Up reports whether the broker process runs.
func (b *Broker) Up() bool { return b.up }

func newBroker(s *Sim, id int32) *Broker {
	b := &Broker{ID: id, s: s, FS: vfs.NewMem()}
	if err := b.FS.MkdirAll(LogDir, 0o755); err != nil {
		panic(err)
	}
	b.FS.SyncAll()
	b.disk = vfs.Inject(b.FS, vfs.InjectorFunc(b.onDiskOp))
	return b
}

// start runs a new broker process over the disk: its replication, its
// metadata cache, its ZooKeeper session (it registers once the session's
// Connected event is delivered).
func (b *Broker) start() {
	o := b.s.Opt
	m, err := replica.NewManager(replica.Config{
		BrokerID:              b.ID,
		ReplicaLagTimeMaxMs:   o.LagTimeMs,
		ReplicaFetchWaitMaxMs: int32(o.FetchWaitMs),
		ReplicaFetchBackoffMs: o.BackoffMs,
		ReplicaFetchMaxBytes:  o.FetchMaxBytes,
		OpenLog:               b.openLog,
		Logger:                quiet,
	})
	if err != nil {
		panic(err)
	}
	b.inc++
	b.up, b.serving = true, false
	b.M = m
	b.meta = newMetaCache()
	b.s.W.Tracef("broker %d starts (incarnation %d)", b.ID, b.inc)
	b.member = newMember(b)
	if b.s.zkCut[b.ID] { // restarted while cut off ZooKeeper
		b.s.expireLater(b.member.zk)
		b.member.zk.Disconnect()
	}
	b.scheduleCheckpoint()
}

func (b *Broker) openLog(tp replica.TopicPartition, o replica.OpenOptions) (*segment.Log, error) {
	inc := b.inc
	opts := &segment.Options{
		FS:                 b.disk,
		SegmentBytes:       b.s.Opt.SegmentBytes,
		SegmentIndexBytes:  4096,
		IndexIntervalBytes: 256,
		FileDeleteDelayMs:  -1,
		Logger:             quiet,
		Now:                func() int64 { return b.s.W.Now },
		Go:                 func(fn func()) { b.background(inc, fn) },
	}
	if b.s.Opt.FlushEveryMessage {
		opts.FlushMessages = 1
	}
	if o.StartAt >= 0 {
		opts.LogStartOffset = o.StartAt
	} else if starts, err := checkpoint.ReadOffsets(b.disk, path.Join(LogDir, checkpoint.LogStartOffsetFile)); err == nil {
		opts.LogStartOffset = starts[tp] // the DataDir's log-start-offset-checkpoint
	}
	return segment.Open(path.Join(LogDir, tp.String()), opts)
}

// background takes a log's background work (the flush after a roll) and
// runs it later, as an event of its own: a crash or power loss may come
// first. Whatever closes a log runs the pending work first (drain): Close
// waits for it.
func (b *Broker) background(inc int, fn func()) {
	t := &task{fn: fn}
	b.tasks = append(b.tasks, t)
	b.s.stats.BackgroundTasks++
	b.s.W.After(b.s.W.Between(0, 200), func() {
		if b.inc == inc {
			b.run(t)
		}
	})
}

func (b *Broker) run(t *task) {
	if t.done {
		return
	}
	t.done = true
	t.fn()
	b.tasks = deleteTask(b.tasks, t)
}

func deleteTask(ts []*task, t *task) []*task {
	for i, x := range ts {
		if x == t {
			return append(ts[:i], ts[i+1:]...)
		}
	}
	return ts
}

// drain runs every pending background task (before a call that may close a
// log).
func (b *Broker) drain() {
	for len(b.tasks) > 0 {
		b.run(b.tasks[0])
	}
}

// checkpointLogStarts writes log-start-offset-checkpoint, as the DataDir
// does (Kafka: every 60 s; here with the high watermarks).
func (b *Broker) checkpointLogStarts() error {
	starts := map[replica.TopicPartition]int64{}
	for _, p := range b.M.Partitions() {
		starts[p.TopicPartition()] = p.Log().LogStartOffset()
	}
	return checkpoint.WriteOffsets(b.disk, path.Join(LogDir, checkpoint.LogStartOffsetFile), starts)
}

// scheduleCheckpoint writes replication-offset-checkpoint every 5 s, as
// replica.high.watermark.checkpoint.interval.ms.
func (b *Broker) scheduleCheckpoint() {
	inc := b.inc
	b.s.W.After(5000, func() {
		if b.inc != inc || !b.up {
			return
		}
		if err := b.M.CheckpointHighWatermarks(); err != nil {
			b.s.fail("broker %d: checkpointing high watermarks: %v", b.ID, err)
		}
		if err := b.checkpointLogStarts(); err != nil {
			b.s.fail("broker %d: checkpointing log starts: %v", b.ID, err)
		}
		b.scheduleCheckpoint()
	})
}

// crash stops the process: its page cache survives a process crash, a power
// loss leaves a random crash state (unsynced writes lost, torn or kept). Its
// ZooKeeper connection drops; the session expires after the timeout.
func (b *Broker) crash(power bool) {
	opts := vfs.CrashOptions{KeepUnsynced: true}
	if power {
		opts = vfs.CrashOptions{Rand: b.s.W.Rand}
		if !b.s.Opt.FlushEveryMessage && !b.s.Opt.PowerLossInRollWindow {
			b.drain() // see Options.PowerLossInRollWindow
		}
	}
	b.die(b.FS.CrashClone(opts))
	kind := "crashes"
	if power {
		kind = "loses power"
	}
	b.s.W.Tracef("broker %d %s", b.ID, kind)
}

// die ends the process, its disk replaced by clone.
func (b *Broker) die(clone *vfs.MemFS) {
	b.powerIn = 0
	b.drain()   // on the old disk, which is gone: Close waits for them
	b.M.Close() // likewise
	b.member.die()
	b.FS, b.M, b.up, b.serving, b.parked, b.produces, b.tasks, b.dying = clone, nil, false, false, nil, nil, nil, nil
	b.alterInflight = 0
	b.disk = vfs.Inject(b.FS, vfs.InjectorFunc(b.onDiskOp))
	b.inc++
}

// armPowerLoss makes the power fail at one of the next mutating disk
// operations of the process, whatever it is doing (an append, its fsync, a
// checkpoint's rename, a roll, a truncation).
func (b *Broker) armPowerLoss(within int) {
	b.powerIn = 1 + b.s.W.Intn(within)
	b.s.W.Tracef("fault: broker %d will lose power at its %d-th disk write from now", b.ID, b.powerIn)
}

// onDiskOp sees every operation of the process on its disk. Where an armed
// power loss strikes, the crash state is taken before the operation (which
// goes on, on a disk that is gone), the process stops sending or taking
// anything, and it dies at the end of the event.
func (b *Broker) onDiskOp(op vfs.Op) error {
	if b.powerIn == 0 || b.dying != nil || !op.Kind.Mutating() {
		return nil
	}
	b.powerIn--
	if b.powerIn > 0 {
		return nil
	}
	if !b.s.powerLossAllowed(b.ID) || !b.s.Opt.FlushEveryMessage && !b.s.Opt.PowerLossInRollWindow && len(b.tasks) > 0 {
		b.s.W.Tracef("broker %d: armed power loss at %v not allowed now: dropped", b.ID, op)
		return nil
	}
	b.s.stats.PowerLosses++
	b.s.stats.PowerLossesMidWrite++
	b.s.markUnclean(b.ID)
	b.dying = b.FS.CrashClone(vfs.CrashOptions{Rand: b.s.W.Rand})
	b.s.W.Tracef("broker %d loses power at %v", b.ID, op)
	inc := b.inc
	b.s.W.After(0, func() {
		if b.inc == inc && b.dying != nil {
			b.die(b.dying)
			b.s.restartLater(b)
		}
	})
	return nil
}

// stop is a clean stop at the end of a run: logs flushed and closed,
// checkpoints written, the session closed.
func (b *Broker) stop() error {
	b.powerIn = 0
	b.drain()
	if err := b.M.CheckpointHighWatermarks(); err != nil {
		return err
	}
	if err := b.checkpointLogStarts(); err != nil {
		return err
	}
	err := b.M.Close()
	b.member.dead = true
	b.member.closeChannels()
	b.member.zk.Close()
	b.up, b.serving, b.parked, b.produces, b.alterInflight = false, false, nil, nil, 0
	b.inc++
	return err
}

// settle does what a running broker does after an event: take what
// ZooKeeper delivered, answer the parked fetches and produces that can be
// answered, then send what Ready asks.
func (b *Broker) settle() {
	if !b.up || b.dying != nil {
		return
	}
	b.member.poll()
	if !b.up {
		return
	}
	b.pokeParked(false)
	b.pollProduces()
	now := b.s.W.Now
	r := b.M.Ready(now)
	for _, f := range r.Fetches {
		b.sendFetch(aheadFetch{FetchRequest: f})
	}
	for _, l := range r.ListOffsets {
		b.sendListOffsets(l)
	}
	if r.AlterPartition != nil {
		b.sendAlterPartition(r.AlterPartition)
	}
	if r.NextMs > now && (b.pumpAt <= now || r.NextMs < b.pumpAt) {
		at, inc := r.NextMs, b.inc
		b.pumpAt = at
		b.s.W.At(at, func() {
			if b.inc == inc && b.pumpAt == at {
				b.pumpAt = 0
			}
		})
	}
}

// partition returns the broker's partition p, or nil.
func (b *Broker) partition(tp replica.TopicPartition) *replica.Partition {
	if !b.up {
		return nil
	}
	return b.M.Partition(tp.Topic, tp.Partition)
}
