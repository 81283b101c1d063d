package fuzz

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/server"
)

// panicCatcher is a slog handler that keeps the broker's "panic serving
// request" reports (conn.serve recovers handler panics so a bug costs one
// connection; the fuzz target wants to see them).
type panicCatcher struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicCatcher) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (p *panicCatcher) WithAttrs([]slog.Attr) slog.Handler           { return p }
func (p *panicCatcher) WithGroup(string) slog.Handler                { return p }
func (p *panicCatcher) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, "panic") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, "\n%s: %v", a.Key, a.Value)
		return true
	})
	p.mu.Lock()
	p.panics = append(p.panics, b.String())
	p.mu.Unlock()
	return nil
}

func (p *panicCatcher) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.panics
	p.panics = nil
	return out
}

// requestFrame is a request frame without its size prefix: v1 or v2 header
// (client id "fuzz"), then the body.
func requestFrame(req kmsg.Request, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func seedFrames(tb testing.TB) [][]byte {
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "fuzz", "1"
	av0 := kmsg.NewPtrApiVersionsRequest()

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	mt := kmsg.NewMetadataRequestTopic()
	name := "t"
	mt.Topic = &name
	md.Topics = append(md.Topics, mt)
	mdAll := kmsg.NewPtrMetadataRequest()
	mdAll.Version = 1

	batch, err := record.AppendBatch(nil, record.DefaultBatchOptions(), seedRecords())
	if err != nil {
		tb.Fatal(err)
	}
	zopts := record.DefaultBatchOptions()
	zopts.Codec = record.CodecZstd
	zbatch, err := record.AppendBatch(nil, zopts, seedRecords())
	if err != nil {
		tb.Fatal(err)
	}
	produce := func(v int16, acks int16, b []byte) kmsg.Request {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = v, acks, 1000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "t"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = b
		pt.Partitions = append(pt.Partitions, pp)
		p.Topics = append(p.Topics, pt)
		return p
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 10, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fetch12 := *fetch
	fetch12.Version = 12

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = 5, 1000
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "fuzz-created", 1, 1
	ct.Topics = append(ct.Topics, ctt)

	reqs := []kmsg.Request{av, av0, md, mdAll, produce(9, 1, batch), produce(3, -1, zbatch), produce(7, 0, batch), fetch, &fetch12, lo, ct}
	reqs = append(reqs, groupSeeds()...)
	var out [][]byte
	for i, r := range reqs {
		out = append(out, requestFrame(r, int32(i+1)))
	}
	return out
}

// frameGuard says whether the broker may be sent frame: a CreateTopics
// request asking for more than a few partitions is not (the broker creates
// whatever a request asks for, and a fuzzed count would fill the disk).
func frameGuard(frame []byte) bool {
	if len(frame) < 10 || int16(binary.BigEndian.Uint16(frame)) != int16(kmsg.CreateTopics) {
		return true
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(int16(binary.BigEndian.Uint16(frame[2:])))
	b := frame[8:]
	l := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	if l > 0 {
		if l > len(b) {
			return true // the broker refuses the header
		}
		b = b[l:]
	}
	if req.IsFlexible() {
		n, m := binary.Uvarint(b)
		if m <= 0 {
			return true
		}
		b = b[m:]
		for ; n > 0; n-- {
			if _, m = binary.Uvarint(b); m <= 0 {
				return true
			}
			b = b[m:]
			size, m := binary.Uvarint(b)
			if m <= 0 || size > uint64(len(b)-m) {
				return true
			}
			b = b[m+int(size):]
		}
	}
	if err := req.ReadFrom(b); err != nil {
		return true
	}
	total := 0
	for _, t := range req.Topics {
		n := int(t.NumPartitions)
		if len(t.ReplicaAssignment) > 0 {
			n = len(t.ReplicaAssignment)
		}
		total += max(n, 1)
	}
	return total <= 4
}

func readResponse(c net.Conn) (int32, []byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

func sendFrames(c net.Conn, frames ...[]byte) error {
	var b []byte
	for _, f := range frames {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	_, err := c.Write(b)
	return err
}

// apiVersionsWorks asks a new connection for ApiVersions v3.
func apiVersionsWorks(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "fuzz", "1"
	if err := sendFrames(c, requestFrame(req, 77)); err != nil {
		return err
	}
	corr, body, err := readResponse(c)
	if err != nil {
		return err
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if corr != 77 {
		return fmt.Errorf("correlation id %d", corr)
	}
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions response: %v, error code %d, %d keys", err, resp.ErrorCode, len(resp.ApiKeys))
	}
	return nil
}

// FuzzBrokerFrame sends the fuzz bytes as one request frame (the size prefix
// is added) to an in-process broker over loopback, followed on the same
// connection by an ApiVersions request, and reads whatever comes back. The
// broker must not panic in any handler (it recovers and logs them; the
// target fails on the log line), and a new connection must still get an
// ApiVersions answer. The broker (topic t with 2 partitions, no auto-create)
// lives for the whole fuzzing process, so state carries across inputs.
func FuzzBrokerFrame(f *testing.F) {
	for _, fr := range seedFrames(f) {
		f.Add(fr)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0})
	f.Add([]byte{0, 99, 0, 0, 0, 0, 0, 1, 0, 0})

	catcher := &panicCatcher{}
	ov := []string{
		"listeners=PLAINTEXT://127.0.0.1:0",
		"strata.metrics.listener=127.0.0.1:0",
		"log.dirs=" + f.TempDir(),
		"auto.create.topics.enable=false",
		"num.partitions=2",
		"strata.shutdown.timeout.ms=1000",
		"log.segment.bytes=1048576",
		"group.initial.rebalance.delay.ms=0",
		"offsets.topic.num.partitions=2",
	}
	cfg, err := server.LoadConfig("", ov, nil)
	if err != nil {
		f.Fatal(err)
	}
	s, err := server.Start(cfg, &server.Options{Logger: slog.New(catcher)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	addr := s.Addr().String()
	{ // topic t
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Version, ct.TimeoutMillis = 5, 1000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = "t", 2, 1
		ct.Topics = append(ct.Topics, t)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			f.Fatal(err)
		}
		if err := sendFrames(c, requestFrame(ct, 1)); err != nil {
			f.Fatal(err)
		}
		if _, _, err := readResponse(c); err != nil {
			f.Fatal(err)
		}
		c.Close()
	}
	follow := requestFrame(kmsg.NewPtrApiVersionsRequest(), 0x5eed)

	f.Fuzz(func(t *testing.T, frame []byte) {
		if !frameGuard(frame) {
			return
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if err := sendFrames(c, frame, follow); err == nil {
			for {
				corr, _, err := readResponse(c)
				if err != nil || corr == 0x5eed {
					break // closed (a bad request), timed out (a waiting fetch) or answered
				}
			}
		}
		c.Close()
		if err := apiVersionsWorks(addr); err != nil {
			t.Fatalf("broker stopped serving: %v", err)
		}
		if p := catcher.take(); len(p) > 0 {
			t.Fatalf("broker panicked:\n%s", strings.Join(p, "\n"))
		}
	})
}
