package replica

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/segment"
)

func TestFollowerAppendKeepsOffsetsAndEpochs(t *testing.T) {
	tr := newTrio(t, []int32{1, 2, 3})
	mustAppend(t, tr.l, t0, "a", "b")
	mustLeader(t, tr.l, state(1, 2, []int32{1, 2, 3}), t0)
	mustAppend(t, tr.l, t0, "c")
	mustAppend(t, tr.l, t0, "d", "e")
	mustFollower(t, tr.f2, state(1, 2, []int32{1, 2, 3}), t0)
	for i := 0; i < 3; i++ {
		replicate(t, tr.l, tr.f2, t0+int64(i))
	}
	lead, fol := readLog(t, tr.l.Log(), -1), readLog(t, tr.f2.Log(), -1)
	if !slices.Equal(lead, fol) || len(fol) != 5 {
		t.Fatalf("follower %v, leader %v", fol, lead)
	}
	if want := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 2}}; !slices.Equal(tr.f2.Epochs(), want) {
		t.Fatalf("follower epochs %v, want %v (from the batches)", tr.f2.Epochs(), want)
	}
	wantHW(t, tr.f2, 0) // broker 3 has not fetched: the leader's HW is 0
}

// fetchData applies a hand-made fetch answer to follower f (leader 1).
func fetchData(t *testing.T, f *Partition, now int64, edit func(d *kmsg.FetchResponseTopicPartition)) error {
	t.Helper()
	part, _, ok := f.fetchPart(now)
	if !ok {
		t.Fatal("no fetch due")
	}
	d := kmsg.NewFetchResponseTopicPartition()
	d.HighWatermark, d.LogStartOffset = 0, 0
	edit(&d)
	return f.handleFetchData(1, &part, &d, now)
}

func TestFollowerRejectsBadBatches(t *testing.T) {
	f := newTestPartition(t, 2, vfs.NewMem())
	mustFollower(t, f, state(1, 0, []int32{1, 2}), t0)
	good := append(epochBatch(t, 0, 0, "a"), epochBatch(t, 1, 0, "b")...)
	corrupt := slices.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff // the second batch's CRC fails
	if err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = corrupt }); !errors.Is(err, ErrInvalidRecords) {
		t.Fatalf("corrupt batch: %v", err)
	}
	if f.Log().LogEndOffset() != 0 || len(f.Epochs()) != 0 {
		t.Fatal("part of a corrupt answer was appended")
	}
	if f.Failed() != nil {
		t.Fatal("bad input from the leader failed the partition")
	}
	if _, _, ok := f.fetchPart(t0 + 1); ok {
		t.Fatal("no backoff after a bad answer")
	}
	// A gap or an overlap with the log is refused too.
	if err := fetchData(t, f, t0+100, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 1, 0, "x") }); err != nil {
		t.Fatalf("a batch after a gap (compaction) is fine: %v", err)
	}
	if err := fetchData(t, f, t0+200, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 0, 0, "y") }); !errors.Is(err, ErrInvalidRecords) {
		t.Fatalf("a batch below the log end: %v", err)
	}
	// A partial last batch (cut by max bytes) is left for the next fetch.
	g := newTestPartition(t, 2, vfs.NewMem())
	mustFollower(t, g, state(1, 0, []int32{1, 2}), t0)
	if err := fetchData(t, g, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = good[:len(good)-5] }); err != nil {
		t.Fatal(err)
	}
	if g.Log().LogEndOffset() != 1 {
		t.Fatalf("log end %d after a whole and a partial batch", g.Log().LogEndOffset())
	}
}

func TestFollowerHighWatermarkAndLogStart(t *testing.T) {
	f := newTestPartition(t, 2, vfs.NewMem())
	mustFollower(t, f, state(1, 0, []int32{1, 2}), t0)
	err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) {
		d.RecordBatches = append(epochBatch(t, 0, 0, "a", "b"), epochBatch(t, 2, 0, "c")...)
		d.HighWatermark = 10 // the leader is further: min(10, our end 3)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantHW(t, f, 3)
	err = fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) {
		d.HighWatermark, d.LogStartOffset = 1, 2 // a new leader's lagging HW; retention moved its start
	})
	if err != nil {
		t.Fatal(err)
	}
	wantHW(t, f, 2) // a follower's HW follows the leader's (never below the log start)
	if s := f.Log().LogStartOffset(); s != 2 {
		t.Fatalf("log start %d, want the leader's 2", s)
	}
	if want := []EpochEntry{{Epoch: 0, StartOffset: 2}}; !slices.Equal(f.Epochs(), want) {
		t.Fatalf("epochs %v after the log start moved", f.Epochs())
	}
}

// followerWith builds a follower whose log holds batches of the given
// epochs, one record each (epochs[i] at offset i).
func followerWith(t *testing.T, epochs ...int32) *Partition {
	t.Helper()
	f := newTestPartition(t, 2, vfs.NewMem())
	mustFollower(t, f, state(1, 0, []int32{1, 2}), t0)
	var recs []byte
	for i, e := range epochs {
		recs = append(recs, epochBatch(t, int64(i), e, string(rune('a'+i)))...)
	}
	if err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = recs }); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTruncateOnDivergence: every branch of Kafka's truncation offset on a
// diverging epoch.
func TestTruncateOnDivergence(t *testing.T) {
	for _, c := range []struct {
		name     string
		log      []int32 // epoch of each offset
		divEpoch int32
		divEnd   int64
		want     int64
	}{
		{"known epoch, leader ends it first", []int32{1, 1, 3, 3, 3}, 3, 3, 3},
		{"known epoch, follower ends it first", []int32{1, 1, 3, 5, 5}, 3, 4, 3},
		{"unknown epoch: end of the largest below", []int32{1, 1, 3, 3, 5}, 4, 5, 4},
		{"epoch below all ours: our first start", []int32{2, 2, 3}, 1, 2, 0},
		{"epoch above all ours: the leader's end", []int32{1, 1, 1}, 7, 2, 2},
		{"never past our end", []int32{1, 1}, 1, 5, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := followerWith(t, c.log...)
			err := fetchData(t, f, t0+1, func(d *kmsg.FetchResponseTopicPartition) {
				d.DivergingEpoch.Epoch, d.DivergingEpoch.EndOffset = c.divEpoch, c.divEnd
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Log().LogEndOffset(); got != c.want {
				t.Fatalf("truncated to %d, want %d", got, c.want)
			}
			if l, ok := f.epochs.Latest(); ok && l.StartOffset >= c.want && c.want > 0 {
				t.Fatalf("epoch cache keeps %v past the cut %d", l, c.want)
			}
		})
	}
}

// TestMakeFollowerTruncation: a log with leader epochs is not cut when the
// partition becomes a follower (the leader tells where it diverges); a log
// without any is cut to the high watermark.
func TestMakeFollowerTruncation(t *testing.T) {
	f := followerWith(t, 0, 0, 0)
	mustFollower(t, f, state(3, 1, []int32{3}), t0)
	if f.Log().LogEndOffset() != 3 {
		t.Fatalf("a log with epochs was cut to %d", f.Log().LogEndOffset())
	}
	g := followerWith(t, -1, -1, -1) // batches from before leader epochs
	g.mu.Lock()
	g.hw = 1
	g.mu.Unlock()
	mustFollower(t, g, state(3, 1, []int32{3}), t0)
	if g.Log().LogEndOffset() != 1 {
		t.Fatalf("a log without epochs kept %d records past its HW 1", g.Log().LogEndOffset()-1)
	}
}

func TestFollowerFetchErrors(t *testing.T) {
	f := followerWith(t, 0, 0)
	// Fenced: no fetch until the next LeaderAndIsr.
	if err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.ErrorCode = kerr.FencedLeaderEpoch.Code }); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.fetchPart(t0 + 1e9); ok {
		t.Fatal("fetching after FENCED_LEADER_EPOCH")
	}
	mustFollower(t, f, state(1, 1, []int32{1, 2}), t0)
	// Other errors back off.
	if err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.ErrorCode = kerr.UnknownLeaderEpoch.Code }); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.fetchPart(t0 + f.cfg.ReplicaFetchBackoffMs - 1); ok {
		t.Fatal("no backoff after UNKNOWN_LEADER_EPOCH")
	}
	part, _, ok := f.fetchPart(t0 + f.cfg.ReplicaFetchBackoffMs)
	if !ok || part.CurrentLeaderEpoch != 1 || part.FetchOffset != 2 || part.LastFetchedEpoch != 0 {
		t.Fatalf("fetch after the backoff: %+v %v", part, ok)
	}
	// An answer to an older request is dropped.
	old := part
	old.CurrentLeaderEpoch = 0
	d := kmsg.NewFetchResponseTopicPartition()
	d.RecordBatches = epochBatch(t, 2, 0, "late")
	if err := f.handleFetchData(1, &old, &d, t0); err != nil || f.Log().LogEndOffset() != 2 {
		t.Fatalf("a stale answer was applied: %v, log end %d", err, f.Log().LogEndOffset())
	}
}

// listOffsets answers f's pending ListOffsets with offset.
func listOffsets(t *testing.T, f *Partition, now int64, offset int64) int64 {
	t.Helper()
	part, leader, ok := f.listOffsetsPart(now)
	if !ok {
		t.Fatal("no ListOffsets due")
	}
	r := kmsg.NewListOffsetsResponseTopicPartition()
	r.Offset = offset
	if err := f.handleListOffsets(leader, &part, &r, now); err != nil {
		t.Fatal(err)
	}
	return part.Timestamp
}

// TestOffsetOutOfRange: reference §1 / Kafka's fetchOffsetAndTruncate.
func TestOffsetOutOfRange(t *testing.T) {
	// The leader's log ends below ours (an unclean election): cut to it.
	f := followerWith(t, 0, 0, 0, 0)
	if err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.ErrorCode = kerr.OffsetOutOfRange.Code }); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.fetchPart(t0); ok {
		t.Fatal("fetching while out of range")
	}
	if ts := listOffsets(t, f, t0, 2); ts != -1 {
		t.Fatalf("asked timestamp %d first, want -1 (latest)", ts)
	}
	if f.Log().LogEndOffset() != 2 {
		t.Fatalf("log end %d, want the leader's 2", f.Log().LogEndOffset())
	}
	if part, _, ok := f.fetchPart(t0); !ok || part.FetchOffset != 2 {
		t.Fatalf("fetch after the cut: %+v %v", part, ok)
	}
	// The leader's log starts past our end (retention while we were away):
	// start over there.
	g := followerWith(t, 0, 0)
	if err := fetchData(t, g, t0, func(d *kmsg.FetchResponseTopicPartition) { d.ErrorCode = kerr.OffsetOutOfRange.Code }); err != nil {
		t.Fatal(err)
	}
	listOffsets(t, g, t0, 100) // leader's end 100 >= ours
	if ts := listOffsets(t, g, t0, 50); ts != -2 {
		t.Fatalf("asked timestamp %d second, want -2 (earliest)", ts)
	}
	if s, e := g.Log().LogStartOffset(), g.Log().LogEndOffset(); s != 50 || e != 50 {
		t.Fatalf("log [%d, %d) after starting over, want [50, 50)", s, e)
	}
	if len(g.Epochs()) != 0 {
		t.Fatalf("epochs %v survived starting over", g.Epochs())
	}
	part, _, ok := g.fetchPart(t0)
	if !ok || part.FetchOffset != 50 || part.LastFetchedEpoch != -1 {
		t.Fatalf("fetch after starting over: %+v %v", part, ok)
	}
	if err := fetchData(t, g, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 50, 3, "x") }); err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, g.Log(), -1); len(got) != 1 || got[0] != (entry{50, 3, "x"}) {
		t.Fatalf("log after starting over: %v", got)
	}
}

// TestDivergenceAtLogEnd: a follower that led an epoch without appending
// anything has that epoch in its cache at its log end; the leader answers
// its fetches with an older epoch ending there. Nothing is cut from the
// log, but the entry must go, or every fetch diverges again.
func TestDivergenceAtLogEnd(t *testing.T) {
	f := followerWith(t, 4, 4)
	mustLeader(t, f, state(2, 8, []int32{2}), t0) // leads epoch 8 from 2, appends nothing
	mustFollower(t, f, state(1, 9, []int32{1, 2}), t0)
	part, _, _ := f.fetchPart(t0)
	if part.LastFetchedEpoch != 8 || part.FetchOffset != 2 {
		t.Fatalf("fetch %+v", part)
	}
	// The leader knows epochs 4 (ending at 2) and 9: epoch 8 is unknown.
	d := kmsg.NewFetchResponseTopicPartition()
	d.DivergingEpoch.Epoch, d.DivergingEpoch.EndOffset = 4, 2
	if err := f.handleFetchData(1, &part, &d, t0); err != nil {
		t.Fatal(err)
	}
	part, _, _ = f.fetchPart(t0)
	if part.LastFetchedEpoch != 4 || part.FetchOffset != 2 {
		t.Fatalf("after the divergence the fetch is %+v, want offset 2 with last epoch 4", part)
	}
}

// TestFollowerStorageError: a log that cannot be written stops the
// partition (a clear error, nothing half-applied) until the next
// LeaderAndIsr.
func TestFollowerStorageError(t *testing.T) {
	mem := vfs.NewMem()
	fail := &toggleFail{}
	f := newTestPartition(t, 2, vfs.Inject(mem, fail))
	mustFollower(t, f, state(1, 0, []int32{1, 2}), t0)
	fail.on = true
	err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) { d.RecordBatches = epochBatch(t, 0, 0, "a") })
	if !errors.Is(err, ErrStorage) || !vfs.IsInjected(err) || f.Failed() == nil {
		t.Fatalf("append on a failing disk: %v (failed: %v)", err, f.Failed())
	}
	if _, _, ok := f.fetchPart(t0 + 1e9); ok {
		t.Fatal("a failed partition keeps fetching")
	}
	fail.on = false
	mustFollower(t, f, state(1, 1, []int32{1, 2}), t0)
	if _, _, ok := f.fetchPart(t0); !ok {
		t.Fatal("no fetch after the next LeaderAndIsr")
	}
	// A leader on a failing disk refuses produce with the storage error.
	l := newTestPartition(t, 1, vfs.Inject(vfs.NewMem(), fail))
	mustLeader(t, l, state(1, 0, []int32{1}), t0)
	fail.on = true
	if _, err := l.AppendAsLeader(batch(t, "x"), 1, 1, t0); !errors.Is(err, ErrStorage) || ErrorCode(err) != 56 {
		t.Fatalf("append on a failing disk: %v", err)
	}
	if err := l.CheckProduce(1, 1); !errors.Is(err, ErrStorage) {
		t.Fatalf("produce after a storage error: %v", err)
	}
}

// TestOnTruncate: the DataDir hears of every cut, with the recovery point
// already lowered to it.
func TestOnTruncate(t *testing.T) {
	f := followerWith(t, 0, 0, 0)
	var cuts []int64
	f.cfg.OnTruncate = func(tp TopicPartition, l *segment.Log) {
		if tp != tp0 {
			t.Errorf("OnTruncate for %v", tp)
		}
		cuts = append(cuts, l.FlushedOffset())
	}
	if err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) {
		d.DivergingEpoch.Epoch, d.DivergingEpoch.EndOffset = 0, 1
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cuts, []int64{0}) && !slices.Equal(cuts, []int64{1}) {
		t.Fatalf("OnTruncate saw recovery points %v, want one at or below the cut 1", cuts)
	}
	if err := f.CheckLeaderEpoch(0, false); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckLeaderEpoch(0, true); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower asked to lead: %v", err)
	}
	if err := f.CheckLeaderEpoch(1, false); !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Fatalf("a newer epoch: %v", err)
	}
}

// TestFollowerBehindLeaderLogStart: the leader's log start (DeleteRecords)
// moved past the point where this follower's log diverged from it, so the
// leader no longer knows the epochs that would tell (it answers the
// follower's last epoch as ending at its log start): its batch holding the
// fetch offset starts below the follower's log end. Nothing the follower
// holds is in the leader's log any more: it cuts its log to the batch and
// appends, instead of refusing the batch at every fetch, for ever (found by
// internal/sim, seed 96: the cluster never converged).
func TestFollowerBehindLeaderLogStart(t *testing.T) {
	f := followerWith(t, 0, 0, 0, 0, 0, 0, 0, 0) // offsets 0-7 of epoch 0; 7 differs from the leader's
	err := fetchData(t, f, t0, func(d *kmsg.FetchResponseTopicPartition) {
		d.RecordBatches = epochBatch(t, 7, 1, "x", "y", "z") // the leader's [7, 9] of epoch 1
		d.LogStartOffset, d.HighWatermark = 8, 10
	})
	if err != nil {
		t.Fatal(err)
	}
	got := readLog(t, f.Log(), -1)
	if f.Log().LogEndOffset() != 10 || f.Log().LogStartOffset() != 8 || got[len(got)-1] != (entry{9, 1, "z"}) {
		t.Fatalf("log [%d, %d) %v, want the leader's batch appended and the log starting at 8", f.Log().LogStartOffset(), f.Log().LogEndOffset(), got)
	}
	if want := []EpochEntry{{Epoch: 1, StartOffset: 8}}; !slices.Equal(f.Epochs(), want) {
		t.Fatalf("epochs %v, want %v", f.Epochs(), want)
	}
	// A log that still reaches into the leader's log is not cut: the batch
	// below its end is refused as before.
	g := followerWith(t, 0, 0, 0, 0, 0, 0, 0, 0)
	err = fetchData(t, g, t0, func(d *kmsg.FetchResponseTopicPartition) {
		d.RecordBatches = epochBatch(t, 7, 1, "x", "y", "z")
		d.LogStartOffset = 5
	})
	if !errors.Is(err, ErrInvalidRecords) || g.Log().LogEndOffset() != 8 {
		t.Fatalf("batch below the log end with the leader's start at 5: %v, log end %d", err, g.Log().LogEndOffset())
	}
}
