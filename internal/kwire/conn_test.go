package kwire

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func dial(t *testing.T, addr string, o Options) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// apiVersionsBody is a valid ApiVersions response body at version v.
func apiVersionsBody(v int16) []byte {
	r := kmsg.NewPtrApiVersionsResponse()
	r.Version = v
	r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 3, MinVersion: 0, MaxVersion: 12}, {ApiKey: 4, MinVersion: 0, MaxVersion: 7}}
	return r.AppendTo(nil)
}

func apiVersionsReq(v int16) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = v
	return r
}

func TestRequestHeaders(t *testing.T) {
	f := startFake(t, func(c net.Conn, r reqFrame) bool {
		var resp kmsg.Response
		switch r.key {
		case 18:
			c.Write(frame(r.corr, apiVersionsBody(r.version)))
			return true
		case 7:
			cs := kmsg.NewPtrControlledShutdownResponse()
			cs.Version = r.version
			resp = cs
		case 3:
			m := kmsg.NewPtrMetadataResponse()
			m.Version = r.version
			resp = m
		}
		body := resp.AppendTo(nil)
		if resp.IsFlexible() {
			// a header tagged field the client must skip: tag 5, 3 bytes
			c.Write(frame(r.corr, []byte{1, 5, 3, 'a', 'b', 'c'}, body))
		} else {
			c.Write(frame(r.corr, body))
		}
		return true
	})
	c := dial(t, f.addr(), Options{ClientID: "strata-controller"})
	ctx := context.Background()
	for _, v := range []int16{0, 3} { // v3 is flexible, its response header is still v0
		resp, err := c.Request(ctx, apiVersionsReq(v))
		if err != nil {
			t.Fatalf("ApiVersions v%d: %v", v, err)
		}
		if n := len(resp.(*kmsg.ApiVersionsResponse).ApiKeys); n != 2 {
			t.Fatalf("ApiVersions v%d: %d keys", v, n)
		}
	}
	for _, v := range []int16{0, 1, 3} {
		req := kmsg.NewPtrControlledShutdownRequest()
		req.Version, req.BrokerID, req.BrokerEpoch = v, 7, 9
		if _, err := c.Request(ctx, req); err != nil {
			t.Fatalf("ControlledShutdown v%d: %v", v, err)
		}
	}
	m := kmsg.NewPtrMetadataRequest()
	m.Version = 9
	if _, err := c.Request(ctx, m); err != nil {
		t.Fatalf("Metadata v9 with a tagged header field: %v", err)
	}
	reqs := f.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.corr != int32(i+1) {
			t.Errorf("request %d: correlation id %d", i, r.corr)
		}
		v0 := r.key == 7 && r.version == 0
		if v0 != (r.clientID == nil) || !v0 && *r.clientID != "strata-controller" {
			t.Errorf("request %d (key %d v%d): client id %v", i, r.key, r.version, r.clientID)
		}
	}
	// ControlledShutdown v0: the body follows the v0 header directly
	if cs := reqs[2]; len(cs.rest) != 4 || binary.BigEndian.Uint32(cs.rest) != 7 {
		t.Errorf("ControlledShutdown v0 body %x", cs.rest)
	}
	// v3 is flexible: header tags (0) then the body
	if cs := reqs[4]; len(cs.rest) == 0 || cs.rest[0] != 0 {
		t.Errorf("ControlledShutdown v3 header tags %x", cs.rest)
	}
}

// TestBadFrames: each way a response can be broken is an error of its own
// kind, the connection is closed after it, and nothing panics.
func TestBadFrames(t *testing.T) {
	cases := []struct {
		name   string
		answer func(c net.Conn, r reqFrame) bool
		want   error
	}{
		{"size too large", func(c net.Conn, r reqFrame) bool {
			c.Write(binary.BigEndian.AppendUint32(nil, 1<<30))
			return true
		}, ErrBadFrame},
		{"negative size", func(c net.Conn, r reqFrame) bool { c.Write([]byte{0xff, 0xff, 0xff, 0xfe}); return true }, ErrBadFrame},
		{"size below the correlation id", func(c net.Conn, r reqFrame) bool { c.Write([]byte{0, 0, 0, 2, 0, 0}); return true }, ErrBadFrame},
		{"wrong correlation id", func(c net.Conn, r reqFrame) bool {
			c.Write(frame(r.corr+1, apiVersionsBody(r.version)))
			return true
		}, ErrBadFrame},
		{"garbage body", func(c net.Conn, r reqFrame) bool { c.Write(frame(r.corr, []byte{0, 0, 0x7f})); return true }, ErrBadFrame},
		{"bad header tags", func(c net.Conn, r reqFrame) bool {
			c.Write(frame(r.corr, []byte{1, 5, 100, 'x'}))
			return true
		}, ErrBadFrame},
		{"truncated body", func(c net.Conn, r reqFrame) bool {
			b := frame(r.corr, apiVersionsBody(r.version))
			c.Write(b[:len(b)-3])
			return false
		}, ErrClosed},
		{"closed without an answer", func(c net.Conn, r reqFrame) bool { return false }, ErrClosed},
		{"closed mid size", func(c net.Conn, r reqFrame) bool { c.Write([]byte{0, 0}); return false }, ErrClosed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, tc.answer)
			c := dial(t, f.addr(), Options{MaxResponseBytes: 1 << 20})
			req := apiVersionsReq(0)
			if strings.Contains(tc.name, "tags") {
				req = nil
			}
			var err error
			if req != nil {
				_, err = c.Request(context.Background(), req)
			} else {
				m := kmsg.NewPtrMetadataRequest()
				m.Version = 9
				_, err = c.Request(context.Background(), m)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			_, err2 := c.Request(context.Background(), apiVersionsReq(0))
			if !errors.Is(err2, ErrClosed) {
				t.Fatalf("next request: %v, want ErrClosed", err2)
			}
			if tc.want != ErrClosed && !strings.Contains(err2.Error(), err.Error()) {
				t.Fatalf("next request's error %q does not name the cause %q", err2, err)
			}
		})
	}
}

// TestLyingSize: a size prefix of 200 MB followed by a few bytes and EOF
// must not make the client allocate 200 MB.
func TestLyingSize(t *testing.T) {
	f := startFake(t, func(c net.Conn, r reqFrame) bool {
		c.Write(binary.BigEndian.AppendUint32(nil, 200<<20))
		c.Write(make([]byte, 100))
		return false
	})
	c := dial(t, f.addr(), Options{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Request(context.Background(), apiVersionsReq(0))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("allocated %d bytes for a 100-byte answer", grew)
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	f := startFake(t, func(c net.Conn, r reqFrame) bool { return true }) // never answers
	c := dial(t, f.addr(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Request(ctx, apiVersionsReq(0))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if _, err := c.Request(context.Background(), apiVersionsReq(0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after a timeout: %v", err)
	}

	c2 := dial(t, f.addr(), Options{})
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c2.Request(ctx2, apiVersionsReq(0)); done <- err }()
	waitRequests(t, f, 2)
	cancel2()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancel did not interrupt the request")
	}

	c3 := dial(t, f.addr(), Options{})
	go func() { _, err := c3.Request(context.Background(), apiVersionsReq(0)); done <- err }()
	waitRequests(t, f, 3)
	c3.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("close during a request: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not interrupt the request")
	}
}

// TestLateCancelHarmless: a context cancelled after its request finished
// does not break the next request.
func TestLateCancelHarmless(t *testing.T) {
	f := startFake(t, func(c net.Conn, r reqFrame) bool {
		c.Write(frame(r.corr, apiVersionsBody(r.version)))
		return true
	})
	c := dial(t, f.addr(), Options{})
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := c.Request(ctx, apiVersionsReq(0)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		cancel()
	}
}

func waitRequests(t *testing.T, f *fake, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(f.requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the fake broker got %d requests, want %d", len(f.requests()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDialFails(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Dial(context.Background(), addr, Options{DialTimeout: time.Second}); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("dial a closed port: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, "127.0.0.1:9", Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("dial with a cancelled context: %v", err)
	}
	_ = os.ErrDeadlineExceeded
}

var sink kmsg.Response

// TestRequestAllocs: framing costs no allocation: a request allocates no
// more than decoding its response alone does. The broker here answers from
// reused buffers, so it allocates nothing either.
func TestRequestAllocs(t *testing.T) {
	body := apiVersionsBody(3)
	c := dial(t, cannedBroker(t, frame(0, body)), Options{ClientID: "x"})
	req := apiVersionsReq(3)
	ctx := context.Background()
	if _, err := c.Request(ctx, req); err != nil {
		t.Fatal(err)
	}
	withIO := testing.AllocsPerRun(200, func() {
		if _, err := c.Request(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	decodeOnly := testing.AllocsPerRun(200, func() {
		r := req.ResponseKind()
		r.SetVersion(3)
		if err := r.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		sink = r // escapes, as a returned response does
	})
	if withIO > decodeOnly {
		t.Fatalf("%.1f allocations per request, decoding alone %.1f", withIO, decodeOnly)
	}
}

// cannedBroker answers every request with resp (its correlation id patched
// in) from reused buffers: it allocates nothing per request.
func cannedBroker(t testing.TB, resp []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		sc, err := ln.Accept()
		if err != nil {
			return
		}
		defer sc.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := io.ReadFull(sc, buf[:4]); err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(buf))
			if _, err := io.ReadFull(sc, buf[:n]); err != nil {
				return
			}
			copy(resp[4:8], buf[4:8]) // the correlation id
			if _, err := sc.Write(resp); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// BenchmarkRequest is one ApiVersions v3 round trip over loopback.
func BenchmarkRequest(b *testing.B) {
	c, err := Dial(context.Background(), cannedBroker(b, frame(0, apiVersionsBody(3))), Options{ClientID: "x"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := apiVersionsReq(3)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Request(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKeepBufferBytes: a read buffer grown past KeepBufferBytes is dropped
// after its exchange (the default keeps 4 MiB), one within it is reused, so
// a replica fetcher setting it to its largest response reads every fetch
// into the same buffer.
func TestKeepBufferBytes(t *testing.T) {
	records := make([]byte, 6<<20)
	f := startFake(t, func(c net.Conn, r reqFrame) bool {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = r.version
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic = "t"
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = records
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
		c.Write(frame(r.corr, []byte{0}, resp.AppendTo(nil)))
		return true
	})
	fetch := func(c *Conn) []byte {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		resp, err := c.Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
		if len(got) != len(records) {
			t.Fatalf("%d record bytes", len(got))
		}
		return got
	}
	def := dial(t, f.addr(), Options{})
	fetch(def)
	if cap(def.rbuf) != 0 {
		t.Fatalf("default: a %d-byte read buffer kept", cap(def.rbuf))
	}
	kept := dial(t, f.addr(), Options{KeepBufferBytes: 8 << 20})
	a := fetch(kept)
	b := fetch(kept)
	if &a[0] != &b[0] {
		t.Fatal("KeepBufferBytes 8 MiB: the second response was read into a new buffer")
	}
}
