package replica

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/vfs"
)

// TestQuotaRate: the rate is the bytes of the live samples over the time
// since the oldest began, at least num-1 windows (Kafka's Rate); over the
// bound it is Exceeded until WaitMs has passed, and not a millisecond
// longer: WaitMs counts the real time since the oldest sample began, and
// the sample's expiry. A sample num windows old is dropped, a removed
// bound never throttles, and only the listed partitions are throttled.
func TestQuotaRate(t *testing.T) {
	q := NewQuota(2, 1)
	q.Record(5000, t0)
	if q.Exceeded(t0) || q.WaitMs(t0) != 0 {
		t.Fatal("unbounded quota exceeded")
	}
	q.SetRate(1000)
	// 5000 bytes over the minimum of 1 s: over 1000 B/s. They would take
	// 5 s at the rate, but the sample expires at t0+2000; WaitMs is one
	// window at most.
	if !q.Exceeded(t0 + 10) {
		t.Fatal("5000 B in 1 s not over 1000 B/s")
	}
	if w := q.WaitMs(t0 + 10); w != 1000 {
		t.Fatalf("wait %d ms, want 1000 (one window)", w)
	}
	if w := q.WaitMs(t0 + 1500); w != 500 {
		t.Fatalf("wait %d ms, want 500 (until the sample expires)", w)
	}
	if q.Exceeded(t0 + 2000) {
		t.Fatal("sample older than num windows still counted")
	}
	q.Record(900, t0+2000)
	if q.Exceeded(t0+2100) || q.WaitMs(t0+2100) != 0 {
		t.Fatal("900 B in 1 s (the minimum) over 1000 B/s")
	}
	q.Record(200, t0+2500)
	if !q.Exceeded(t0 + 2600) {
		t.Fatal("1100 B in 1 s not over 1000 B/s")
	}
	// 1100 B need 1.1 s from t0+2000: 500 ms more, not 100 (1.1 s less
	// the minimum of 1 s), after which the rate is still over.
	if w := q.WaitMs(t0 + 2600); w != 500 {
		t.Fatalf("wait %d ms, want 500", w)
	}
	if !q.Exceeded(t0+3099) || q.Exceeded(t0+3100) {
		t.Fatalf("1100 B: exceeded at t0+3099 %v, at t0+3100 %v; want true, false", q.Exceeded(t0+3099), q.Exceeded(t0+3100))
	}
	q.SetRate(0)
	if !q.Exceeded(t0+3100) || q.WaitMs(t0+3100) != 900 { // the first sample expires at t0+4000
		t.Fatalf("rate 0: exceeded %v wait %d, want 900", q.Exceeded(t0+3100), q.WaitMs(t0+3100))
	}
	q.SetRate(-1)
	if q.Exceeded(t0+3100) || q.Rate() != Unthrottled {
		t.Fatal("a removed bound still throttles")
	}

	tp := func(p int32) TopicPartition { return TopicPartition{Topic: "a", Partition: p} }
	q.SetThrottled("a", false, []int32{1, 3})
	if q.IsThrottled(tp(0)) || !q.IsThrottled(tp(1)) || !q.IsThrottled(tp(3)) || q.IsThrottled(TopicPartition{Topic: "b", Partition: 1}) {
		t.Fatal("listed partitions")
	}
	q.SetThrottled("a", true, nil)
	if !q.IsThrottled(tp(7)) {
		t.Fatal("* throttles every partition")
	}
	q.SetThrottled("a", false, nil)
	if q.IsThrottled(tp(1)) {
		t.Fatal("an empty list throttles nothing")
	}
}

// TestWholeBatchBytes: the whole entries at the start of a fetch's
// records; a partial last one and anything after a length that cannot be
// one are not counted, and no length makes it read out of bounds.
func TestWholeBatchBytes(t *testing.T) {
	a, b := batch(t, "one"), batch(t, "two", "three")
	both := append(append([]byte{}, a...), b...)
	for _, tc := range []struct {
		name string
		in   []byte
		want int
	}{
		{"empty", nil, 0},
		{"short header", a[:11], 0},
		{"one", a, len(a)},
		{"two", both, len(both)},
		{"partial last", both[:len(both)-1], len(a)},
		{"header of the next only", both[:len(a)+12], len(a)},
		{"zero length", append(append([]byte{}, a...), make([]byte, 12)...), len(a)},
		{"negative length", append(append([]byte{}, a...), 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0, 1), len(a)},
		{"huge length", append(append([]byte{}, a...), 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff), len(a)},
	} {
		if got := WholeBatchBytes(tc.in); got != int64(tc.want) {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if binary.BigEndian.Uint32(a[8:]) != uint32(len(a)-12) {
		t.Fatal("batch header layout")
	}
}

// TestFollowerThrottlePace drives a throttled follower's fetches on a fake
// clock (Ready's NextMs is when it wakes) from a leader whose batches are
// cut by replica.fetch.max.bytes: each fetch brings one whole batch and
// part of the next. The follower must keep data at its throttle from its
// first byte (within 5%): counting the partial batch it fetches again
// kept it at about 2/3 of the rate. It must also wake when the quota
// allows it, not poll (WaitMs counting the minimum time of num-1 windows
// woke it too soon in the first windows).
func TestFollowerThrottlePace(t *testing.T) {
	m1 := newTestManager(t, 1, vfs.NewMem())
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := *testConfig(2, fsys, "/data")
	cfg.ReplicaFetchMaxBytes = 1500
	cfg.FollowerQuota = NewQuota(2, 1)
	m2, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close() })
	req := lisr(1, 5, lisrPart(0, 1, 0, []int32{1}, 1, 2))
	m1.LeaderAndIsr(req, t0)
	m2.LeaderAndIsr(req, t0)
	l := m1.Partition(testTopic, 0)
	val := strings.Repeat("v", 900)
	var size int64
	for i := 0; i < 600; i++ {
		b := batch(t, val)
		size += int64(len(b))
		if _, err := l.AppendAsLeader(b, 1, 1, t0); err != nil {
			t.Fatal(err)
		}
	}
	const rate = 100_000 // B/s: the move takes about 5.6 s
	q := m2.FollowerQuota()
	q.SetRate(rate)
	q.SetThrottled(testTopic, true, nil)
	f := m2.Partition(testTopic, 0)
	now, first := int64(t0), int64(0)
	var fetches, idle int
	for f.Log().LogEndOffset() < l.Log().LogEndOffset() {
		r := m2.Ready(now)
		if len(r.Fetches) == 0 {
			idle++
			if r.NextMs <= now || idle > 10_000 {
				t.Fatalf("at %d ms: nothing due and next at %d (%d fetches, %d idle wakes)", now-t0, r.NextMs, fetches, idle)
			}
			now = r.NextMs
			continue
		}
		fr := r.Fetches[0]
		resp := m1.HandleFetch(fr.Req, now)
		if n := len(resp.Topics[0].Partitions[0].RecordBatches); n != 1500 && f.Log().LogEndOffset() < l.Log().LogEndOffset()-1 {
			t.Fatalf("fetch of %d bytes, want 1500 (a whole batch and part of the next)", n)
		}
		if first == 0 {
			first = now
		}
		m2.FetchResponse(fr.Target, fr.Req, resp, nil, now)
		fetches++
		now++ // the round trip
	}
	took := float64(now-first) / 1000
	got := float64(size) / took
	t.Logf("%d bytes in %.3f s: %.0f B/s at a throttle of %d; %d fetches, %d idle wakes", size, took, got, rate, fetches, idle)
	if got < 0.95*rate || got > 1.05*rate {
		t.Errorf("kept %.0f B/s, want %d ± 5%%", got, rate)
	}
	// One wake per fetch, and a few more when a sample expires first.
	if idle > fetches+2*int(took)+2 {
		t.Errorf("%d idle wakes for %d fetches: the follower polls instead of waking when the quota allows", idle, fetches)
	}
}

// TestThrottledPartitionCutsLongPoll: a throttled partition left out of a
// fetch over its rate shares the target with a partition that is not
// throttled and has nothing to fetch. That fetch long-polls on the leader;
// it must end when the throttled partition may fetch again (the quota's
// WaitMs), not after replica.fetch.wait.max.ms, or the move waits for the
// poll each time (a move sharing its fetcher with an idle topic ran ~25%
// under its throttle).
func TestThrottledPartitionCutsLongPoll(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := *testConfig(2, fsys, "/data")
	cfg.FollowerQuota = NewQuota(2, 1)
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	m.LeaderAndIsr(lisr(1, 5, lisrPart(0, 1, 0, []int32{1}, 1, 2), lisrPart(1, 1, 0, []int32{1, 2}, 1, 2)), t0)
	q := m.FollowerQuota()
	q.SetRate(1000)
	q.SetThrottled(testTopic, false, []int32{0})
	maxWait := func(now int64) (int32, int) {
		t.Helper()
		r := m.Ready(now)
		if len(r.Fetches) != 1 {
			t.Fatalf("at %d: %d fetches", now-t0, len(r.Fetches))
		}
		f := r.Fetches[0]
		parts := 0
		for _, tp := range f.Req.Topics {
			parts += len(tp.Partitions)
		}
		m.FetchResponse(f.Target, f.Req, nil, errors.New("no answer: the test looks at the request only"), now)
		return f.Req.MaxWaitMillis, parts
	}
	if w, parts := maxWait(t0); w != DefaultReplicaFetchWaitMaxMs || parts != 2 {
		t.Fatalf("under the rate: max wait %d ms over %d partitions, want %d over 2", w, parts, DefaultReplicaFetchWaitMaxMs)
	}
	q.Record(1300, t0) // 1.3 s of the rate at once: over it until t0+1300
	now := int64(t0 + 1000)
	want := q.WaitMs(now)
	if want <= 0 || want >= DefaultReplicaFetchWaitMaxMs {
		t.Fatalf("the quota's wait %d ms: the test needs one below the long poll", want)
	}
	if w, parts := maxWait(now); int64(w) != want || parts != 1 {
		t.Errorf("over the rate: max wait %d ms over %d partitions, want %d (the quota's wait) over 1", w, parts, want)
	}
}
