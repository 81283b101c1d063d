package replica

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
)

// trio is a leader (broker 1) and two followers over their own filesystems.
type trio struct {
	l, f2, f3 *Partition
}

func newTrio(t *testing.T, isr []int32) trio {
	t.Helper()
	tr := trio{
		l:  newTestPartition(t, 1, vfs.NewMem()),
		f2: newTestPartition(t, 2, vfs.NewMem()),
		f3: newTestPartition(t, 3, vfs.NewMem()),
	}
	mustLeader(t, tr.l, state(1, 0, isr), t0)
	mustFollower(t, tr.f2, state(1, 0, isr), t0)
	mustFollower(t, tr.f3, state(1, 0, isr), t0)
	return tr
}

func TestMakeLeaderRecordsEpochStart(t *testing.T) {
	p := newTestPartition(t, 1, vfs.NewMem())
	mustLeader(t, p, state(1, 0, []int32{1}), t0)
	mustAppend(t, p, t0, "a", "b")
	// KAFKA-7415: the new epoch is in the cache before any record of it.
	mustLeader(t, p, state(1, 3, []int32{1}), t0)
	if want := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 2}}; !slices.Equal(p.Epochs(), want) {
		t.Fatalf("epochs %v, want %v", p.Epochs(), want)
	}
	mustAppend(t, p, t0, "c")
	got := readLog(t, p.Log(), -1)
	if want := []entry{{0, 0, "a"}, {1, 0, "b"}, {2, 3, "c"}}; !slices.Equal(got, want) {
		t.Fatalf("log %v, want %v (the leader stamps its epoch)", got, want)
	}
}

func TestAppendRefusals(t *testing.T) {
	p := newTestPartition(t, 1, vfs.NewMem())
	if _, err := p.AppendAsLeader(batch(t, "x"), 1, 1, t0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append before LeaderAndIsr: %v", err)
	}
	mustLeader(t, p, state(1, 0, []int32{1, 2}), t0)
	if err := p.CheckProduce(-1, 3); !errors.Is(err, ErrNotEnoughReplicas) || ErrorCode(err) != 19 {
		t.Fatalf("acks=-1 with ISR 2 < min 3: %v", err)
	}
	if _, err := p.AppendAsLeader(batch(t, "x"), -1, 3, t0); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("append acks=-1 with ISR 2 < min 3: %v", err)
	}
	if p.Log().LogEndOffset() != 0 {
		t.Fatal("a refused produce was appended")
	}
	if _, err := p.AppendAsLeader(batch(t, "x"), 1, 3, t0); err != nil {
		t.Fatalf("acks=1 ignores min.insync.replicas: %v", err)
	}
	if _, err := p.AppendAsLeader(batch(t, "y"), -1, 2, t0); err != nil {
		t.Fatalf("acks=-1 with ISR 2 >= min 2: %v", err)
	}
	bad := batch(t, "z")
	bad = bad[:len(bad)-1]
	if _, err := p.AppendAsLeader(bad, 1, 1, t0); !errors.Is(err, ErrInvalidRecords) {
		t.Fatalf("torn batch: %v", err)
	}
	if p.Failed() != nil {
		t.Fatal("bad input failed the partition")
	}
}

// TestHighWatermarkRules: the HW is the smallest log end offset over the
// leader and the ISR, moves at once for an ISR of one, and never goes back.
func TestHighWatermarkRules(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	mustAppend(t, tr.l, t0, "a", "b", "c")
	wantHW(t, tr.l, 0)
	replicate(t, tr.l, tr.f2, t0+1)
	wantHW(t, tr.l, 0) // broker 3 has fetched nothing yet
	replicate(t, tr.l, tr.f3, t0+2)
	wantHW(t, tr.l, 0) // both have the records, the leader learns it at their next fetch
	replicate(t, tr.l, tr.f2, t0+3)
	wantHW(t, tr.l, 0)
	replicate(t, tr.l, tr.f3, t0+4)
	wantHW(t, tr.l, 3)
	wantHW(t, tr.f3, 3) // the answer carried the new HW
	wantHW(t, tr.f2, 0) // broker 2 learns it at its next fetch
	replicate(t, tr.l, tr.f2, t0+5)
	wantHW(t, tr.f2, 3)

	// ISR of one: the HW follows the leader's appends.
	solo := newTestPartition(t, 1, vfs.NewMem())
	mustLeader(t, solo, state(1, 0, []int32{1}), t0)
	mustAppend(t, solo, t0, "a")
	wantHW(t, solo, 1)
}

// TestHighWatermarkWaitsForCaughtUpFollower: a follower outside the ISR that
// caught up within the lag time holds the HW back, so it can reach it and
// rejoin while the leader keeps appending (Kafka's maybeIncrementLeaderHW).
func TestHighWatermarkWaitsForCaughtUpFollower(t *testing.T) {
	tr := newTrio(t, []int32{1})
	mustAppend(t, tr.l, t0, "a", "b")
	wantHW(t, tr.l, 2)
	replicate(t, tr.l, tr.f2, t0+1) // from 0 (the leader at 2): gets a, b
	mustAppend(t, tr.l, t0+1, "c")
	wantHW(t, tr.l, 3)              // broker 2 has not caught up yet: the ISR of one commits
	replicate(t, tr.l, tr.f2, t0+2) // from 2, the leader's end at its previous fetch: caught up as of +1
	mustAppend(t, tr.l, t0+2, "d")
	wantHW(t, tr.l, 3)              // held for broker 2 (at 3 after this fetch's c)
	replicate(t, tr.l, tr.f2, t0+3) // from 3 = the HW: it rejoins
	commitAlter(t, tr.l, t0+3)
	wantISR(t, tr.l, 1, 2)
	replicate(t, tr.l, tr.f2, t0+4)
	wantHW(t, tr.l, 4)

	// Past the lag time, a silent follower outside the ISR holds nothing.
	tr2 := newTrio(t, []int32{1})
	mustAppend(t, tr2.l, t0, "a")
	replicate(t, tr2.l, tr2.f2, t0+1)
	mustAppend(t, tr2.l, t0+1, "b")
	replicate(t, tr2.l, tr2.f2, t0+2) // caught up as of +1, at 1 < HW 2
	mustAppend(t, tr2.l, t0+2, "c")
	wantHW(t, tr2.l, 2)
	mustAppend(t, tr2.l, t0+1+tr2.l.cfg.ReplicaLagTimeMaxMs+1, "d")
	wantHW(t, tr2.l, 4)
}

func TestHighWatermarkNeverDecreases(t *testing.T) {
	tr := newTrio(t, []int32{1})
	mustAppend(t, tr.l, t0, "a", "b", "c")
	wantHW(t, tr.l, 3)
	// A new leader epoch for the same leader with a lagging ISR member: the
	// HW stays where it was.
	mustLeader(t, tr.l, state(1, 1, []int32{1, 2}), t0+1)
	wantHW(t, tr.l, 3)
	mustFollower(t, tr.f2, state(1, 1, []int32{1, 2}), t0+1)
	replicate(t, tr.l, tr.f2, t0+2)
	wantHW(t, tr.l, 3)
}

// TestCaughtUpTime: Kafka's Replica.updateFetchState rules.
func TestCaughtUpTime(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	caught := func() int64 {
		tr.l.mu.Lock()
		defer tr.l.mu.Unlock()
		return tr.l.remote(2).lastCaughtUpMs
	}
	if c := caught(); c != t0 {
		t.Fatalf("an ISR member starts caught up at the election: %d", c-t0)
	}
	mustAppend(t, tr.l, t0, "a", "b")
	replicate(t, tr.l, tr.f2, t0+10) // from 0 < 2, and the previous fetch's leader end is unknown
	if c := caught(); c != t0 {
		t.Fatalf("behind: caught-up time moved to %d", c-t0)
	}
	mustAppend(t, tr.l, t0+15, "c")
	replicate(t, tr.l, tr.f2, t0+20) // from 2 < 3, but 2 was the leader's end at the fetch at +10
	if c := caught(); c != t0+10 {
		t.Fatalf("reached the previous fetch's leader end: caught up %d, want +10", c-t0)
	}
	replicate(t, tr.l, tr.f2, t0+30) // from 3 = the leader's end
	if c := caught(); c != t0+30 {
		t.Fatalf("at the leader's end: caught up %d, want +30", c-t0)
	}
}

func TestFetchLeaderEpochChecks(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	mustLeader(t, tr.l, state(1, 5, []int32{1, 2, 3}), t0)
	for _, c := range []struct {
		epoch int32
		want  error
	}{{4, ErrFencedLeaderEpoch}, {6, ErrUnknownLeaderEpoch}, {5, nil}, {-1, nil}} {
		res := tr.l.FetchFromFollower(FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: c.epoch, LastFetchedEpoch: -1, MaxBytes: 1 << 20}, t0)
		res.Records.Release()
		if !errors.Is(res.Err, c.want) || c.want == nil && res.Err != nil {
			t.Fatalf("current leader epoch %d: %v, want %v", c.epoch, res.Err, c.want)
		}
	}
	if ErrorCode(ErrFencedLeaderEpoch) != 74 || ErrorCode(ErrUnknownLeaderEpoch) != 75 {
		t.Fatal("KIP-320 error codes")
	}
	res := tr.l.FetchFromFollower(FollowerFetch{ReplicaID: 9, CurrentLeaderEpoch: 5, LastFetchedEpoch: -1}, t0)
	if !errors.Is(res.Err, ErrNotLeader) {
		t.Fatalf("fetch from a broker that is no replica: %v", res.Err)
	}
	res = tr.f2.FetchFromFollower(FollowerFetch{ReplicaID: 3, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1}, t0)
	if !errors.Is(res.Err, ErrNotLeader) {
		t.Fatalf("fetch from a follower: %v", res.Err)
	}
}

// TestFetchDivergingEpoch: Fetch v12's last_fetched_epoch check on the leader.
func TestFetchDivergingEpoch(t *testing.T) {
	l := newTestPartition(t, 1, vfs.NewMem())
	mustLeader(t, l, state(1, 1, []int32{1}), t0)
	mustAppend(t, l, t0, "a", "b")                   // epoch 1: [0, 2)
	mustLeader(t, l, state(1, 3, []int32{1}), t0)    // epoch 3 from 2
	mustAppend(t, l, t0, "c", "d", "e")              // epoch 3: [2, 5)
	mustLeader(t, l, state(1, 4, []int32{1, 2}), t0) // epoch 4 from 5
	fetch := func(offset int64, last int32) FollowerFetchResult {
		r := l.FetchFromFollower(FollowerFetch{ReplicaID: 2, FetchOffset: offset, CurrentLeaderEpoch: 4, LastFetchedEpoch: last, MaxBytes: 1 << 20}, t0)
		r.Records.Release()
		return r
	}
	for _, c := range []struct {
		offset    int64
		last      int32
		divEpoch  int32
		divOffset int64
		err       error
	}{
		{2, 1, -1, -1, nil},                 // epoch 1 ends at 2 here too: no divergence
		{3, 1, 1, 2, nil},                   // follower has epoch 1 past 2: diverges at 2
		{3, 2, 1, 2, nil},                   // epoch 2 unknown here: the largest below it is 1, ending at 2
		{5, 3, -1, -1, nil},                 // epoch 3 ends at 5 here
		{6, 3, 3, 5, nil},                   // follower's epoch 3 goes further
		{6, 4, 4, 5, nil},                   // the latest epoch ends at the log end, 5
		{5, 4, -1, -1, nil},                 // at the log end
		{1, 0, -1, -1, nil},                 // below every epoch: (0, start of the first = 0); 0 < 1 but epoch equal... see below
		{3, 9, -1, -1, ErrOffsetOutOfRange}, // above every epoch: cannot be placed
	} {
		r := fetch(c.offset, c.last)
		if c.last == 0 {
			// Epoch 0 is below every known one: the leader answers (0, 0), a
			// divergence at 0 for any fetch offset above it.
			if r.DivergingEndOffset != 0 || r.DivergingEpoch != 0 {
				t.Fatalf("last epoch 0 at %d: diverging (%d, %d), want (0, 0)", c.offset, r.DivergingEpoch, r.DivergingEndOffset)
			}
			continue
		}
		if !errors.Is(r.Err, c.err) || c.err == nil && r.Err != nil {
			t.Fatalf("fetch %d last epoch %d: %v, want %v", c.offset, c.last, r.Err, c.err)
		}
		if r.DivergingEpoch != c.divEpoch || r.DivergingEndOffset != c.divOffset {
			t.Fatalf("fetch %d last epoch %d: diverging (%d, %d), want (%d, %d)", c.offset, c.last, r.DivergingEpoch, r.DivergingEndOffset, c.divEpoch, c.divOffset)
		}
		if r.DivergingEndOffset >= 0 && r.Records.Len != 0 {
			t.Fatal("records sent with a diverging epoch")
		}
	}
	// A diverging fetch does not count as the follower's progress.
	l.mu.Lock()
	leo := l.remote(2).leo
	l.mu.Unlock()
	if leo != 5 {
		t.Fatalf("follower progress %d, want 5 (the last non-diverging fetch)", leo)
	}
	if r := fetch(6, -1); !errors.Is(r.Err, ErrOffsetOutOfRange) {
		t.Fatalf("fetch past the log end without epochs: %v", r.Err)
	}
}

// TestShrinkISR: a follower not caught up for replica.lag.time.max.ms is
// proposed out of the ISR; until the controller accepts, the HW still waits
// for it; afterwards it moves.
func TestShrinkISR(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	lag := tr.l.cfg.ReplicaLagTimeMaxMs
	mustAppend(t, tr.l, t0, "a")
	replicate(t, tr.l, tr.f2, t0+1)
	replicate(t, tr.l, tr.f2, t0+2) // broker 2 at the end; broker 3 silent
	tr.l.MaybeShrinkISR(t0 + lag)
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("shrink within the lag time")
	}
	tr.l.MaybeShrinkISR(t0 + lag + 1)
	it, ok := tr.l.takeAlter()
	if !ok || !slices.Equal(it.NewISR, []int32{1, 2}) {
		t.Fatalf("proposal %v %v, want ISR [1 2]", it, ok)
	}
	mustAppend(t, tr.l, t0+lag+1, "b") // recomputes the HW
	wantHW(t, tr.l, 0)                 // pending shrink: broker 3 still counts
	// One change at a time: nothing else is proposed while it is pending.
	tr.l.MaybeShrinkISR(t0 + 10*lag)
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("a second proposal while one is in flight")
	}
	tr.l.alterResult(it.id, AlterResult{Leader: 1, LeaderEpoch: 0, ISR: it.NewISR, PartitionEpoch: 1}, t0+lag+2)
	wantISR(t, tr.l, 1, 2)
	wantHW(t, tr.l, 1) // broker 2 has a, not b yet
	if tr.l.PartitionEpoch() != 1 {
		t.Fatalf("partition epoch %d after the change", tr.l.PartitionEpoch())
	}
	// The leader never removes itself, and a follower at the leader's end
	// stays however long ago it fetched.
	replicate(t, tr.l, tr.f2, t0+lag+3)
	replicate(t, tr.l, tr.f2, t0+lag+4)
	tr.l.MaybeShrinkISR(t0 + 100*lag)
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("shrank a follower at the log end")
	}
}

// TestExpandISR: an out-of-ISR follower rejoins when it reaches the HW and
// the start of the current leader epoch (KAFKA-7128); the pending member
// counts for the HW at once.
func TestExpandISR(t *testing.T) {
	tr := newTrio(t, []int32{1})
	mustAppend(t, tr.l, t0, "a", "b")
	replicate(t, tr.l, tr.f2, t0+1) // from 0: below the HW 2
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("expanded below the HW")
	}
	replicate(t, tr.l, tr.f2, t0+2) // from 2
	// Pending: broker 2 already counts (past the lag time, as a member, not
	// as a caught-up follower), so an append does not commit alone.
	mustAppend(t, tr.l, t0+3+tr.l.cfg.ReplicaLagTimeMaxMs, "c")
	wantHW(t, tr.l, 2)
	if got := commitAlter(t, tr.l, t0+3); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("expansion to %v", got)
	}
	wantISR(t, tr.l, 1, 2)

	// KAFKA-7128: the HW below the epoch start is not enough.
	l := newTestPartition(t, 1, vfs.NewMem())
	f := newTestPartition(t, 2, vfs.NewMem())
	mustLeader(t, l, state(1, 0, []int32{1}), t0)
	mustAppend(t, l, t0, "a", "b")
	mustFollower(t, f, state(1, 0, []int32{1}), t0)
	replicate(t, l, f, t0) // f at 0 -> gets a, b
	mustLeader(t, l, state(1, 1, []int32{1}), t0)
	mustAppend(t, l, t0, "c")
	mustFollower(t, f, state(1, 1, []int32{1}), t0)
	l.mu.Lock()
	l.hw = 1 // an HW below the epoch start (2): e.g. inherited from its follower days
	l.mu.Unlock()
	l.mu.Lock()
	r := l.remote(2)
	r.leo = 1
	l.maybeExpandISR(r)
	pending := l.isr.pending
	l.mu.Unlock()
	if pending != noChange {
		t.Fatal("expanded with a follower below the leader epoch's start")
	}
}

// TestMaximalISRForAcks: a pending expansion counts for acks=-1 right away,
// a pending shrink does not lower the count.
func TestAlterPartitionErrors(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	mustAppend(t, tr.l, t0, "a")
	lag := tr.l.cfg.ReplicaLagTimeMaxMs
	tr.l.MaybeShrinkISR(t0 + lag + 1)
	it, _ := tr.l.takeAlter()
	// Retriable: sent again.
	tr.l.alterResult(it.id, AlterResult{ErrorCode: 7}, t0)
	it2, ok := tr.l.takeAlter()
	if !ok || it2.id != it.id {
		t.Fatal("a retriable error did not send the change again")
	}
	// INELIGIBLE_REPLICA: dropped; the next check may propose again.
	tr.l.alterResult(it2.id, AlterResult{ErrorCode: 107}, t0)
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("an ineligible change was sent again")
	}
	tr.l.MaybeShrinkISR(t0 + lag + 2)
	it2, ok = tr.l.takeAlter()
	if !ok {
		t.Fatal("no new proposal after an ineligible one was dropped")
	}
	// FENCED_LEADER_EPOCH: given up until the next LeaderAndIsr.
	tr.l.alterResult(it2.id, AlterResult{ErrorCode: 74}, t0)
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("a fenced change was sent again")
	}
	tr.l.MaybeShrinkISR(t0 + 3*lag)
	if _, ok := tr.l.takeAlter(); ok {
		t.Fatal("a new change while a refused one waits for LeaderAndIsr")
	}
	wantISR(t, tr.l, 1, 2, 3)
	// The next LeaderAndIsr clears it; a late answer to the old proposal is ignored.
	mustLeader(t, tr.l, state(1, 1, []int32{1, 2}), t0+3*lag)
	tr.l.alterResult(it.id, AlterResult{Leader: 1, LeaderEpoch: 1, ISR: []int32{1}, PartitionEpoch: 9}, t0)
	wantISR(t, tr.l, 1, 2)
	// Success for another leader epoch is not applied.
	tr.l.MaybeShrinkISR(t0 + 5*lag)
	it3, ok := tr.l.takeAlter()
	if !ok {
		t.Fatal("no shrink proposed")
	}
	tr.l.alterResult(it3.id, AlterResult{Leader: 1, LeaderEpoch: 0, ISR: it3.NewISR, PartitionEpoch: 9}, t0)
	wantISR(t, tr.l, 1, 2)
}

func TestProduceWait(t *testing.T) {
	tr := newTrio(t, []int32{1, 2})
	r, err := tr.l.AppendAsLeader(batch(t, "a"), -1, 2, t0)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Wait
	w.Deadline = t0 + 1000
	if s := tr.l.PollProduce(&w, t0); s != AckPending {
		t.Fatalf("before replication: %v", s)
	}
	ch := tr.l.HWChanged()
	replicate(t, tr.l, tr.f2, t0+1)
	replicate(t, tr.l, tr.f2, t0+2)
	select {
	case <-ch:
	default:
		t.Fatal("the HW moved without a notification")
	}
	if s := tr.l.PollProduce(&w, t0+2); s != AckCommitted || s.ErrorCode() != 0 {
		t.Fatalf("after the ISR has it: %v", s)
	}
	// Timeout.
	r = mustAppendAcks(t, tr.l, -1, 2, t0+3, "b")
	w = r.Wait
	w.Deadline = t0 + 10
	if s := tr.l.PollProduce(&w, t0+10); s != AckTimedOut || s.ErrorCode() != 7 {
		t.Fatalf("at the deadline: %v", s)
	}
	// The ISR shrank to 1 before the HW passed: NOT_ENOUGH_REPLICAS_AFTER_APPEND.
	r = mustAppendAcks(t, tr.l, -1, 2, t0+11, "c")
	w = r.Wait
	w.Deadline = t0 + 1e9
	lag := tr.l.cfg.ReplicaLagTimeMaxMs
	tr.l.MaybeShrinkISR(t0 + 2 + lag + 1)
	commitAlter(t, tr.l, t0+2+lag+2)
	if s := tr.l.PollProduce(&w, t0+2+lag+2); s != AckNotEnoughReplicasAfterAppend || s.ErrorCode() != 20 {
		t.Fatalf("after the ISR shrank: %v", s)
	}
	// Leadership lost, even if regained before the waiter looks again.
	r = mustAppendAcks(t, tr.l, -1, 1, t0+1e6, "d")
	w = r.Wait
	w.Deadline = t0 + 1e9
	ch = tr.l.HWChanged()
	mustFollower(t, tr.l, state(2, 1, []int32{2}), t0+1e6)
	select {
	case <-ch:
	default:
		t.Fatal("losing leadership did not wake waiters")
	}
	mustLeader(t, tr.l, state(1, 2, []int32{1}), t0+1e6)
	if s := tr.l.PollProduce(&w, t0+1e6); s != AckNotLeader || s.ErrorCode() != 6 {
		t.Fatalf("after leadership moved away and back: %v", s)
	}
}

func mustAppendAcks(t *testing.T, p *Partition, acks int16, minISR int, now int64, values ...string) AppendResult {
	t.Helper()
	r, err := p.AppendAsLeader(batch(t, values...), acks, minISR, now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAppendAsLeaderAllocs: the leader's append path allocates nothing (on
// the real filesystem: MemFS grows its buffers).
func TestAppendAsLeaderAllocs(t *testing.T) {
	p := newTestPartitionAt(t, 1, vfs.OS, t.TempDir())
	mustLeader(t, p, state(1, 0, []int32{1}), t0)
	b := batch(t, "0123456789012345678901234567890123456789")
	mustAppend(t, p, t0, "warm")
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := p.AppendAsLeader(b, -1, 1, t0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per leader append", allocs)
	}
}

func TestDeleteRecords(t *testing.T) {
	tr := newTrio(t, []int32{1, 2})
	mustAppend(t, tr.l, t0, "a", "b", "c")
	if _, err := tr.l.DeleteRecords(1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past the HW 0: %v", err)
	}
	replicate(t, tr.l, tr.f2, t0)
	replicate(t, tr.l, tr.f2, t0) // HW 3
	if s, err := tr.l.DeleteRecords(2); err != nil || s != 2 {
		t.Fatalf("DeleteRecords(2) = %d, %v", s, err)
	}
	if want := []EpochEntry{{Epoch: 0, StartOffset: 2}}; !slices.Equal(tr.l.Epochs(), want) {
		t.Fatalf("leader epochs %v", tr.l.Epochs())
	}
	replicate(t, tr.l, tr.f2, t0)
	if s := tr.f2.Log().LogStartOffset(); s != 2 {
		t.Fatalf("follower log start %d, want the leader's 2", s)
	}
	if _, err := tr.f2.DeleteRecords(-1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("DeleteRecords on a follower: %v", err)
	}
	// A follower that lost everything fetches below the log start: out of
	// range, and it starts over at the leader's log start.
	mustFollower(t, tr.f3, state(1, 0, []int32{1, 2}), t0)
	for i := 0; i < 2; i++ {
		if r := replicate(t, tr.l, tr.f3, t0); !errors.Is(r.Err, ErrOffsetOutOfRange) && i == 0 {
			t.Fatalf("fetch below the log start: %v", r.Err)
		}
		if i == 0 {
			for _, o := range []int64{tr.l.Log().LogEndOffset(), tr.l.Log().LogStartOffset()} {
				part, leader, ok := tr.f3.listOffsetsPart(t0)
				if !ok {
					t.Fatal("no ListOffsets")
				}
				got, err := tr.l.OffsetForReplica(part.CurrentLeaderEpoch, part.Timestamp)
				if err != nil || got != o {
					t.Fatalf("leader offsets for %d: %d %v, want %d", part.Timestamp, got, err, o)
				}
				resp := kmsg.NewListOffsetsResponseTopicPartition()
				resp.Offset = got
				if err := tr.f3.handleListOffsets(leader, &part, &resp, t0); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The batch holding the log start came whole (Kafka's
	// UnexpectedAppendOffsetException case); the log start is the leader's.
	if s := tr.f3.Log().LogStartOffset(); s != 2 {
		t.Fatalf("follower log start %d after starting over", s)
	}
	if got := readLog(t, tr.f3.Log(), -1); got[len(got)-1] != (entry{2, 0, "c"}) {
		t.Fatalf("follower started over with %v", got)
	}
}

// TestExpandISRIneligible: a caught-up follower the broker does not count
// eligible (Config.IsrEligible: not alive in its metadata cache, KIP-841)
// is not proposed however often it fetches (the controller would refuse
// it, and each fetch would propose it again); once it is eligible, its
// next fetch proposes it.
func TestExpandISRIneligible(t *testing.T) {
	tr := newTrio(t, []int32{1})
	var alive atomic.Bool
	tr.l.cfg.IsrEligible = func(id int32) bool { return id != 2 || alive.Load() }
	mustAppend(t, tr.l, t0, "a")
	for i := int64(1); i <= 3; i++ {
		replicate(t, tr.l, tr.f2, t0+i)
		if it, ok := tr.l.takeAlter(); ok {
			t.Fatalf("fetch %d: proposed ISR %v with broker 2 not eligible", i, it.NewISR)
		}
	}
	alive.Store(true)
	replicate(t, tr.l, tr.f2, t0+10)
	if got := commitAlter(t, tr.l, t0+10); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("expansion to %v once broker 2 is eligible", got)
	}
}
