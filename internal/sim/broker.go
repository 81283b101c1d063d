package sim

import (
	"io"
	"log/slog"
	"path"

	"github.com/twmb/franz-go/pkg/kmsg"

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
	// M is the running broker's replication, nil while it is down.
	M *replica.Manager

	s      *Sim
	up     bool
	inc    int // incarnation: +1 at every start and crash
	parked []*parkedFetch
	pumpAt int64 // the pending time-driven Ready, 0 when none
}

type parkedFetch struct {
	req      *kmsg.FetchRequest
	reply    func(any)
	deadline int64
}

// Alive implements Node.
func (b *Broker) Alive() (bool, int) { return b.up, b.inc }

// Up reports whether the broker process runs.
func (b *Broker) Up() bool { return b.up }

func newBroker(s *Sim, id int32) *Broker {
	b := &Broker{ID: id, s: s, FS: vfs.NewMem()}
	if err := b.FS.MkdirAll(LogDir, 0o755); err != nil {
		panic(err)
	}
	b.FS.SyncAll()
	return b
}

// start runs a new broker process over the disk.
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
	b.up = true
	b.M = m
	m.SetBrokerEpoch(int64(b.inc))
	b.s.W.Tracef("broker %d starts (incarnation %d)", b.ID, b.inc)
	b.scheduleCheckpoint()
	b.s.Ctrl.brokerStarted(b)
}

func (b *Broker) openLog(tp replica.TopicPartition, o replica.OpenOptions) (*segment.Log, error) {
	opts := &segment.Options{
		FS:                b.FS,
		SegmentIndexBytes: 64 << 10,
		FileDeleteDelayMs: -1,
		Logger:            quiet,
		Now:               func() int64 { return b.s.W.Now },
	}
	if b.s.Opt.FlushEveryMessage {
		opts.FlushMessages = 1
	}
	if o.StartAt >= 0 {
		opts.LogStartOffset = o.StartAt
	} else if starts, err := checkpoint.ReadOffsets(b.FS, path.Join(LogDir, checkpoint.LogStartOffsetFile)); err == nil {
		opts.LogStartOffset = starts[tp] // the DataDir's log-start-offset-checkpoint
	}
	return segment.Open(path.Join(LogDir, tp.String()), opts)
}

// checkpointLogStarts writes log-start-offset-checkpoint, as the DataDir
// does (Kafka: every 60 s; here with the high watermarks).
func (b *Broker) checkpointLogStarts() error {
	starts := map[replica.TopicPartition]int64{}
	for _, p := range b.M.Partitions() {
		starts[p.TopicPartition()] = p.Log().LogStartOffset()
	}
	return checkpoint.WriteOffsets(b.FS, path.Join(LogDir, checkpoint.LogStartOffsetFile), starts)
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
// loss leaves a random crash state (unsynced writes lost, torn or kept).
func (b *Broker) crash(power bool) {
	opts := vfs.CrashOptions{KeepUnsynced: true}
	if power {
		opts = vfs.CrashOptions{Rand: b.s.W.Rand}
	}
	clone := b.FS.CrashClone(opts)
	b.M.Close() // writes to the old disk, which is gone
	b.FS, b.M, b.up, b.parked = clone, nil, false, nil
	b.inc++
	kind := "crashes"
	if power {
		kind = "loses power"
	}
	b.s.W.Tracef("broker %d %s", b.ID, kind)
	b.s.Ctrl.brokerLost(b)
}

// settle does what a running broker does after an event: answer the parked
// fetches that can be answered, then send what Ready asks.
func (b *Broker) settle() {
	if !b.up {
		return
	}
	b.pokeParked(false)
	now := b.s.W.Now
	r := b.M.Ready(now)
	for _, f := range r.Fetches {
		b.sendFetch(f)
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

func (b *Broker) peer(id int32) *Broker {
	if id < 1 || int(id) >= len(b.s.Brokers) {
		return nil
	}
	return b.s.Brokers[id]
}

func (b *Broker) sendFetch(f replica.FetchRequest) {
	m := b.M
	to := b.peer(f.Target.Broker)
	b.s.W.Tracef("broker %d fetch -> %d %s", b.ID, f.Target.Broker, fetchSummary(f.Req))
	if to == nil {
		b.s.W.After(b.s.Net.TimeoutMs, func() {
			if b.M == m {
				m.FetchResponse(f.Target, f.Req, nil, ErrTimeout, b.s.W.Now)
			}
		})
		return
	}
	b.s.Net.Call(b.ID, to.ID, true,
		func(reply func(any)) { to.serveFetch(f.Req, reply) },
		func(resp any, err error) {
			r, _ := resp.(*kmsg.FetchResponse)
			b.s.countFetch(r)
			b.s.W.Tracef("broker %d fetch <- %d %s%v", b.ID, f.Target.Broker, fetchRespSummary(r), errOrEmpty(err))
			m.FetchResponse(f.Target, f.Req, r, err, b.s.W.Now)
		})
}

// serveFetch answers a follower's fetch, or parks it (Kafka's fetch
// purgatory) until it has something to say or its max wait passes.
func (b *Broker) serveFetch(req *kmsg.FetchRequest, reply func(any)) {
	resp := b.M.HandleFetch(req, b.s.W.Now)
	if worthAnswering(resp) || req.MaxWaitMillis <= 0 {
		reply(resp)
		return
	}
	pf := &parkedFetch{req: req, reply: reply, deadline: b.s.W.Now + int64(req.MaxWaitMillis)}
	b.parked = append(b.parked, pf)
	inc := b.inc
	b.s.W.At(pf.deadline, func() {
		if b.inc == inc {
			b.pokeParked(true)
		}
	})
}

func worthAnswering(resp *kmsg.FetchResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || len(p.RecordBatches) > 0 || p.DivergingEpoch.EndOffset >= 0 {
				return true
			}
		}
	}
	return false
}

// pokeParked serves the parked fetches again; those with something to say,
// or past their max wait, are answered.
func (b *Broker) pokeParked(expire bool) {
	if !b.up || len(b.parked) == 0 {
		return
	}
	keep := b.parked[:0]
	for _, pf := range b.parked {
		resp := b.M.HandleFetch(pf.req, b.s.W.Now)
		if worthAnswering(resp) || expire && b.s.W.Now >= pf.deadline {
			pf.reply(resp)
			continue
		}
		keep = append(keep, pf)
	}
	clear(b.parked[len(keep):])
	b.parked = keep
}

func (b *Broker) sendListOffsets(l replica.ListOffsetsRequest) {
	m := b.M
	to := b.peer(l.Broker)
	b.s.W.Tracef("broker %d list offsets -> %d", b.ID, l.Broker)
	b.s.stats.ListOffsets++
	if to == nil {
		b.s.W.After(b.s.Net.TimeoutMs, func() {
			if b.M == m {
				m.ListOffsetsResponse(l.Broker, l.Req, nil, ErrTimeout, b.s.W.Now)
			}
		})
		return
	}
	b.s.Net.Call(b.ID, to.ID, true,
		func(reply func(any)) { reply(to.M.HandleListOffsets(l.Req)) },
		func(resp any, err error) {
			r, _ := resp.(*kmsg.ListOffsetsResponse)
			m.ListOffsetsResponse(l.Broker, l.Req, r, err, b.s.W.Now)
		})
}

func (b *Broker) sendAlterPartition(req *kmsg.AlterPartitionRequest) {
	m := b.M
	b.s.W.Tracef("broker %d AlterPartition %s", b.ID, alterSummary(req))
	b.s.Net.Call(b.ID, ControllerID, true,
		func(reply func(any)) { reply(b.s.Ctrl.alterPartition(req)) },
		func(resp any, err error) {
			r, _ := resp.(*kmsg.AlterPartitionResponse)
			b.s.W.Tracef("broker %d AlterPartition answer %s%v", b.ID, alterRespSummary(r), errOrEmpty(err))
			m.AlterPartitionResponse(r, err, b.s.W.Now)
		})
}

// partition returns the broker's partition p, or nil.
func (b *Broker) partition(tp replica.TopicPartition) *replica.Partition {
	if !b.up {
		return nil
	}
	return b.M.Partition(tp.Topic, tp.Partition)
}
