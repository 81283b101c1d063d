package replica

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
)

// aheadPair is a leader (broker 1, partition 0 alone in its ISR) holding
// six one-record batches and a follower (broker 2) out of the ISR, at log
// end 0, with its first fetch in flight: the follower restarted behind.
func aheadPair(t *testing.T, ffs vfs.FS) (m1, m2 *Manager, first FetchRequest) {
	t.Helper()
	m1, m2 = newTestManager(t, 1, vfs.NewMem()), newTestManager(t, 2, ffs)
	m1.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 0, []int32{1}, 1, 2)), t0)
	m2.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 0, []int32{1}, 1, 2)), t0)
	l := m1.Partition(testTopic, 0)
	for _, v := range []string{"a", "b", "c", "d", "e", "f"} {
		if _, err := l.AppendAsLeader(batch(t, v), 1, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	wantHW(t, l, 6)
	r := m2.Ready(t0)
	if len(r.Fetches) != 1 {
		t.Fatalf("fetches %+v", r.Fetches)
	}
	return m1, m2, r.Fetches[0]
}

// keepBatches cuts a fetch answer's records to their first n batches (a
// leader's replica.fetch.max.bytes would).
func keepBatches(t *testing.T, resp *kmsg.FetchResponse, n int) {
	t.Helper()
	d := &resp.Topics[0].Partitions[0]
	it := record.NewIterator(d.RecordBatches, record.ScanOptions{})
	for i := 0; i < n; i++ {
		if !it.Next() {
			t.Fatalf("answer has %d batches, want at least %d", i, n)
		}
	}
	d.RecordBatches = d.RecordBatches[:it.NextPos()]
}

func onlyPart(t *testing.T, req *kmsg.FetchRequest) kmsg.FetchRequestTopicPartition {
	t.Helper()
	if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %+v", req.Topics)
	}
	return req.Topics[0].Partitions[0]
}

// TestFetchAheadBelowHighWatermark: an answer ending below the leader's
// high watermark lets the next fetch go before it is appended, from where
// it ends; the leader takes that offset without moving its high watermark
// or proposing the follower for the ISR; nothing else goes to the leader
// while both are in flight; the two answers, applied in order, leave the
// follower's log equal to the leader's; the last fetch (at the high
// watermark) is a serial one and earns the ISR as before.
func TestFetchAheadBelowHighWatermark(t *testing.T) {
	m1, m2, first := aheadPair(t, vfs.NewMem())
	l, f := m1.Partition(testTopic, 0), m2.Partition(testTopic, 0)
	resp1 := m1.HandleFetch(first.Req, t0)
	keepBatches(t, resp1, 2)
	ahead, ok := m2.FetchAhead(first, resp1, t0)
	if !ok {
		t.Fatal("no fetch ahead of an answer ending at 2, high watermark 6")
	}
	if p := onlyPart(t, ahead.Req); p.FetchOffset != 2 || p.CurrentLeaderEpoch != 0 || p.LastFetchedEpoch != 0 {
		t.Fatalf("fetch ahead %+v, want offset 2 in epoch 0", p)
	}
	if f.log.LogEndOffset() != 0 {
		t.Fatal("FetchAhead appended")
	}
	if r := m2.Ready(t0); len(r.Fetches) != 0 {
		t.Fatalf("Ready hands out a third fetch: %+v", r.Fetches)
	}
	if _, ok := m2.ReadyFetch(ahead.Target, t0); ok {
		t.Fatal("ReadyFetch with two in flight")
	}
	if _, ok := m2.FetchAhead(first, resp1, t0); ok {
		t.Fatal("a second fetch ahead")
	}
	resp2 := m1.HandleFetch(ahead.Req, t0+1)
	wantHW(t, l, 6)
	wantISR(t, l, 1)
	if r := m1.Ready(t0 + 1); r.AlterPartition != nil {
		t.Fatalf("a fetch ahead from 2 < high watermark 6 proposed an ISR change: %+v", r.AlterPartition)
	}
	m2.FetchResponse(first.Target, first.Req, resp1, nil, t0+1)
	if got := f.log.LogEndOffset(); got != 2 {
		t.Fatalf("log end %d after the first answer, want 2", got)
	}
	keepBatches(t, resp2, 2)
	m2.FetchResponse(ahead.Target, ahead.Req, resp2, nil, t0+1)
	if got := f.log.LogEndOffset(); got != 4 {
		t.Fatalf("log end %d after the answer fetched ahead, want 4", got)
	}
	// The rest reaches the high watermark: no fetch ahead of it.
	next, ok := m2.ReadyFetch(ahead.Target, t0+2)
	if !ok || onlyPart(t, next.Req).FetchOffset != 4 {
		t.Fatalf("next fetch %v %+v", ok, next)
	}
	resp3 := m1.HandleFetch(next.Req, t0+2)
	if _, ok := m2.FetchAhead(next, resp3, t0+2); ok {
		t.Fatal("fetch ahead of an answer reaching the high watermark")
	}
	m2.FetchResponse(next.Target, next.Req, resp3, nil, t0+2)
	next, ok = m2.ReadyFetch(ahead.Target, t0+3)
	if !ok || onlyPart(t, next.Req).FetchOffset != 6 {
		t.Fatalf("last fetch %v %+v", ok, next)
	}
	m1.HandleFetch(next.Req, t0+3)
	if r := m1.Ready(t0 + 3); r.AlterPartition == nil || !slices.Equal(r.AlterPartition.Topics[0].Partitions[0].NewISR, []int32{1, 2}) {
		t.Fatalf("the fetch at the high watermark did not propose the follower for the ISR: %+v", r.AlterPartition)
	}
	if got, want := values(readLog(t, f.log, 6)), values(readLog(t, l.log, 6)); !slices.Equal(got, want) {
		t.Fatalf("follower log %v, leader's %v", got, want)
	}
}

// TestFetchAheadRefused: no fetch goes ahead of an answer that is an
// error, diverges, is empty, reaches the high watermark, or is a throttled
// partition's.
func TestFetchAheadRefused(t *testing.T) {
	cases := map[string]func(*testing.T, *Manager, *kmsg.FetchResponse){
		"error": func(t *testing.T, _ *Manager, r *kmsg.FetchResponse) {
			keepBatches(t, r, 2)
			r.Topics[0].Partitions[0].ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER
		},
		"diverging": func(t *testing.T, _ *Manager, r *kmsg.FetchResponse) {
			keepBatches(t, r, 2)
			r.Topics[0].Partitions[0].DivergingEpoch.Epoch = 0
			r.Topics[0].Partitions[0].DivergingEpoch.EndOffset = 0
		},
		"empty": func(t *testing.T, _ *Manager, r *kmsg.FetchResponse) {
			r.Topics[0].Partitions[0].RecordBatches = nil
		},
		"at the high watermark": func(t *testing.T, _ *Manager, r *kmsg.FetchResponse) {},
		"partial batch at the high watermark": func(t *testing.T, _ *Manager, r *kmsg.FetchResponse) {
			d := &r.Topics[0].Partitions[0]
			d.RecordBatches = d.RecordBatches[:len(d.RecordBatches)-3]
			d.HighWatermark = 5
		},
		"throttled": func(t *testing.T, m2 *Manager, r *kmsg.FetchResponse) {
			keepBatches(t, r, 2)
			m2.FollowerQuota().SetThrottled(testTopic, true, nil)
		},
		"top-level error": func(t *testing.T, _ *Manager, r *kmsg.FetchResponse) {
			keepBatches(t, r, 2)
			r.ErrorCode = 7
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			m1, m2, first := aheadPair(t, vfs.NewMem())
			resp := m1.HandleFetch(first.Req, t0)
			edit(t, m2, resp)
			if a, ok := m2.FetchAhead(first, resp, t0); ok {
				t.Fatalf("fetch ahead: %+v", a.Req.Topics)
			}
		})
	}
}

// TestFetchAheadAnswerDropped: an answer fetched ahead applies only where
// the log then ends exactly at the offset it was fetched from, under the
// same leader and epoch: after the answer before it failed to append (a
// bad CRC, a disk error) or was dropped by a leader change, it is dropped
// too, and the data is fetched again from the log end.
func TestFetchAheadAnswerDropped(t *testing.T) {
	cases := map[string]func(t *testing.T, m2 *Manager, fail *toggleFail, resp1 *kmsg.FetchResponse){
		"bad crc": func(t *testing.T, _ *Manager, _ *toggleFail, resp1 *kmsg.FetchResponse) {
			d := resp1.Topics[0].Partitions[0].RecordBatches
			d[len(d)-1] ^= 0xff // the second batch's last byte: its CRC fails
		},
		"disk error": func(t *testing.T, _ *Manager, fail *toggleFail, _ *kmsg.FetchResponse) {
			fail.on = true
		},
		"leader change": func(t *testing.T, m2 *Manager, _ *toggleFail, _ *kmsg.FetchResponse) {
			m2.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 1, []int32{1}, 1, 2)), t0)
		},
	}
	for name, fault := range cases {
		t.Run(name, func(t *testing.T) {
			fail := &toggleFail{}
			m1, m2, first := aheadPair(t, vfs.Inject(vfs.NewMem(), fail))
			f := m2.Partition(testTopic, 0)
			resp1 := m1.HandleFetch(first.Req, t0)
			keepBatches(t, resp1, 2)
			ahead, ok := m2.FetchAhead(first, resp1, t0)
			if !ok {
				t.Fatal("no fetch ahead")
			}
			resp2 := m1.HandleFetch(ahead.Req, t0)
			keepBatches(t, resp2, 2)
			fault(t, m2, fail, resp1)
			m2.FetchResponse(first.Target, first.Req, resp1, nil, t0)
			fail.on = false
			m2.FetchResponse(ahead.Target, ahead.Req, resp2, nil, t0)
			if got := f.log.LogEndOffset(); got != 0 {
				t.Fatalf("log end %d: the answer fetched ahead from 2 was applied to a log ending at 0", got)
			}
			if name == "disk error" {
				if f.Failed() == nil {
					t.Fatal("the disk error did not fail the partition")
				}
				m2.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 1, []int32{1}, 1, 2)), t0)
			}
			r := m2.Ready(t0 + 1e6)
			if len(r.Fetches) != 1 || onlyPart(t, r.Fetches[0].Req).FetchOffset != 0 {
				t.Fatalf("next fetch %+v, want one from 0", r.Fetches)
			}
		})
	}
}

// TestFetchAheadTruncated: a divergence applied between the fetch ahead
// and its answer (the log cut below the offset it was fetched from) drops
// the answer.
func TestFetchAheadTruncated(t *testing.T) {
	m1, m2, first := aheadPair(t, vfs.NewMem())
	f := m2.Partition(testTopic, 0)
	resp1 := m1.HandleFetch(first.Req, t0)
	keepBatches(t, resp1, 2)
	m2.FetchResponse(first.Target, first.Req, resp1, nil, t0)
	second, ok := m2.ReadyFetch(first.Target, t0)
	if !ok {
		t.Fatal("no second fetch")
	}
	resp2 := m1.HandleFetch(second.Req, t0)
	keepBatches(t, resp2, 2)
	ahead, ok := m2.FetchAhead(second, resp2, t0)
	if !ok || onlyPart(t, ahead.Req).FetchOffset != 4 {
		t.Fatalf("fetch ahead %v %+v", ok, ahead)
	}
	resp3 := m1.HandleFetch(ahead.Req, t0)
	// The answer before it turns out to diverge: the log is cut to 1.
	resp2.Topics[0].Partitions[0].DivergingEpoch.Epoch = 0
	resp2.Topics[0].Partitions[0].DivergingEpoch.EndOffset = 1
	m2.FetchResponse(second.Target, second.Req, resp2, nil, t0)
	if got := f.log.LogEndOffset(); got != 1 {
		t.Fatalf("log end %d after the divergence, want 1", got)
	}
	m2.FetchResponse(ahead.Target, ahead.Req, resp3, nil, t0)
	if got := f.log.LogEndOffset(); got != 1 {
		t.Fatalf("log end %d: the answer fetched ahead from 4 was applied after a cut to 1", got)
	}
	next, ok := m2.ReadyFetch(first.Target, t0)
	if !ok || onlyPart(t, next.Req).FetchOffset != 1 {
		t.Fatalf("next fetch %v %+v, want one from 1", ok, next)
	}
}

// TestFetchAheadCarriesEveryPartition: the fetch ahead is the one Ready
// would give once the answer is appended, every partition of the target
// in it (a partition the answer brought nothing keeps its offset), so
// none waits behind a chain of fetches ahead; a partition whose answer
// reaches the high watermark stops the fetch ahead altogether.
func TestFetchAheadCarriesEveryPartition(t *testing.T) {
	m1, m2 := newTestManager(t, 1, vfs.NewMem()), newTestManager(t, 2, vfs.NewMem())
	parts := []kmsg.LeaderAndISRRequestTopicPartition{lisrPart(0, 1, 0, []int32{1}, 1, 2), lisrPart(1, 1, 0, []int32{1}, 1, 2), lisrPart(2, 1, 0, []int32{1}, 1, 2)}
	m1.LeaderAndIsr(lisr(1, 5, parts...), t0)
	m2.LeaderAndIsr(lisr(1, 5, parts...), t0)
	for _, v := range []string{"a", "b", "c", "d"} {
		if _, err := m1.Partition(testTopic, 0).AppendAsLeader(batch(t, v), 1, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	r := m2.Ready(t0)
	if len(r.Fetches) != 1 || len(r.Fetches[0].Req.Topics[0].Partitions) != 3 {
		t.Fatalf("fetches %+v", r.Fetches)
	}
	first := r.Fetches[0]
	resp := m1.HandleFetch(first.Req, t0)
	keepBatches(t, resp, 2) // partition 0: 2 of 4; partitions 1 and 2: nothing
	ahead, ok := m2.FetchAhead(first, resp, t0)
	if !ok {
		t.Fatal("no fetch ahead")
	}
	got := map[int32]int64{}
	for _, p := range ahead.Req.Topics[0].Partitions {
		got[p.Partition] = p.FetchOffset
	}
	if want := map[int32]int64{0: 2, 1: 0, 2: 0}; len(got) != 3 || got[0] != 2 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("fetch ahead offsets %v, want %v", got, want)
	}
	m2.FetchResponse(first.Target, first.Req, resp, nil, t0)
	m2.FetchResponse(ahead.Target, ahead.Req, m1.HandleFetch(ahead.Req, t0), nil, t0)

	// Partition 1 gets data reaching its high watermark: no fetch ahead,
	// though partition 0 is still behind.
	for _, v := range []string{"e", "f"} {
		if _, err := m1.Partition(testTopic, 0).AppendAsLeader(batch(t, v), 1, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m1.Partition(testTopic, 1).AppendAsLeader(batch(t, "x"), 1, 1, t0); err != nil {
		t.Fatal(err)
	}
	next, ok := m2.ReadyFetch(first.Target, t0)
	if !ok {
		t.Fatal("no next fetch")
	}
	resp = m1.HandleFetch(next.Req, t0)
	keepBatches(t, resp, 1)
	if a, ok := m2.FetchAhead(next, resp, t0); ok {
		t.Fatalf("fetch ahead of an answer bringing partition 1 to its high watermark: %+v", a.Req.Topics)
	}
}
