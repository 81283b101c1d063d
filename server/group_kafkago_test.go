package server

import (
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// TestKafkaGoGroupReader: a segmentio/kafka-go group Reader (its Conn stack
// with fixed old versions: FindCoordinator v0, JoinGroup v2, SyncGroup v0,
// Heartbeat v0, OffsetFetch v1, OffsetCommit v2, LeaveGroup v0) consumes and
// commits; a second Reader of the group resumes after the commits.
func TestKafkaGoGroupReader(t *testing.T) {
	s := startGroupServer(t, t.TempDir())
	const topic = "kgo-group"
	tr := kafkaGoTopic(t, s, topic, 2)
	w := &kafka.Writer{Transport: tr, RequiredAcks: kafka.RequireAll, Balancer: &kafka.RoundRobin{}}
	kafkaGoWrite(t, s, w, topic, 40)

	read := func(n int) []kafka.Message {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{s.Addr().String()}, GroupID: "kafkago-g", Topic: topic,
			MaxWait: 200 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
			SessionTimeout: 6 * time.Second, RebalanceTimeout: 5 * time.Second,
			StartOffset: kafka.FirstOffset, CommitInterval: 0,
		})
		defer r.Close()
		var out []kafka.Message
		ctx := testCtx(t)
		for len(out) < n {
			m, err := r.ReadMessage(ctx) // commits synchronously (CommitInterval 0)
			if err != nil {
				t.Fatalf("kafka-go ReadMessage after %d: %v", len(out), err)
			}
			out = append(out, m)
		}
		return out
	}
	first := read(15)
	committed := fetchCommitted(t, newClient(t, s), "kafkago-g", topic)
	var sum int64
	for _, o := range committed {
		sum += o
	}
	if sum != 15 {
		t.Fatalf("committed %v (sum %d) after 15 messages read, want 15", committed, sum)
	}
	second := read(25)
	seen := map[string]bool{}
	for _, m := range append(first, second...) {
		k := fmt.Sprintf("%d@%d", m.Partition, m.Offset)
		if seen[k] {
			t.Fatalf("message %s read twice: the second Reader did not resume from %v", k, committed)
		}
		seen[k] = true
	}
	if len(seen) != 40 {
		t.Fatalf("%d distinct messages, want 40", len(seen))
	}
}
