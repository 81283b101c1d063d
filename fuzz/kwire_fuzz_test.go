package fuzz

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// kwireRequests are the requests FuzzKwireResponse answers with fuzzed
// bytes: the inter-broker APIs at their pinned versions, and ApiVersions at
// a flexible version (header v0 response).
func kwireRequests() []kmsg.Request {
	mk := func(r kmsg.Request, v int16) kmsg.Request { r.SetVersion(v); return r }
	return []kmsg.Request{
		mk(kmsg.NewPtrApiVersionsRequest(), 3),
		mk(kmsg.NewPtrMetadataRequest(), 9),
		mk(kmsg.NewPtrFetchRequest(), 12),
		mk(kmsg.NewPtrLeaderAndISRRequest(), 5),
		mk(kmsg.NewPtrUpdateMetadataRequest(), 7),
		mk(kmsg.NewPtrStopReplicaRequest(), 3),
		mk(kmsg.NewPtrControlledShutdownRequest(), 0),
		mk(kmsg.NewPtrAlterPartitionRequest(), 1),
		mk(kmsg.NewPtrOffsetForLeaderEpochRequest(), 3),
	}
}

// FuzzKwireResponse answers a kwire request with arbitrary bytes: the
// client returns a response or an error (ErrBadFrame, ErrClosed), never
// panics or hangs. data[0] picks the request; bit 7 of it makes the first
// frame's size and correlation id right, so the fuzzer reaches the body
// decoders.
func FuzzKwireResponse(f *testing.F) {
	reqs := kwireRequests()
	for i, r := range reqs {
		resp := r.ResponseKind()
		resp.SetVersion(r.GetVersion())
		body := resp.AppendTo(nil)
		if resp.IsFlexible() && r.Key() != 18 {
			body = append([]byte{0}, body...)
		}
		frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
		frame = binary.BigEndian.AppendUint32(frame, 1)
		f.Add(append([]byte{byte(i)}, append(frame, body...)...))
		f.Add(append([]byte{byte(i) | 0x80}, append(frame, body...)...))
	}
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		req := reqs[int(data[0]&0x7f)%len(reqs)]
		stream := append([]byte(nil), data[1:]...)
		if data[0]&0x80 != 0 && len(stream) >= 8 {
			binary.BigEndian.PutUint32(stream, uint32(len(stream)-4))
			binary.BigEndian.PutUint32(stream[4:], 1)
		}
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer server.Close()
			var hdr [4]byte
			if _, err := io.ReadFull(server, hdr[:]); err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, server, int64(binary.BigEndian.Uint32(hdr[:]))); err != nil {
				return
			}
			_, _ = server.Write(stream)
		}()
		c, err := kwire.Dial(context.Background(), "pipe", kwire.Options{MaxResponseBytes: 1 << 20,
			Dial: func(context.Context, string, string) (net.Conn, error) { return client, nil }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := c.Request(ctx, req)
		switch {
		case err == nil && resp == nil:
			t.Fatal("no response and no error")
		case err != nil && !errors.Is(err, kwire.ErrBadFrame) && !errors.Is(err, kwire.ErrClosed):
			t.Fatalf("error %v is neither ErrBadFrame nor ErrClosed", err)
		}
		c.Close()
		<-done
	})
}
