package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/security"
)

// TestInterBrokerSASLSSLTxnMarkers: with the inter-broker listener on
// SASL_SSL, a transaction committed over partitions led by every broker
// gets its markers written on each leader: the coordinator sends
// WriteTxnMarkers to the other leaders over the secured inter-broker
// listener (a plain dial there is refused, the markers never land and a
// read_committed consumer sees nothing).
func TestInterBrokerSASLSSLTxnMarkers(t *testing.T) {
	p := newTestPKI(t)
	_, connect := testZK(t)
	addZKScramUser(t, connect, "admin", security.ScramSHA256, "admin-secret")
	c := startInprocClusterAt(t, connect, 3, append(interBrokerSASLSSL(p, "admin-secret"), "transaction.state.log.num.partitions=1")...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	admin := secureClient(t, c.broker(1), "PLAINTEXT", nil, nil)
	req := kmsg.NewCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "sx", -1, -1
	for part, b := range []int32{1, 2, 3} {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(part), []int32{b}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.waitLed("sx", 3, 1)
	tx, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.TransactionalID("sx-tx"), kgo.DefaultProduceTopic("sx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tx.Close)
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 3; part++ {
		if err := tx.ProduceSync(ctx, &kgo.Record{Partition: part, Value: []byte{byte('a' + part)}}).FirstErr(); err != nil {
			t.Fatalf("produce to sx-%d: %v", part, err)
		}
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// Each partition's only replica is on a different broker, so two of
	// them are led by brokers other than the coordinator.
	waitFor(t, 60*time.Second, "a commit marker on every partition of sx", func() bool {
		for part := int32(0); part < 3; part++ {
			b := c.broker(part + 1)
			ms := clusterMarkers(t, b, "sx", part)
			if len(ms) != 1 || !ms[0].commit {
				return false
			}
		}
		return true
	})
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumeTopics("sx"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cons.Close)
	seen := map[string]bool{}
	for len(seen) < 3 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed saw %v of 3 committed records", seen)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}
