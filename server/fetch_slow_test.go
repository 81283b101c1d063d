package server

import (
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/record"
)

// fillTopic creates topic (one partition) and appends n batches of one
// size-byte record, stamped now so that they share one segment; then it
// closes its connection and waits until the broker has dropped it.
func fillTopic(t *testing.T, s *Server, topic string, n, size int) {
	t.Helper()
	base := s.connCount()
	r := newTopic(t, s, topic, 1)
	for i := range n {
		p := r.roundTrip(produceRequest(topic, 0, nowBatch(t, size), 9), int32(100+i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	r.nc.Close()
	waitFor(t, 20*time.Second, "the filling connection to be dropped", func() bool { return s.connCount() == base })
}

// bigFetch asks for everything from offset 0 of topic/0 in one response.
func bigFetch(topic string) *kmsg.FetchRequest {
	req := fetchRequest(12, topic, 0, 0)
	req.MaxWaitMillis = 0
	req.Topics[0].Partitions[0].PartitionMaxBytes = 50 << 20
	return req
}

// stalledReader dials the broker with a tiny receive buffer, asks for a
// response far larger than the socket buffers can hold and never reads it.
func stalledReader(t *testing.T, s *Server, topic string) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("slow")).AppendRequest(nil, bigFetch(topic), 1)); err != nil {
		t.Fatal(err)
	}
	return nc.(*net.TCPConn)
}

// produceAndFetch is one other client's produce and fetch round trip; it
// fails the test if either is not answered.
func produceAndFetch(t *testing.T, r *rawConn, topic string, corr int32) {
	t.Helper()
	p := r.roundTrip(produceRequest(topic, 0, makeBatch(t, 1, 100), 9), corr).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce while a consumer stalls: error %d", p.ErrorCode)
	}
	f := fetchRequest(12, topic, 0, p.BaseOffset)
	f.MaxWaitMillis = 0
	fp := r.roundTrip(f, corr+1).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || len(fp.RecordBatches) == 0 {
		t.Fatalf("fetch while a consumer stalls: error %d, %d bytes", fp.ErrorCode, len(fp.RecordBatches))
	}
}

// TestStalledConsumer: a consumer that asks for a large fetch and never
// reads costs its own connection only. While it stalls mid-sendfile, other
// clients' produces and fetches (on the stalled topic and another) are
// served; once no byte has moved for connections.max.idle.ms the broker
// closes it, and its goroutine and file region go. Before, a stalled
// response held its connection for a fixed 30 s whatever
// connections.max.idle.ms said.
func TestStalledConsumer(t *testing.T) {
	s := startServer(t, t.TempDir(), "connections.max.idle.ms=600000")
	fillTopic(t, s, "big", 160, 100_000) // 16 MB: far beyond the socket buffers
	newTopic(t, s, "other", 1).nc.Close()
	waitFor(t, 20*time.Second, "the creating connection to be dropped", func() bool { return s.connCount() == 0 })
	base := 0
	goroutines := runtime.NumGoroutine()
	sent := sendfileBytes.Load()
	slow := stalledReader(t, s, "big")
	waitFor(t, 20*time.Second, "the stalled fetch to start sending", func() bool { return sendfileBytes.Load() > sent && s.connCount() == base+1 })
	// Other clients are served while the stalled response is in flight: if
	// the broker waited on the stalled socket, these round trips would only
	// be answered when it gives up, minutes from now.
	r := dialRaw(t, s)
	for i := range 5 {
		produceAndFetch(t, r, "other", int32(10*i))
		produceAndFetch(t, r, "big", int32(10*i+5))
	}
	if n := s.connCount(); n != base+2 {
		t.Fatalf("%d connections, want %d: the stalled one was closed early", n, base+2)
	}
	slow.Close()
	waitFor(t, 20*time.Second, "the broker to drop the closed consumer", func() bool { return s.connCount() == base+1 })

	// With a short idle time the broker gives up on a stalled consumer. Its
	// data is written by a broker with the long idle time: on a loaded
	// machine a pause between two of the 160 produces can outlast a short
	// one, and the broker would rightly close the filling connection.
	dir2 := t.TempDir()
	fill := startServer(t, dir2, "connections.max.idle.ms=600000")
	fillTopic(t, fill, "big", 160, 100_000)
	fill.Close()
	s2 := startServer(t, dir2, "connections.max.idle.ms=1000")
	base = s2.connCount()
	sent = sendfileBytes.Load()
	slow2 := stalledReader(t, s2, "big")
	waitFor(t, 20*time.Second, "the stalled fetch to start sending", func() bool { return sendfileBytes.Load() > sent })
	waitFor(t, 20*time.Second, "the broker to close the stalled consumer", func() bool { return s2.connCount() == base })
	// The client sees its connection end after the bytes that did go out.
	_ = slow2.SetReadDeadline(time.Now().Add(20 * time.Second))
	var buf [64 << 10]byte
	for {
		if _, err := slow2.Read(buf[:]); err != nil {
			break
		}
	}
	healthy(t, s2)
	s.Close()
	s2.Close()
	waitFor(t, 20*time.Second, "the connections' goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
}

// TestResetConsumer: a consumer that resets its connection (RST) mid-
// sendfile costs nothing more: the broker drops the connection at once
// (the idle time here is far longer than the test's wait) and keeps serving.
func TestResetConsumer(t *testing.T) {
	s := startServer(t, t.TempDir(), "connections.max.idle.ms=600000")
	fillTopic(t, s, "big", 160, 100_000)
	base := s.connCount()
	for range 3 {
		slow := stalledReader(t, s, "big")
		var b [4096]byte
		_ = slow.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := slow.Read(b[:]); err != nil { // the response has started
			t.Fatal(err)
		}
		_ = slow.SetLinger(0)
		slow.Close() // RST
		waitFor(t, 20*time.Second, "the broker to drop the reset connection", func() bool { return s.connCount() == base })
	}
	r := dialRaw(t, s)
	produceAndFetch(t, r, "big", 1)
}

// TestSendfileFallback: a sendfile that fails with EINVAL or ENOSYS before
// its first byte (a filesystem or kernel without it) is replaced by a
// buffered copy, and the consumer gets every record; one that fails after
// bytes went out closes the connection.
func TestSendfileFallback(t *testing.T) {
	s := startServer(t, t.TempDir())
	fillTopic(t, s, "fb", 4, 20_000) // above fetchInlineMax: sendfile path
	orig := sendfileCall.Load()
	defer sendfileCall.Store(orig)
	for _, errno := range []unix.Errno{unix.EINVAL, unix.ENOSYS} {
		var mu sync.Mutex
		calls := 0
		fail := func(out, in int, off *int64, n int) (int, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			return 0, errno
		}
		sendfileCall.Store(&fail)
		before := sendfileFallbacks.Load()
		r := dialRaw(t, s)
		resp := r.roundTrip(bigFetch("fb"), 1).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || countBatches(t, p.RecordBatches) != 4 {
			t.Fatalf("%v: error %d, %d bytes of records", errno, p.ErrorCode, len(p.RecordBatches))
		}
		mu.Lock()
		n := calls
		mu.Unlock()
		if sendfileFallbacks.Load() != before+1 || n != 1 {
			t.Fatalf("%v: %d fallbacks, %d sendfile calls", errno, sendfileFallbacks.Load()-before, n)
		}
	}
	// EINVAL after the first bytes: the response cannot be completed.
	real := *orig
	start := int64(-1)
	cut := func(out, in int, off *int64, n int) (int, error) {
		if start < 0 {
			start = *off
		}
		if *off > start {
			return 0, unix.EINVAL
		}
		return real(out, in, off, min(n, 1000))
	}
	sendfileCall.Store(&cut)
	r := dialRaw(t, s)
	r.send(bigFetch("fb"), 1)
	_ = r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := r.readFrame(); err == nil {
		t.Fatal("a response cut by sendfile came whole")
	}
	sendfileCall.Store(orig)
	healthy(t, s)
}

// countBatches counts the whole record batches in a Fetch's record bytes
// (a response cut by a byte limit may end inside one, as Kafka's do).
func countBatches(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) >= record.BatchHeaderSize {
		size := 12 + int(record.Batch(b).Length())
		if size > len(b) {
			break
		}
		b = b[size:]
		n++
	}
	return n
}

// TestFetchResponseCoalesced: the pieces of a Fetch response before each
// file region go with MSG_MORE, so each region's header shares TCP segments
// with its records; only the last piece is pushed. Before, every piece and
// region was written on its own (2N+1 pushes for N regions).
func TestFetchResponseCoalesced(t *testing.T) {
	s := startServer(t, t.TempDir())
	r := newTopic(t, s, "co", 3)
	for p := range int32(3) {
		for i := range 3 {
			pr := r.roundTrip(produceRequest("co", p, makeBatch(t, 1, 20_000), 9), int32(10*p)+int32(i)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if pr.ErrorCode != 0 {
				t.Fatal(pr.ErrorCode)
			}
		}
	}
	orig := sendmsgCall.Load()
	defer sendmsgCall.Store(orig)
	var mu sync.Mutex
	var flags []int
	record := func(fd int, p, oob []byte, to unix.Sockaddr, fl int) (int, error) {
		mu.Lock()
		flags = append(flags, fl)
		mu.Unlock()
		return (*orig)(fd, p, oob, to, fl)
	}
	sendmsgCall.Store(&record)
	req := bigFetch("co")
	rt := &req.Topics[0]
	for p := int32(1); p < 3; p++ {
		rp := rt.Partitions[0]
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	before := sendfileBytes.Load()
	resp := dialRaw(t, s).roundTrip(req, 1).(*kmsg.FetchResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || countBatches(t, p.RecordBatches) != 3 {
			t.Fatalf("partition %d: error %d, %d bytes", p.Partition, p.ErrorCode, len(p.RecordBatches))
		}
	}
	if sendfileBytes.Load() == before {
		t.Fatal("the records did not go with sendfile")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(flags) != 3 {
		t.Fatalf("%d pieces written with sendmsg, want 3 (one before each region)", len(flags))
	}
	for i, fl := range flags {
		if fl&unix.MSG_MORE == 0 {
			t.Fatalf("piece %d written without MSG_MORE", i)
		}
	}
}

// TestBrokerFetchMaxBytes: the broker's fetch.max.bytes caps a Fetch
// response below the request's max_bytes (Kafka's 55 MiB by default); the
// first batch still goes whole when it alone is larger (KIP-74).
func TestBrokerFetchMaxBytes(t *testing.T) {
	s := startServer(t, t.TempDir(), "fetch.max.bytes=1024")
	fillTopic(t, s, "cap", 5, 600)
	resp := dialRaw(t, s).roundTrip(bigFetch("cap"), 1).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || countBatches(t, p.RecordBatches) != 1 || len(p.RecordBatches) > 1024 {
		t.Fatalf("fetch.max.bytes=1024: error %d, %d bytes in %d batches", p.ErrorCode, len(p.RecordBatches), countBatches(t, p.RecordBatches))
	}
	fillTopic(t, s, "huge", 1, 4000)
	p = dialRaw(t, s).roundTrip(bigFetch("huge"), 1).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || countBatches(t, p.RecordBatches) != 1 {
		t.Fatalf("a first batch above fetch.max.bytes: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
}
