package server

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connCount is the number of connections the broker is serving.
func (s *Server) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// apiVersions sends ApiVersions on r with correlation id corr.
func apiVersions(r *rawConn, corr int32) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	r.send(req, corr)
}

// noResponseYet checks that nothing has arrived on r, without waiting.
func noResponseYet(t *testing.T, r *rawConn, what string) {
	t.Helper()
	_ = r.nc.SetReadDeadline(time.Now())
	var b [1]byte
	if n, err := r.nc.Read(b[:]); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d bytes, %v; want nothing yet", what, n, err)
	}
	_ = r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
}

// answered reads r's response to an ApiVersions with correlation id corr.
func answered(t *testing.T, r *rawConn, corr int32, what string) {
	t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := r.readFrame()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		t.Fatalf("%s: correlation id %d, want %d", what, got, corr)
	}
}

// TestMaxConnections: at max.connections the broker stops accepting; the
// next client waits (in the kernel's backlog) and is served as soon as one
// connection closes. Before, there was no limit.
func TestMaxConnections(t *testing.T) {
	s := startServer(t, t.TempDir(), "max.connections=2")
	a, b := dialRaw(t, s), dialRaw(t, s)
	apiVersions(a, 1)
	answered(t, a, 1, "first connection")
	apiVersions(b, 2)
	answered(t, b, 2, "second connection")
	waitFor(t, 20*time.Second, "the acceptor to wait for a slot", func() bool { return s.limits.waiting.Load() == 1 })
	c := dialRaw(t, s) // connects: the kernel queues it
	apiVersions(c, 3)
	if n := s.connCount(); n != 2 {
		t.Fatalf("%d connections served at max.connections=2", n)
	}
	noResponseYet(t, c, "third connection at the limit")
	a.nc.Close()
	answered(t, c, 3, "third connection after one closed")
	if n := s.connCount(); n != 2 {
		t.Fatalf("%d connections served at max.connections=2", n)
	}
}

// TestMaxConnectionsPerIP: a connection over its address's
// max.connections.per.ip is closed at once, the limit can be overridden per
// address (max.connections.per.ip.overrides), a closed connection frees its
// place, and 0 (allowed only with overrides) refuses every other address.
func TestMaxConnectionsPerIP(t *testing.T) {
	s := startServer(t, t.TempDir(), "max.connections.per.ip=2")
	a, b := dialRaw(t, s), dialRaw(t, s)
	apiVersions(a, 1)
	answered(t, a, 1, "first")
	apiVersions(b, 2)
	answered(t, b, 2, "second")
	c := dialRaw(t, s)
	apiVersions(c, 3)
	c.expectClosed()
	b.nc.Close()
	waitFor(t, 20*time.Second, "the closed connection to be dropped", func() bool { return s.connCount() == 1 })
	d := dialRaw(t, s)
	apiVersions(d, 4)
	answered(t, d, 4, "after one closed")

	s2 := startServer(t, t.TempDir(), "max.connections.per.ip=1", "max.connections.per.ip.overrides=127.0.0.1:3")
	for i := range 3 { // each stays open until the test ends
		r := dialRaw(t, s2)
		apiVersions(r, int32(i))
		answered(t, r, int32(i), "override allows 3")
	}
	r := dialRaw(t, s2)
	apiVersions(r, 9)
	r.expectClosed()

	s3 := startServer(t, t.TempDir(), "max.connections.per.ip=0", "max.connections.per.ip.overrides=[::1]:5")
	r = dialRaw(t, s3)
	apiVersions(r, 1)
	r.expectClosed()
}

// TestQueuedMaxRequestBytes: requests read but not yet served share
// queued.max.request.bytes. Two clients that send size prefixes and stall
// mid-body hold it; a third client's connection then waits before reading
// its request's body, and is served once one of them goes. Before, nothing
// bounded that memory.
func TestQueuedMaxRequestBytes(t *testing.T) {
	s := startServer(t, t.TempDir(), "socket.request.max.bytes=100000", "queued.max.request.bytes=100000")
	stall := func(size int) *rawConn {
		r := dialRaw(t, s)
		var b [14]byte
		binary.BigEndian.PutUint32(b[:], uint32(size))
		r.write(b[:]) // a size and the first bytes of a body that never comes
		return r
	}
	a := stall(90000)
	waitFor(t, 20*time.Second, "the first stalled request's reservation", func() bool { return s.reqMem.inUse() == 90000 })
	b := stall(20000) // granted: memory was left (Kafka's non-strict pool)
	waitFor(t, 20*time.Second, "the second stalled request's reservation", func() bool { return s.reqMem.inUse() == 110000 })
	c := dialRaw(t, s)
	apiVersions(c, 7)
	waitFor(t, 20*time.Second, "the third connection to wait for request memory", func() bool { return s.reqMem.waiting.Load() == 1 })
	noResponseYet(t, c, "request while the memory is used up")
	a.nc.Close() // its half-read request is dropped and its memory given back
	answered(t, c, 7, "request after memory came back")
	b.nc.Close()
	waitFor(t, 20*time.Second, "all request memory given back", func() bool { return s.reqMem.inUse() == 0 && s.reqMem.waiting.Load() == 0 })
}

// TestIdleConnectionsNever: connections.max.idle.ms negative never expires
// a connection (Kafka's meaning); before, a negative idle time expired
// every connection at once.
func TestIdleConnectionsNever(t *testing.T) {
	s := startServer(t, t.TempDir(), "connections.max.idle.ms=-1")
	r := dialRaw(t, s)
	for i := range 3 {
		apiVersions(r, int32(i))
		answered(t, r, int32(i), "with connections.max.idle.ms=-1")
	}
}
