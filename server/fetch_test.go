package server

import (
	"encoding/binary"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchZeroCopy shows that the broker's allocations per fetch do not grow
// with the bytes fetched: 1 KiB and 1 MiB fetches cost about the same, and
// the record bytes went out through sendfile.
func TestFetchZeroCopy(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := newTopic(t, s, "zc", 1)
	for i := range 1100 {
		resp := r.roundTrip(produceRequest("zc", 0, makeBatch(t, 1, 1000), 9), int32(i)).(*kmsg.ProduceResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatal(c)
		}
	}
	buf := make([]byte, 4<<20)
	fetchOnce := func(req []byte) int {
		r.write(req)
		if _, err := io.ReadFull(r.nc, buf[:4]); err != nil {
			t.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(buf))
		if _, err := io.ReadFull(r.nc, buf[:n]); err != nil {
			t.Fatal(err)
		}
		return n
	}
	measure := func(partMax int32) (bytesPerFetch, allocBytes, allocs float64) {
		req := fetchRequest(12, "zc", 0, 0)
		req.Topics[0].Partitions[0].PartitionMaxBytes = partMax
		frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)
		fetchOnce(frame) // warm up
		const runs = 50
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		total := 0
		for range runs {
			total += fetchOnce(frame)
		}
		runtime.ReadMemStats(&after)
		return float64(total) / runs, float64(after.TotalAlloc-before.TotalAlloc) / runs, float64(after.Mallocs-before.Mallocs) / runs
	}
	sent0 := sendfileBytes.Load()
	smallB, smallAlloc, smallN := measure(1 << 10)
	bigB, bigAlloc, bigN := measure(1 << 20)
	t.Logf("1 KiB fetch: %.0f bytes, %.0f B and %.1f allocations per fetch", smallB, smallAlloc, smallN)
	t.Logf("1 MiB fetch: %.0f bytes, %.0f B and %.1f allocations per fetch", bigB, bigAlloc, bigN)
	if bigB < 1000*1024 || smallB > 4096 {
		t.Fatalf("fetch sizes %.0f and %.0f", smallB, bigB)
	}
	if bigAlloc > smallAlloc+16<<10 || bigN > smallN+20 {
		t.Fatalf("allocations grow with fetch size: %.0f B / %.1f allocs vs %.0f B / %.1f allocs", bigAlloc, bigN, smallAlloc, smallN)
	}
	if sent := sendfileBytes.Load() - sent0; sent < 50*1000*1024 {
		t.Fatalf("only %d bytes went through sendfile", sent)
	}
}

// TestFetchLongPoll: a waiting fetch is woken by an append, long before
// max_wait_ms; with nothing appended it answers empty after max_wait_ms.
func TestFetchLongPoll(t *testing.T) {
	s := startServer(t, t.TempDir())
	newTopic(t, s, "lp", 2)
	r := dialRaw(t, s)

	req := fetchRequest(11, "lp", 0, 0)
	rp := req.Topics[0].Partitions[0]
	rp.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	// The append comes once the fetch is parked, so only the wake can
	// bring its records: the response holding them, long before max_wait,
	// shows the fetch waited and was woken.
	req.MaxWaitMillis, req.MinBytes = 60000, 1
	parks := fetchParks.Load()
	start := time.Now()
	go func() {
		deadline := time.Now().Add(20 * time.Second)
		for fetchParks.Load() == parks && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		p := dialRaw(t, s)
		p.roundTrip(produceRequest("lp", 1, makeBatch(t, 2, 10), 9), 1)
	}()
	resp := r.roundTrip(req, 2).(*kmsg.FetchResponse)
	if fetchParks.Load() == parks {
		t.Fatal("the fetch was answered without waiting")
	}
	if el := time.Since(start); el >= time.Duration(req.MaxWaitMillis)*time.Millisecond {
		t.Fatalf("woken after %v, at max_wait: the append did not wake it", el)
	}
	ps := resp.Topics[0].Partitions
	if len(ps[1].RecordBatches) == 0 || ps[1].HighWatermark != 2 || len(ps[0].RecordBatches) != 0 {
		t.Fatalf("long poll response %+v", ps)
	}

	// With nothing appended the answer comes at max_wait, not before (the
	// upper bound only says it comes: the timer fires, nothing hangs).
	req = fetchRequest(12, "lp", 0, 0)
	req.MaxWaitMillis, req.MinBytes = 300, 1
	start = time.Now()
	resp = r.roundTrip(req, 3).(*kmsg.FetchResponse)
	if el := time.Since(start); el < 290*time.Millisecond || el > 20*time.Second {
		t.Fatalf("empty long poll answered after %v", el)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("empty poll %+v", p)
	}

	// Shutdown wakes a parked fetch, which is answered before the close:
	// without the wake Close would wait for max_wait or its 30 s shutdown
	// timeout, which cuts the connection unanswered.
	req.MaxWaitMillis = 120000
	parks = fetchParks.Load()
	r.send(req, 4)
	waitFor(t, 20*time.Second, "the fetch to park", func() bool { return fetchParks.Load() > parks })
	start = time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el >= time.Duration(s.cfg.ShutdownTimeoutMs)*time.Millisecond {
		t.Fatalf("close took %v, the shutdown timeout", el)
	}
	if b, err := r.readFrame(); err != nil || int32(binary.BigEndian.Uint32(b)) != 4 {
		t.Fatalf("in-flight fetch not answered at shutdown: %v", err)
	}
}

// TestFetchMaxBytes: the response limit holds across partitions, but the
// first partition with data always gets one whole batch.
func TestFetchMaxBytes(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := newTopic(t, s, "mb", 2)
	for p := int32(0); p < 2; p++ {
		for i := range 3 {
			r.roundTrip(produceRequest("mb", p, makeBatch(t, 1, 2000), 9), int32(i))
		}
	}
	req := fetchRequest(12, "mb", 0, 0)
	rp := req.Topics[0].Partitions[0]
	rp.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	req.MaxBytes = 100 // below one batch
	resp := r.roundTrip(req, 10).(*kmsg.FetchResponse)
	ps := resp.Topics[0].Partitions
	if n := len(ps[0].RecordBatches); n < 2000 || n > 2200 {
		t.Fatalf("first partition got %d bytes, want one batch", n)
	}
	if n := len(ps[1].RecordBatches); n != 0 {
		t.Fatalf("second partition got %d bytes past the response limit", n)
	}
	req.MaxBytes = 5000
	req.Topics[0].Partitions[0].PartitionMaxBytes = 4500
	resp = r.roundTrip(req, 11).(*kmsg.FetchResponse)
	ps = resp.Topics[0].Partitions
	if a, b := len(ps[0].RecordBatches), len(ps[1].RecordBatches); a < 4000 || a > 4500 || b != 0 {
		t.Fatalf("partition bytes %d and %d", a, b)
	}
}
