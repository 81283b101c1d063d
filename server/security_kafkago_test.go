package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/plain"
)

// TestSecurityKafkaGo: a third client library, segmentio/kafka-go, writes
// and reads over SASL_SSL with PLAIN (its Transport for the Writer, its
// Dialer for the Reader).
func TestSecurityKafkaGo(t *testing.T) {
	p := newTestPKI(t)
	s := startSecure(t, p, t.TempDir())
	addr := listenerAddr(t, s, "SASL_SSL")
	mech := plain.Mechanism{Username: "alice", Password: "alice-secret"}
	tr := &kafka.Transport{SASL: mech, TLS: p.clientTLS(t, "")}
	t.Cleanup(tr.CloseIdleConnections)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "kgo-sasl", Transport: tr, RequiredAcks: kafka.RequireAll,
		AllowAutoTopicCreation: true, BatchTimeout: 5 * time.Millisecond, WriteTimeout: 10 * time.Second}
	defer w.Close()
	var msgs []kafka.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, "v%d", i)})
	}
	ctx := testCtx(t)
	var err error
	for attempt := 0; attempt < 50; attempt++ { // the topic is auto-created by the first write
		if err = w.WriteMessages(ctx, msgs...); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("kafka-go write over SASL_SSL: %v", err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "kgo-sasl", Partition: 0, MaxWait: 100 * time.Millisecond,
		Dialer: &kafka.Dialer{Timeout: 10 * time.Second, SASLMechanism: mech, TLS: p.clientTLS(t, "")}})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		m, err := r.ReadMessage(rctx)
		if err != nil {
			t.Fatalf("kafka-go read %d over SASL_SSL: %v", i, err)
		}
		if string(m.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("read %q at %d", m.Value, i)
		}
	}
}
