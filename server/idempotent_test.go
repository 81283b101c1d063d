package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
)

// TestIdempotentDefaultClient: franz-go with its default options (an
// idempotent producer: InitProducerId, sequences, acks=all) produces to
// the broker and reads every record back once, under a producer id the
// broker issued.
func TestIdempotentDefaultClient(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "idem", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.DefaultProduceTopic("idem"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ProducerID < 0 {
			t.Fatalf("record produced without a producer id: %+v", r)
		}
	}
	got := consumeAll(t, s, "idem", []int32{0}, len(recs))
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			t.Fatalf("%s twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
}

// dropProxy forwards Kafka connections to a broker and, when armed, drops
// the response to the next Produce request and closes that connection: the
// broker appended the batch, the client never heard so and sends it again.
type dropProxy struct {
	ln      net.Listener
	target  atomic.Value // string
	armed   atomic.Bool
	dropped atomic.Int32
	mu      sync.Mutex
	corr    map[net.Conn]int32 // correlation id of the produce whose response to drop
}

func newDropProxy(t *testing.T) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, corr: map[net.Conn]int32{}}
	t.Cleanup(func() { ln.Close() })
	go acceptEach(ln, p.serve)
	return p
}

// acceptEach serves each connection ln accepts on its own goroutine until
// ln is closed.
func acceptEach(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serve(c)
	}
}

func readKafkaFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 64<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	b := make([]byte, 4+size)
	copy(b, n[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

func (p *dropProxy) serve(c net.Conn) {
	relayFrames(c, p.target.Load().(string), func(key int16, corr int32) {
		if key == int16(kmsg.Produce) && p.armed.CompareAndSwap(true, false) {
			p.mu.Lock()
			p.corr[c] = corr
			p.mu.Unlock()
		}
	}, func(corr int32) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		want, drop := p.corr[c]
		if drop = drop && want == corr; drop {
			delete(p.corr, c)
			p.dropped.Add(1)
		}
		return drop
	})
}

// relayFrames relays Kafka frames between client c and the broker at
// target until either side ends: request sees each request's API key and
// correlation id before it is sent on; at the first response for which
// drop is true the connection is cut, that response and every later one
// lost (a response lost after the broker acted on the request).
func relayFrames(c net.Conn, target string, request func(key int16, corr int32), drop func(corr int32) bool) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		defer up.Close()
		defer c.Close()
		for {
			f, err := readKafkaFrame(c)
			if err != nil || len(f) < 12 {
				return
			}
			request(int16(binary.BigEndian.Uint16(f[4:])), int32(binary.BigEndian.Uint32(f[8:])))
			if _, err := up.Write(f); err != nil {
				return
			}
		}
	}()
	for {
		f, err := readKafkaFrame(up)
		if err != nil || len(f) < 8 {
			return
		}
		if drop(int32(binary.BigEndian.Uint32(f[4:]))) {
			return
		}
		if _, err := c.Write(f); err != nil {
			return
		}
	}
}

// TestIdempotentRetryNotDuplicated: the response to a produce is lost
// (the connection dies after the broker appended the batch); franz-go
// sends the batch again with the same sequence, and the broker answers
// with the original offset instead of appending it twice.
func TestIdempotentRetryNotDuplicated(t *testing.T) {
	p := newDropProxy(t)
	s := startServer(t, t.TempDir(), "advertised.listeners=PLAINTEXT://"+p.ln.Addr().String())
	p.target.Store(s.Addr().String())
	createTopic(t, s, "retried", 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.ln.Addr().String()), kgo.DefaultProduceTopic("retried"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(v string) *kgo.Record {
		t.Helper()
		r := &kgo.Record{Value: []byte(v)}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	produce("before")
	p.armed.Store(true)
	r := produce("retried")
	if p.dropped.Load() != 1 {
		t.Fatalf("%d responses dropped, want 1", p.dropped.Load())
	}
	produce("after")
	if r.Offset != 1 {
		t.Fatalf("retried record at offset %d, want 1", r.Offset)
	}
	got := consumeAll(t, s, "retried", []int32{0}, 3)
	var vals []string
	for _, g := range got {
		vals = append(vals, string(g.Value))
	}
	if fmt.Sprint(vals) != "[before retried after]" {
		t.Fatalf("log holds %v", vals)
	}
	if end := s.topics.partition("retried", 0).log.LogEndOffset(); end != 3 {
		t.Fatalf("log end %d, want 3", end)
	}
}

// TestProduceProducerChecks: raw Produce requests with bad producer
// fields get Kafka's codes and append nothing: a sequence gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch INVALID_PRODUCER_EPOCH, a
// producer id no broker issued UNKNOWN_PRODUCER_ID, a later sequence of a
// producer the partition never saw UNKNOWN_PRODUCER_ID, and a control
// batch from a client INVALID_RECORD.
func TestProduceProducerChecks(t *testing.T) {
	s := startServer(t, t.TempDir())
	createTopic(t, s, "checks", 1)
	cl := newClient(t, s)
	ctx := testCtx(t)
	initResp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || initResp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v, %+v", err, initResp)
	}
	pid := initResp.ProducerID
	send := func(b []byte) int16 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "checks"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	batch := func(pid int64, epoch int16, seq int32, control bool) []byte {
		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
		recs := []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}}
		if control {
			opts.Control, opts.BaseSequence = true, -1
			recs[0].Key, recs[0].Value = record.AppendControlKey(nil, record.ControlCommit), record.AppendEndTxnMarker(nil, record.EndTxnMarker{})
		}
		b, err := record.AppendBatch(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if code := send(batch(pid, 1, 0, false)); code != 0 {
		t.Fatalf("first batch: code %d", code)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want int16
	}{
		{"gap", batch(pid, 1, 5, false), kerr.OutOfOrderSequenceNumber.Code},
		{"old epoch", batch(pid, 0, 1, false), kerr.InvalidProducerEpoch.Code},
		{"never issued", batch(pid+1_000_000, 0, 0, false), kerr.UnknownProducerID.Code},
		{"unknown to the partition", batch(pid+1, 0, 7, false), kerr.UnknownProducerID.Code},
		{"control batch", batch(pid, 1, -1, true), kerr.InvalidRecord.Code},
	} {
		if code := send(c.b); code != c.want {
			t.Errorf("%s: code %d, want %d", c.name, code, c.want)
		}
	}
	if end := s.topics.partition("checks", 0).log.LogEndOffset(); end != 1 {
		t.Fatalf("log end %d, want 1", end)
	}
	if code := send(batch(pid, 1, 1, false)); code != 0 {
		t.Fatalf("next in sequence: code %d", code)
	}
}
