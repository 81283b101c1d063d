package kwire

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSendReceive: two Fetches sent before either answer is read come back
// in order, each into the buffer its Receive names, so the first answer's
// records stay intact while the second is read; a Receive out of order and
// a Request while an answer is unread are refused with ErrUnread.
func TestSendReceive(t *testing.T) {
	f := startFake(t, func(c net.Conn, r reqFrame) bool {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = r.version
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic = "t"
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = bytes.Repeat([]byte{byte(r.corr)}, 1000)
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
		c.Write(frame(r.corr, []byte{0}, resp.AppendTo(nil)))
		return true
	})
	c := dial(t, f.addr(), Options{})
	ctx := context.Background()
	req := func() *kmsg.FetchRequest {
		r := kmsg.NewPtrFetchRequest()
		r.Version = 12
		return r
	}
	s1, err := c.Send(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c.Send(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, req()); !errors.Is(err, ErrUnread) {
		t.Fatalf("Request with two answers unread: %v", err)
	}
	var b1, b2 []byte
	if _, err := c.Receive(ctx, s2, &b2); !errors.Is(err, ErrUnread) {
		t.Fatalf("Receive of the second answer first: %v", err)
	}
	r1, err := c.Receive(ctx, s1, &b1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Receive(ctx, s2, &b2)
	if err != nil {
		t.Fatal(err)
	}
	rec1 := r1.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	rec2 := r2.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	if !bytes.Equal(rec1, bytes.Repeat([]byte{byte(s1.corr)}, 1000)) || !bytes.Equal(rec2, bytes.Repeat([]byte{byte(s2.corr)}, 1000)) || s1.corr == s2.corr {
		t.Fatalf("answers out of order or overwritten: %x... and %x...", rec1[:4], rec2[:4])
	}
	if &rec1[0] == &rec2[0] || cap(b1) == 0 || cap(b2) == 0 {
		t.Fatal("the two answers were not read into the buffers named")
	}
	if _, err := c.Request(ctx, req()); err != nil {
		t.Fatalf("Request once every answer is read: %v", err)
	}
}
