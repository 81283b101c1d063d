package replica

import "testing"

// TestQuotaRate: the rate is the bytes of the live samples over the time
// since the oldest began, at least num-1 windows; over the bound it is
// Exceeded until enough time passes (WaitMs tells how long), a removed
// bound never is, and only the listed partitions are throttled.
func TestQuotaRate(t *testing.T) {
	q := NewQuota(2, 1)
	const t0 = 1_000_000
	q.Record(5000, t0)
	if q.Exceeded(t0) {
		t.Fatal("unbounded quota exceeded")
	}
	q.SetRate(1000)
	// 5000 bytes over the minimum of 1 s: 5000 B/s > 1000.
	if !q.Exceeded(t0 + 10) {
		t.Fatal("5000 B in 1 s not over 1000 B/s")
	}
	if w := q.WaitMs(t0 + 10); w != 1000 { // capped at one window
		t.Fatalf("wait %d ms, want 1000", w)
	}
	// After 2 windows the sample is dropped.
	if q.Exceeded(t0 + 2000) {
		t.Fatal("sample older than num windows still counted")
	}
	q.Record(900, t0+2000)
	if q.Exceeded(t0 + 2100) {
		t.Fatal("900 B in 1 s over 1000 B/s")
	}
	q.Record(200, t0+2500)
	if !q.Exceeded(t0 + 2600) {
		t.Fatal("1100 B in 1 s not over 1000 B/s")
	}
	if w := q.WaitMs(t0 + 2600); w != 100 { // 1100 B at 1000 B/s need 1.1 s; 1 s (the minimum) counted
		t.Fatalf("wait %d ms, want 100", w)
	}
	q.SetRate(-1)
	if q.Exceeded(t0+2600) || q.Rate() != Unthrottled {
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
