package replica

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
)

// restart brings broker id's partition back on a crash clone of its
// filesystem: opts.KeepUnsynced for a process crash, the zero value for a
// power loss (everything not fsynced is lost). The high watermark comes from
// the replication-offset-checkpoint, as at a broker start.
func restart(t *testing.T, p *Partition, opts vfs.CrashOptions) *Partition {
	t.Helper()
	fs := p.fs.(*vfs.MemFS).CrashClone(opts)
	p.close()
	cfg := testConfig(p.cfg.BrokerID, fs, "/data")
	l, err := cfg.OpenLog(tp0, OpenOptions{StartAt: -1})
	if err != nil {
		t.Fatal(err)
	}
	hws, _ := ReadHighWatermarks(fs, "/data")
	q, err := newPartition(tp0, l, hws[tp0], cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.close() })
	return q
}

func checkpointHW(t *testing.T, p *Partition) {
	t.Helper()
	if err := WriteHighWatermarks(p.fs, "/data", map[TopicPartition]int64{tp0: p.CheckpointHighWatermark()}); err != nil {
		t.Fatal(err)
	}
}

// TestKIP101Loss is reference §5, KIP-101's first case. Follower A (2) has
// fetched m2 from leader B (1); B's HW passed m2 and B acknowledged it, but
// the answer that would have told A was lost, so A's HW is below m2. A
// restarts; B dies and A, still in the ISR, leads. Truncating to the HW on
// restart (pre-KIP-101) loses m2; truncating by leader epoch keeps it.
func TestKIP101Loss(t *testing.T) {
	b := newTestPartition(t, 1, vfs.NewMem())
	a := newTestPartition(t, 2, vfs.NewMem())
	isr := []int32{1, 2}
	mustLeader(t, b, state(1, 0, isr, 1, 2), t0)
	mustFollower(t, a, state(1, 0, isr, 1, 2), t0)

	m1, err := b.AppendAsLeader(batch(t, "m1"), -1, 2, t0)
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, b, a, t0+1) // A gets m1
	replicate(t, b, a, t0+2) // B: HW 1; A: HW 1
	w1 := m1.Wait
	w1.Deadline = t0 + 1000
	if s := b.PollProduce(&w1, t0+2); s != AckCommitted {
		t.Fatalf("m1: %v", s)
	}
	m2, err := b.AppendAsLeader(batch(t, "m2"), -1, 2, t0+3)
	if err != nil {
		t.Fatal(err)
	}
	replicate(t, b, a, t0+4) // A gets m2 (HW still 1)
	// A's next fetch reaches B, which moves its HW past m2 and acks it; the
	// answer is lost on the way back.
	part, _, _ := a.fetchPart(t0 + 5)
	res := b.FetchFromFollower(FollowerFetch{ReplicaID: 2, FetchOffset: part.FetchOffset, CurrentLeaderEpoch: part.CurrentLeaderEpoch, LastFetchedEpoch: part.LastFetchedEpoch, MaxBytes: 1 << 20}, t0+5)
	res.Records.Release()
	w2 := m2.Wait
	w2.Deadline = t0 + 1000
	if s := b.PollProduce(&w2, t0+5); s != AckCommitted {
		t.Fatalf("m2: %v", s)
	}
	wantHW(t, a, 1)
	checkpointHW(t, a)

	// A restarts (a process crash: its page cache survives) and follows B again.
	a = restart(t, a, vfs.CrashOptions{KeepUnsynced: true})
	mustFollower(t, a, state(1, 0, isr, 1, 2), t0+6)
	// B dies; the controller elects A, the ISR's other member.
	mustLeader(t, a, state(2, 1, []int32{2}, 1, 2), t0+7)
	got := readLog(t, a.Log(), -1)
	if want := []entry{{0, 0, "m1"}, {1, 0, "m2"}}; !slices.Equal(got, want) {
		t.Fatalf("new leader's log %v, want %v: an acknowledged record was lost", got, want)
	}
}

// TestKIP101Divergence is reference §5, KIP-101's second case. A (2) and B
// (1) lose power together with unflushed tails. B comes back first holding
// less, leads, and writes m3 at the offset where A still has m2 (and a
// checkpointed HW above it). Truncating to the HW keeps m2 on A and the
// replicas disagree at that offset forever; the diverging epoch makes A cut
// m2 and take m3.
func TestKIP101Divergence(t *testing.T) {
	b := newTestPartition(t, 1, vfs.NewMem())
	a := newTestPartition(t, 2, vfs.NewMem())
	isr := []int32{1, 2}
	mustLeader(t, b, state(1, 0, isr, 1, 2), t0)
	mustFollower(t, a, state(1, 0, isr, 1, 2), t0)
	mustAppend(t, b, t0, "m1")
	replicate(t, b, a, t0+1)
	replicate(t, b, a, t0+2)
	if err := b.Log().Flush(); err != nil { // m1 is durable on B
		t.Fatal(err)
	}
	mustAppend(t, b, t0+3, "m2")
	replicate(t, b, a, t0+4) // A has m2
	replicate(t, b, a, t0+5) // HW 2 on both
	wantHW(t, a, 2)
	if err := a.Log().Flush(); err != nil { // m2 is durable on A, not on B
		t.Fatal(err)
	}
	checkpointHW(t, a)

	// Power loss of both.
	b = restart(t, b, vfs.CrashOptions{})
	a = restart(t, a, vfs.CrashOptions{})
	if b.Log().LogEndOffset() != 1 || a.Log().LogEndOffset() != 2 {
		t.Fatalf("after the power loss B ends at %d, A at %d; want 1 and 2", b.Log().LogEndOffset(), a.Log().LogEndOffset())
	}
	// B returns first, leads epoch 1 and writes m3 at offset 1.
	mustLeader(t, b, state(1, 1, []int32{1}, 1, 2), t0+10)
	mustAppend(t, b, t0+10, "m3")
	// A returns and follows.
	mustFollower(t, a, state(1, 1, []int32{1}, 1, 2), t0+11)
	for i := int64(0); i < 3; i++ {
		replicate(t, b, a, t0+12+i)
	}
	lb, la := readLog(t, b.Log(), -1), readLog(t, a.Log(), -1)
	if want := []entry{{0, 0, "m1"}, {1, 1, "m3"}}; !slices.Equal(lb, want) || !slices.Equal(la, want) {
		t.Fatalf("leader %v, follower %v; both should be %v", lb, la, want)
	}
	if !slices.Equal(a.Epochs(), b.Epochs()) {
		t.Fatalf("epoch caches differ: follower %v, leader %v", a.Epochs(), b.Epochs())
	}
}

// TestKIP279SuccessiveLeaders: quick leader changes leave a follower with an
// epoch its new leader never saw (KIP-279): the follower truncates in steps,
// one diverging answer per step, until the logs agree.
func TestKIP279SuccessiveLeaders(t *testing.T) {
	b := newTestPartition(t, 1, vfs.NewMem())
	a := newTestPartition(t, 2, vfs.NewMem())
	// A was leader of epoch 1 and wrote x1, x2 that nobody fetched; before
	// that, epoch 0 (led by B) gave both y0.
	mustLeader(t, b, state(1, 0, []int32{1, 2}, 1, 2), t0)
	mustFollower(t, a, state(1, 0, []int32{1, 2}, 1, 2), t0)
	mustAppend(t, b, t0, "y0")
	replicate(t, b, a, t0)
	replicate(t, b, a, t0)
	mustLeader(t, a, state(2, 1, []int32{2}, 1, 2), t0)
	mustAppend(t, a, t0, "x1")
	mustLeader(t, a, state(2, 2, []int32{2}, 1, 2), t0)
	mustAppend(t, a, t0, "x2")
	// B becomes leader of epoch 3 without having seen epochs 1 and 2, and
	// writes z1, z2, z3.
	mustLeader(t, b, state(1, 3, []int32{1}, 1, 2), t0)
	mustAppend(t, b, t0, "z1", "z2", "z3")
	mustFollower(t, a, state(1, 3, []int32{1}, 1, 2), t0)
	for i := int64(0); i < 5; i++ {
		replicate(t, b, a, t0+i)
	}
	lb, la := readLog(t, b.Log(), -1), readLog(t, a.Log(), -1)
	if !slices.Equal(lb, la) || len(la) != 4 {
		t.Fatalf("leader %v, follower %v", lb, la)
	}
}

// TestLoadAfterLostTruncation: a follower cut its log and appended the new
// leader's epoch; power fails. segment.Log.TruncateTo makes the cut durable
// before it returns (a lost cut used to bring the old records back), but the
// append after it is lost, while the epoch checkpoint (synced) has the new
// epoch starting at the log's end. Loading must notice, or the follower would
// answer its new leader's divergence check with an epoch it does not hold.
func TestLoadAfterLostTruncation(t *testing.T) {
	f := followerWith(t, 0, 0, 0)
	f.fs.(*vfs.MemFS).SyncAll() // the three epoch-0 records are durable
	err := fetchData(t, f, t0+1, func(d *kmsg.FetchResponseTopicPartition) {
		d.DivergingEpoch.Epoch, d.DivergingEpoch.EndOffset = 0, 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fetchData(t, f, t0+2, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 1, 1, "x") }); err != nil {
		t.Fatal(err)
	}
	if want := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 1}}; !slices.Equal(f.Epochs(), want) {
		t.Fatalf("before the power loss: %v", f.Epochs())
	}
	f = restart(t, f, vfs.CrashOptions{}) // every unsynced change lost: the append after the cut
	if got := readLog(t, f.Log(), -1); len(got) != 1 || got[0].Epoch != 0 {
		t.Fatalf("the log should hold the durable cut, its first record only: %v", got)
	}
	if want := []EpochEntry{{Epoch: 0, StartOffset: 0}}; !slices.Equal(f.Epochs(), want) {
		t.Fatalf("loaded epochs %v, want %v: epoch 1 does not start at 1 in this log", f.Epochs(), want)
	}
	// The leader (epoch 1 from offset 1) now finds the divergence.
	l := newTestPartition(t, 1, vfs.NewMem())
	mustLeader(t, l, state(1, 0, []int32{1}, 1, 2), t0)
	mustAppend(t, l, t0, "a")
	mustLeader(t, l, state(1, 1, []int32{1, 2}, 1, 2), t0)
	mustAppend(t, l, t0, "x")
	mustFollower(t, f, state(1, 1, []int32{1, 2}, 1, 2), t0)
	for i := int64(0); i < 3; i++ {
		replicate(t, l, f, t0+i)
	}
	if got := readLog(t, f.Log(), -1); len(got) != 2 || got[1] != (entry{1, 1, "x"}) {
		t.Fatalf("follower after the divergence check: %v", got)
	}
}
