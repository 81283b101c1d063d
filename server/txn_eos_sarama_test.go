package server

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestTxnExactlyOnceKilledSarama is TestTxnExactlyOnceKilled with a second
// client library that has transactions, IBM/sarama: its transactional
// AsyncProducer (BeginTxn, AddMessageToTxnWithGroupMetadata: AddOffsetsToTxn
// and TxnOffsetCommit with the consumer group's generation, CommitTxn) and
// its consumer group reading "in" at read_committed, in a child process
// (TestTxnEOSSaramaChild) SIGKILLed at random points and restarted; "out"
// read as read_committed holds every input record exactly once.
func TestTxnExactlyOnceKilledSarama(t *testing.T) {
	eosKilled(t, "TestTxnEOSSaramaChild", "STRATA_EOS_SARAMA_CHILD")
}

// TestTxnEOSSaramaChild is the consume-transform-produce process of
// TestTxnExactlyOnceKilledSarama; it does nothing in a normal run. One
// transaction per input record: produce its copy to "out" and commit its
// offset, then commit. A failed transaction is aborted and the process
// exits (the harness restarts it), so the record is consumed again from
// the group's committed offset.
func TestTxnEOSSaramaChild(t *testing.T) {
	addr := os.Getenv("STRATA_EOS_SARAMA_CHILD")
	if addr == "" {
		t.Skip("run as a subprocess by TestTxnExactlyOnceKilledSarama")
	}
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "eos-sarama"
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Transaction.ID = "eos-sarama"
	cfg.Producer.Transaction.Timeout = 10 * time.Second
	cfg.Producer.Partitioner = sarama.NewRoundRobinPartitioner
	cfg.Producer.Return.Errors = true
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Session.Timeout = 1 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 5 * time.Second
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	prod, err := sarama.NewAsyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for err := range prod.Errors() {
			fmt.Println("EOS PRODUCE ERROR", err)
		}
	}()
	group, err := sarama.NewConsumerGroup([]string{addr}, "eos-sarama", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h := &saramaEOS{prod: prod, fail: cancel}
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{"in"}, h); err != nil && ctx.Err() == nil {
			fmt.Println("EOS CONSUME ERROR", err)
			time.Sleep(50 * time.Millisecond)
		}
	}
	if h.err != nil {
		fmt.Println("EOS FAILED", h.err)
		os.Exit(3)
	}
}

// saramaEOS is the child's sarama.ConsumerGroupHandler. The producer is
// shared by the partitions' claims, one transaction at a time.
type saramaEOS struct {
	mu   sync.Mutex
	prod sarama.AsyncProducer
	err  error
	fail context.CancelFunc
}

func (h *saramaEOS) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaEOS) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaEOS) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	meta := sarama.NewConsumerGroupMetadataFromSession(sess, "eos-sarama", nil)
	for msg := range claim.Messages() {
		if err := h.copy(msg, meta); err != nil {
			h.mu.Lock()
			h.err = err
			h.mu.Unlock()
			h.fail()
			return err
		}
		fmt.Println("EOS COMMITTED")
	}
	return nil
}

// copy copies one record to "out" in a transaction that also commits its
// offset for the group.
func (h *saramaEOS) copy(msg *sarama.ConsumerMessage, meta *sarama.ConsumerGroupMetadata) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.prod.BeginTxn(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	h.prod.Input() <- &sarama.ProducerMessage{Topic: "out", Value: sarama.ByteEncoder(msg.Value)}
	if err := h.prod.AddMessageToTxnWithGroupMetadata(msg, meta, nil); err != nil {
		return h.abort(fmt.Errorf("add offsets: %w", err))
	}
	if err := h.prod.CommitTxn(); err != nil {
		return h.abort(fmt.Errorf("commit: %w", err))
	}
	return nil
}

func (h *saramaEOS) abort(err error) error {
	if h.prod.TxnStatus()&sarama.ProducerTxnFlagFatalError == 0 {
		if aerr := h.prod.AbortTxn(); aerr != nil {
			return fmt.Errorf("%w; abort: %w", err, aerr)
		}
	}
	return err
}
