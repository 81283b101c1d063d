package kwire

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReceiveEarly: the fake broker writes the first half of its answer
// and the rest only once the next request has come, so the exchange
// finishes only if ReceiveEarly sent that request from its hook while
// the answer was arriving; both answers come back whole and in order.
func TestReceiveEarly(t *testing.T) {
	answer := func(corr int32) []byte {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic = "t"
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = bytes.Repeat([]byte{byte(corr)}, 100_000)
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
		return frame(corr, []byte{0}, resp.AppendTo(nil))
	}
	var rest []byte
	var whole atomic.Bool
	f := startFake(t, func(c net.Conn, r reqFrame) bool {
		a := answer(r.corr)
		if whole.Load() {
			_, err := c.Write(a)
			return err == nil
		}
		if rest == nil {
			rest = a[len(a)/2:]
			_, err := c.Write(a[:len(a)/2])
			return err == nil
		}
		_, err := c.Write(append(rest, a...))
		return err == nil
	})
	c := dial(t, f.addr(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	s1, err := c.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	calls, size := 0, 0
	b1 := make([]byte, 0, 200_000)
	resp, s2, sent, err := c.ReceiveEarly(ctx, s1, &b1, func(got []byte, n int) kmsg.Request {
		calls, size = calls+1, n
		if len(got) >= n {
			t.Errorf("hook called with the whole frame (%d bytes)", n)
		}
		return req
	})
	if err != nil || !sent {
		t.Fatalf("first answer: sent %v, %v", sent, err)
	}
	var b2 []byte
	resp2, err := c.Receive(ctx, s2, &b2)
	if err != nil {
		t.Fatal(err)
	}
	rec1 := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	rec2 := resp2.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	if !bytes.Equal(rec1, bytes.Repeat([]byte{byte(s1.corr)}, 100_000)) || !bytes.Equal(rec2, bytes.Repeat([]byte{byte(s2.corr)}, 100_000)) {
		t.Fatal("answers out of order or mixed")
	}
	if calls != 1 || size != len(answer(0))-4 {
		t.Fatalf("hook called %d times with size %d, want once (the request went at once) with %d", calls, size, len(answer(0))-4)
	}
	// an answer larger than the buffer's capacity is read without the hook
	whole.Store(true)
	s3, err := c.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var b3 []byte
	if _, _, sent, err := c.ReceiveEarly(ctx, s3, &b3, func([]byte, int) kmsg.Request { t.Error("hook called"); return nil }); err != nil || sent {
		t.Fatalf("third answer: sent %v, %v", sent, err)
	}
}
