package server

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testLogger discards logs unless STRATA_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startServer starts a broker on an ephemeral loopback port with its data in
// dir; extra are key=value overrides.
func startServer(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	// metrics on an ephemeral port: tests never share one broker's /metrics
	ov := append([]string{"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "strata.metrics.listener=127.0.0.1:0"}, extra...)
	cfg, err := LoadConfig("", ov, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(cfg, &Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newClient(t testing.TB, s *Server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(s.Addr().String()), kgo.RetryTimeout(5 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// consumeAll reads n records of topic (all partitions given) from the start.
func consumeAll(t testing.TB, s *Server, topic string, parts []int32, n int) []*kgo.Record {
	t.Helper()
	offs := map[int32]kgo.Offset{}
	for _, p := range parts {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := newClient(t, s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// rawConn is a hand-driven client connection for bad-input tests.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, s *Server) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// send writes req with correlation id corr.
func (r *rawConn) send(req kmsg.Request, corr int32) {
	r.t.Helper()
	r.write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr))
}

// readFrame reads one response frame (without the size).
func (r *rawConn) readFrame() ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r.nc, sz[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	_, err := io.ReadFull(r.nc, b)
	return b, err
}

// roundTrip sends req and decodes the response into resp.
func (r *rawConn) roundTrip(req kmsg.Request, corr int32) kmsg.Response {
	r.t.Helper()
	r.send(req, corr)
	b, err := r.readFrame()
	if err != nil {
		r.t.Fatalf("reading response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		r.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	b = b[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		r.t.Fatalf("decoding %T: %v", resp, err)
	}
	return resp
}

// expectClosed asserts the server closes the connection without answering.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	b, err := r.readFrame()
	if err == nil {
		r.t.Fatalf("got a %d-byte response, want the connection closed", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatal("connection still open")
	}
}

// healthy asserts the server still serves a new client.
func healthy(t testing.TB, s *Server) {
	t.Helper()
	r := dialRaw(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	resp := r.roundTrip(req, 99).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(supportedAPIs) {
		t.Fatalf("server unhealthy: %+v", resp)
	}
}
