package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// These tests drive the broker with segmentio/kafka-go, whose quirks the protocol
// reference lists: the Writer's zero value is acks=0 (RequireNone: the broker must
// send no response, or the connection desynchronises), its Transport sends
// ApiVersions v0 and picks min(client max, broker max) (Produce 8, Metadata 8), and
// the Reader's Conn picks from fixed version lists (Fetch 10, Metadata 6,
// ListOffsets 1).

// kafkaGoTopic creates topic with parts partitions through kafka-go's Client
// (CreateTopics v5, sent with a null client_id) on a fresh Transport, which the
// Writer then uses: a Transport caches metadata, so one shared across topics made
// by another client would not know them.
func kafkaGoTopic(t *testing.T, s *Server, topic string, parts int) *kafka.Transport {
	t.Helper()
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cl := kafka.Client{Addr: kafka.TCP(s.Addr().String()), Transport: tr, Timeout: 10 * time.Second}
	resp, err := cl.CreateTopics(testCtx(t), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: parts, ReplicationFactor: 1},
	}})
	if err != nil {
		t.Fatalf("kafka-go CreateTopics: %v", err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatalf("kafka-go CreateTopics %s: %v", topic, err)
	}
	return tr
}

// kafkaGoWrite writes n keyed records to topic with w's settings, in several calls so
// one connection carries many requests.
func kafkaGoWrite(t *testing.T, s *Server, w *kafka.Writer, topic string, n int) []kafka.Message {
	t.Helper()
	w.Addr, w.Topic = kafka.TCP(s.Addr().String()), topic
	w.BatchTimeout, w.BatchSize, w.WriteTimeout = 5*time.Millisecond, 64, 10*time.Second
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d-%0*d", i, i%40, 0)}
	}
	ctx := testCtx(t)
	for i := 0; i < n; i += 100 {
		if err := w.WriteMessages(ctx, msgs[i:min(i+100, n)]...); err != nil {
			t.Fatalf("kafka-go WriteMessages %d: %v", i, err)
		}
	}
	return msgs
}

// kafkaGoRead reads partition p of topic from its first offset with a kafka-go
// Reader until it has n records.
func kafkaGoRead(t *testing.T, s *Server, topic string, p, n int) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{s.Addr().String()}, Topic: topic, Partition: p,
		StartOffset: kafka.FirstOffset, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 200 * time.Millisecond,
		ReadBackoffMin: 10 * time.Millisecond, ReadBackoffMax: 100 * time.Millisecond,
	})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []kafka.Message
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go Reader after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// checkKafkaGo checks that the records read from every partition are exactly the
// records written: each once, offsets dense from 0, and (if ordered) in write order
// per partition. With acks=0 the Writer does not wait between calls and its Transport
// spreads batches over several pooled connections, so, as with Kafka, nothing orders
// batches sent on different connections.
func checkKafkaGo(t *testing.T, wrote []kafka.Message, got map[int][]kafka.Message, ordered bool) {
	t.Helper()
	index := map[string]int{}
	for i, m := range wrote {
		index[string(m.Key)] = i
	}
	seen := 0
	for p, ms := range got {
		last := -1
		for off, m := range ms {
			i, ok := index[string(m.Key)]
			if !ok || string(m.Value) != string(wrote[i].Value) {
				t.Fatalf("partition %d offset %d: unexpected record %q=%q", p, m.Offset, m.Key, m.Value)
			}
			if m.Offset != int64(off) || m.Partition != p || (ordered && i <= last) {
				t.Fatalf("partition %d: record %q at offset %d (index %d), after index %d", p, m.Key, m.Offset, off, last)
			}
			last = i
			delete(index, string(m.Key))
			seen++
		}
	}
	if seen != len(wrote) || len(index) != 0 {
		t.Fatalf("read %d of %d records; missing e.g. %v", seen, len(wrote), len(index))
	}
}

func TestKafkaGoWriterAcksReader(t *testing.T) {
	s := startServer(t, t.TempDir())
	for _, tc := range []struct {
		name  string
		acks  kafka.RequiredAcks
		parts int
	}{
		{"acks0-default", kafka.RequireNone, 1},
		{"acks1", kafka.RequireOne, 1},
		{"acks-all", kafka.RequireAll, 3},
		{"acks0-3-partitions", kafka.RequireNone, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "kgo-" + tc.name
			tr := kafkaGoTopic(t, s, topic, tc.parts)
			// acks=0 is the Writer's zero value: leave it unset for that case.
			w := &kafka.Writer{Balancer: &kafka.RoundRobin{}, Transport: tr}
			if tc.acks != kafka.RequireNone {
				w.RequiredAcks = tc.acks
			}
			const n = 1000
			wrote := kafkaGoWrite(t, s, w, topic, n)
			// Round robin over the partitions from one writer: n/parts each, give
			// or take one per batch; read what the broker says each holds once
			// all n have landed.
			hw := waitRecords(t, s, topic, tc.parts, n)
			got := map[int][]kafka.Message{}
			for p := 0; p < tc.parts; p++ {
				got[p] = kafkaGoRead(t, s, topic, p, int(hw[p]))
			}
			checkKafkaGo(t, wrote, got, tc.acks != kafka.RequireNone)
		})
	}
}

func TestKafkaGoCodecs(t *testing.T) {
	s := startServer(t, t.TempDir())
	for _, c := range []compress.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd} {
		name := "none"
		if c != 0 {
			name = c.String()
		}
		t.Run(name, func(t *testing.T) {
			topic := "kgo-codec-" + name
			tr := kafkaGoTopic(t, s, topic, 1)
			const n = 500
			wrote := kafkaGoWrite(t, s, &kafka.Writer{RequiredAcks: kafka.RequireAll, Compression: c, Transport: tr}, topic, n)
			checkKafkaGo(t, wrote, map[int][]kafka.Message{0: kafkaGoRead(t, s, topic, 0, n)}, true)
			for i, got := range batchCodecs(t, s, topic, 0) {
				if got != uint8(c) {
					t.Fatalf("batch %d stored with codec %d, want %d", i, got, c)
				}
			}
		})
	}
}

// waitRecords waits until the parts partitions of topic hold n records in all
// and returns their high watermarks. With acks=0, WriteMessages returns once
// the batches are written to the socket: the broker appends them later, when
// its connection goroutines get the CPU, which on a loaded machine can be
// seconds later. (This used to wait for the high watermark to stand still
// for 100 ms, which a descheduled connection goroutine outlasts: the test
// then read 900 of 1000 records.) acks=0 promises the client no answer, but
// the connections stay open and the broker must append every batch it
// reads, in order per connection: so all n must land, and no more.
func waitRecords(t *testing.T, s *Server, topic string, parts, n int) []int64 {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := kafka.Client{Addr: kafka.TCP(s.Addr().String()), Transport: tr, Timeout: 10 * time.Second}
	reqs := make([]kafka.OffsetRequest, parts)
	for p := range reqs {
		reqs[p] = kafka.LastOffsetOf(p)
	}
	hw := make([]int64, parts)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cl.ListOffsets(testCtx(t), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
		if err != nil {
			t.Fatalf("kafka-go ListOffsets: %v", err)
		}
		po := resp.Topics[topic]
		if len(po) != parts {
			t.Fatalf("kafka-go ListOffsets %s: %+v", topic, po)
		}
		var sum int64
		for _, o := range po {
			if o.Error != nil || o.Partition < 0 || o.Partition >= parts {
				t.Fatalf("kafka-go ListOffsets %s: %+v", topic, po)
			}
			hw[o.Partition] = o.LastOffset
			sum += o.LastOffset
		}
		switch {
		case sum > int64(n):
			t.Fatalf("%s holds %d records (%v), more than the %d written", topic, sum, hw, n)
		case sum == int64(n):
			return hw
		case time.Now().After(deadline):
			t.Fatalf("%s holds %d of the %d records written (%v) after 30 s", topic, sum, n, hw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
