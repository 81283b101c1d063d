package cluster_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stratalog/strata/cluster"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBroker is the broker side of the controller's requests, enough for
// the driver tests: a real listener that decodes LeaderAndIsr,
// UpdateMetadata and StopReplica with kmsg, answers them (no error, or
// what answer says), and keeps what a broker would: the highest
// controller epoch seen (requests below it are stale: recorded and
// ignored, as Kafka's STALE_CONTROLLER_EPOCH) and per partition the newest
// state it was told (leader epoch must grow).
type testBroker struct {
	id int32
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	reqs     []kmsg.Request
	maxEpoch int32
	stale    int // requests refused for a stale controller epoch
	live     int // live brokers in the last UpdateMetadata
	parts    map[cluster.TopicPartition]brokerPart
	changed  chan struct{} // closed and replaced at every change
	answer   func(kmsg.Request) kmsg.Response
	conns    map[net.Conn]bool
}

type brokerPart struct {
	leader, leaderEpoch int32
	isr                 []int32
	controllerEpoch     int32
}

func startTestBroker(t testing.TB, id int32) *testBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &testBroker{id: id, ln: ln, parts: map[cluster.TopicPartition]brokerPart{}, changed: make(chan struct{}),
		conns: map[net.Conn]bool{}}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

func (b *testBroker) close() {
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// endpoint is the broker's registration endpoint.
func (b *testBroker) endpoint() cluster.Endpoint {
	a := b.ln.Addr().(*net.TCPAddr)
	return cluster.Endpoint{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: int32(a.Port)}
}

func (b *testBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns[c] = true
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() {
				b.mu.Lock()
				delete(b.conns, c)
				b.mu.Unlock()
				c.Close()
			}()
			b.serve(c)
		}()
	}
}

func (b *testBroker) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		req, corr, err := decodeRequest(buf)
		if err != nil {
			return
		}
		resp := b.handle(req)
		out := binary.BigEndian.AppendUint32(nil, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(corr))
		if resp.IsFlexible() {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// decodeRequest reads a request frame's header (v1/v2) and body.
func decodeRequest(buf []byte) (kmsg.Request, int32, error) {
	if len(buf) < 10 {
		return nil, 0, fmt.Errorf("short frame")
	}
	key, version := int16(binary.BigEndian.Uint16(buf)), int16(binary.BigEndian.Uint16(buf[2:]))
	corr := int32(binary.BigEndian.Uint32(buf[4:]))
	rest := buf[8:]
	if l := int16(binary.BigEndian.Uint16(rest)); l >= 0 {
		rest = rest[2+int(l):]
	} else {
		rest = rest[2:]
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, 0, fmt.Errorf("unknown key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		n, k := binary.Uvarint(rest)
		rest = rest[k:]
		for ; n > 0; n-- {
			_, k := binary.Uvarint(rest)
			rest = rest[k:]
			sz, k := binary.Uvarint(rest)
			rest = rest[k+int(sz):]
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, 0, err
	}
	return req, corr, nil
}

func (b *testBroker) handle(req kmsg.Request) kmsg.Response {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqs = append(b.reqs, req)
	defer b.notify()
	if b.answer != nil {
		if r := b.answer(req); r != nil {
			return r
		}
	}
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		resp := kmsg.NewPtrLeaderAndISRResponse()
		resp.Version = r.Version
		if r.ControllerEpoch < b.maxEpoch {
			b.stale++
			resp.ErrorCode = 11 // STALE_CONTROLLER_EPOCH
			return resp
		}
		b.maxEpoch = r.ControllerEpoch
		for _, ts := range r.TopicStates {
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = ts.TopicID
			for _, ps := range ts.PartitionStates {
				tp := cluster.TopicPartition{Topic: ts.Topic, Partition: ps.Partition}
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Partition = ps.Partition
				if cur, ok := b.parts[tp]; ok && ps.LeaderEpoch < cur.leaderEpoch {
					rp.ErrorCode = 11
				} else {
					b.parts[tp] = brokerPart{leader: ps.Leader, leaderEpoch: ps.LeaderEpoch, isr: ps.ISR, controllerEpoch: ps.ControllerEpoch}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.UpdateMetadataRequest:
		resp := kmsg.NewPtrUpdateMetadataResponse()
		resp.Version = r.Version
		if r.ControllerEpoch < b.maxEpoch {
			b.stale++
			resp.ErrorCode = 11
			return resp
		}
		b.maxEpoch = r.ControllerEpoch
		b.live = len(r.LiveBrokers)
		return resp
	case *kmsg.StopReplicaRequest:
		resp := kmsg.NewPtrStopReplicaResponse()
		resp.Version = r.Version
		if r.ControllerEpoch < b.maxEpoch {
			b.stale++
			resp.ErrorCode = 11
			return resp
		}
		b.maxEpoch = r.ControllerEpoch
		for _, t := range r.Topics {
			for _, p := range t.PartitionStates {
				rp := kmsg.NewStopReplicaResponsePartition()
				rp.Topic, rp.Partition = t.Topic, p.Partition
				resp.Partitions = append(resp.Partitions, rp)
				if p.Delete {
					delete(b.parts, cluster.TopicPartition{Topic: t.Topic, Partition: p.Partition})
				}
			}
		}
		return resp
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp
}

// notify wakes waiters; b.mu is held.
func (b *testBroker) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// requests returns what the broker was sent so far.
func (b *testBroker) requests() []kmsg.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]kmsg.Request(nil), b.reqs...)
}

// state returns a copy of what the broker holds, and a channel closed at
// its next change.
func (b *testBroker) state() (map[cluster.TopicPartition]brokerPart, int32, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := make(map[cluster.TopicPartition]brokerPart, len(b.parts))
	for k, v := range b.parts {
		m[k] = v
	}
	return m, b.maxEpoch, b.changed
}

func (b *testBroker) liveBrokers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live
}
