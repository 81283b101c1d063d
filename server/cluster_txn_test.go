package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterMarkers returns the markers in topic/p as broker b's replica
// holds them.
func clusterMarkers(t *testing.T, b *Server, topic string, p int32) []marker {
	t.Helper()
	rp := b.cl.rm.Partition(topic, p)
	if rp == nil {
		return nil
	}
	var ms []marker
	part := &partition{topic: topic, index: p, log: rp.Log()}
	err := readLogTxn(part, func(int64, int64, []byte, []byte) error { return nil }, func(pid int64, commit bool) error {
		ms = append(ms, marker{pid: pid, commit: commit})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestClusterTxnCoordinatorKilledMidCommit: in a cluster of three, a
// transaction over three partitions led by different brokers commits
// (markers sent by WriteTxnMarkers to the other leaders); then a second
// one's coordinator is stopped after EndTxn was answered but before any
// marker went out: the leader of its __transaction_state partition that
// takes over loads PrepareCommit and completes the commit on every
// partition, so the transaction completes as a whole.
func TestClusterTxnCoordinatorKilledMidCommit(t *testing.T) {
	var block atomic.Pointer[Server]
	txnMarkersHook = func(ctx context.Context, s *Server) error {
		if block.Load() == s {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	t.Cleanup(func() { txnMarkersHook = nil })
	c := startInprocCluster(t, 3, "transaction.state.log.num.partitions=2")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := clusterClient(t, c.addrs())
	req := kmsg.NewCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "out", 3, 3
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, adm); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.waitLed("out", 3, 3)

	txc := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.TransactionalID("tx-c"), kgo.DefaultProduceTopic("out"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(60*time.Second),
			kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	run := func(cl *kgo.Client, tag byte) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 3; p++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte{tag}}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	commitsEverywhere := func(n int) {
		t.Helper()
		waitFor(t, 60*time.Second, "commit markers on every partition", func() bool {
			for p := int32(0); p < 3; p++ {
				for _, b := range c.brokers {
					if b.closing.Load() {
						continue
					}
					commits := 0
					for _, m := range clusterMarkers(t, b, "out", p) {
						if !m.commit {
							t.Fatalf("abort marker in out-%d on broker %d", p, b.NodeID())
						}
						commits++
					}
					if commits < n {
						return false
					}
				}
			}
			return true
		})
	}
	cl := txc()
	run(cl, 1)
	commitsEverywhere(1)

	// Find the coordinator; block its markers; commit; stop it.
	fc := kmsg.NewFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorType = "tx-c", 1
	fresp, err := fc.RequestWith(ctx, adm)
	if err != nil || fresp.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %+v", err, fresp)
	}
	coord := c.broker(fresp.NodeID)
	block.Store(coord)
	run(cl, 2)
	st, err := coord.txns.c.Describe("tx-c")
	if err != nil || st.State.String() != "PrepareCommit" {
		t.Fatalf("coordinator state %+v %v, want PrepareCommit", st, err)
	}
	coord.Close()
	commitsEverywhere(2)
	// The new coordinator holds the transaction as complete.
	waitFor(t, 60*time.Second, "CompleteCommit on the new coordinator", func() bool {
		for _, b := range c.brokers {
			if b.closing.Load() {
				continue
			}
			if m, err := b.txns.c.Describe("tx-c"); err == nil && m.State.String() == "CompleteCommit" {
				return true
			}
		}
		return false
	})
}
