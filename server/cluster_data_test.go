package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/kwire"
	"github.com/stratalog/strata/record"
)

// client is a kwire connection for one test.
func client(t testing.TB, s *Server) *kwire.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := kwire.Dial(ctx, s.Addr().String(), kwire.Options{ClientID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call[R kmsg.Response](t testing.TB, c *kwire.Conn, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// produceTo sends one batch of n records with acks and returns the
// partition's answer.
func produceTo(t testing.TB, c *kwire.Conn, topic string, p int32, acks int16, timeoutMs int32, n int) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest(topic, p, makeBatch(t, n, 10), 9)
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	resp := call[*kmsg.ProduceResponse](t, c, req)
	return resp.Topics[0].Partitions[0]
}

// followerFetch fetches as broker replica (Fetch v12, no waiting).
func followerFetch(t testing.TB, c *kwire.Conn, replica int32, topic string, p int32, offset int64, epoch, lastEpoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchRequest(12, topic, p, offset)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes = replica, 0, 0
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
	req.Topics[0].Partitions[0].LastFetchedEpoch = lastEpoch
	resp := call[*kmsg.FetchResponse](t, c, req)
	return resp.Topics[0].Partitions[0]
}

// TestClusterLeaderDataPath drives one broker as the leader of a partition
// replicated on it and on a follower the test plays (broker 2), with the
// test as the controller: Metadata from the cache of another broker (3);
// produce to the leader (and NOT_LEADER_OR_FOLLOWER at broker 3); consumers read only below
// the high watermark, which moves as the follower fetches; acks=-1 waits
// for the follower (REQUEST_TIMED_OUT when it does not come); a shrunk ISR
// below min.insync.replicas refuses acks=-1 before the append
// (NOT_ENOUGH_REPLICAS) while acks=1 works; a follower whose last epoch
// diverges gets diverging_epoch; KIP-320's epoch checks; stale controller
// and broker epochs are fenced.
func TestClusterLeaderDataPath(t *testing.T) {
	_, connect := testZK(t)
	fc := newFakeController(t, connect)
	z := testZKConn(t, connect)
	if err := cluster.EnsurePersistentPaths(z, time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Create(cluster.TopicConfigPath("t"), cluster.EncodeEntityConfig(map[string]string{"min.insync.replicas": "2"}), cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	fc.ghosts = []int32{2}
	b1 := startClusterBroker(t, connect, 1, t.TempDir())
	b3 := startClusterBroker(t, connect, 3, t.TempDir())
	id := newUUID()
	st := partState{topic: "t", id: id, partition: 0, leader: 1, leaderEpoch: 1, isr: []int32{1, 2}, replicas: []int32{1, 2}}
	if resp := fc.leaderAndIsr(b1, []*Server{b1}, st); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", resp)
	}
	for _, b := range []*Server{b1, b3} {
		if resp := fc.updateMetadata(b, []*Server{b1, b3}, st); resp.ErrorCode != 0 {
			t.Fatalf("UpdateMetadata: %d", resp.ErrorCode)
		}
	}
	c1, c2 := client(t, b1), client(t, b3)

	// Metadata from the follower's cache.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version = 11
	md := call[*kmsg.MetadataResponse](t, c2, mreq)
	if len(md.Brokers) != 3 || md.ControllerID != 999 || len(md.Topics) != 1 || md.Topics[0].TopicID != id {
		t.Fatalf("metadata %+v", md)
	}
	mp := md.Topics[0].Partitions[0]
	if mp.Leader != 1 || mp.LeaderEpoch != 1 || len(mp.Replicas) != 2 || len(mp.ISR) != 2 || mp.ErrorCode != 0 {
		t.Fatalf("partition metadata %+v", mp)
	}

	// Produce: only the leader takes it.
	if p := produceTo(t, c2, "t", 0, 1, 5000, 3); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a broker that does not lead: %d", p.ErrorCode)
	}
	if p := produceTo(t, c1, "t", 0, 1, 5000, 3); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=1 produce: %+v", p)
	}
	// The high watermark waits for the follower: a consumer sees nothing.
	cons := fetchRequest(12, "t", 0, 0)
	if f := call[*kmsg.FetchResponse](t, c1, cons).Topics[0].Partitions[0]; f.ErrorCode != 0 || f.HighWatermark != 0 || len(f.RecordBatches) != 0 {
		t.Fatalf("consumer before the follower fetched: code %d hw %d %d bytes", f.ErrorCode, f.HighWatermark, len(f.RecordBatches))
	}
	// The follower reads past the high watermark, then its next fetch
	// moves it.
	if f := followerFetch(t, c1, 2, "t", 0, 0, 1, -1); f.ErrorCode != 0 || len(f.RecordBatches) == 0 {
		t.Fatalf("follower fetch: %+v", f)
	}
	if f := followerFetch(t, c1, 2, "t", 0, 3, 1, 1); f.ErrorCode != 0 || f.HighWatermark != 3 {
		t.Fatalf("follower caught up: code %d hw %d", f.ErrorCode, f.HighWatermark)
	}
	if f := call[*kmsg.FetchResponse](t, c1, cons).Topics[0].Partitions[0]; f.HighWatermark != 3 || countRecords(t, f.RecordBatches) != 3 {
		t.Fatalf("consumer after: hw %d", f.HighWatermark)
	}

	// acks=-1 waits for the follower's next fetch...
	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	c1b := client(t, b1)
	go func() { done <- produceTo(t, c1b, "t", 0, -1, 20000, 2) }()
	waitFor(t, 20*time.Second, "the acks=-1 produce to append", func() bool {
		return b1.cl.rm.Partition("t", 0).Log().LogEndOffset() == 5
	})
	select {
	case p := <-done:
		t.Fatalf("acks=-1 answered before the follower had the records: %+v", p)
	default:
	}
	followerFetch(t, c1, 2, "t", 0, 5, 1, 1)
	if p := <-done; p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("acks=-1: %+v", p)
	}
	// ...and times out without it.
	if p := produceTo(t, c1, "t", 0, -1, 300, 1); p.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=-1 without the follower: %d", p.ErrorCode)
	}

	// The controller shrinks the ISR to the leader (epoch 2): with
	// min.insync.replicas=2 acks=-1 is refused before the append, acks=1
	// goes on.
	st2 := st
	st2.leaderEpoch, st2.isr, st2.zkVersion = 2, []int32{1}, 1
	fc.leaderAndIsr(b1, []*Server{b1}, st2)
	end := b1.cl.rm.Partition("t", 0).Log().LogEndOffset()
	if p := produceTo(t, c1, "t", 0, -1, 5000, 1); p.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=-1 below min.insync.replicas: %d", p.ErrorCode)
	}
	if got := b1.cl.rm.Partition("t", 0).Log().LogEndOffset(); got != end {
		t.Fatalf("a refused acks=-1 produce was appended: log end %d, was %d", got, end)
	}
	if p := produceTo(t, c1, "t", 0, 1, 5000, 1); p.ErrorCode != 0 {
		t.Fatalf("acks=1 below min.insync.replicas: %d", p.ErrorCode)
	}

	// A follower fetching at an offset past the end of its last epoch (1)
	// learns where that epoch ends on the leader.
	f := followerFetch(t, c1, 2, "t", 0, 7, 2, 1)
	if f.ErrorCode != 0 || f.DivergingEpoch.Epoch != 1 || f.DivergingEpoch.EndOffset != end {
		t.Fatalf("diverging follower: code %d diverging %+v, want epoch 1 ending at %d", f.ErrorCode, f.DivergingEpoch, end)
	}
	// KIP-320: a consumer with an old or a future epoch.
	for _, tc := range []struct {
		epoch int32
		code  int16
	}{{1, kerr.FencedLeaderEpoch.Code}, {3, kerr.UnknownLeaderEpoch.Code}, {2, 0}} {
		req := fetchRequest(12, "t", 0, 0)
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.epoch
		if got := call[*kmsg.FetchResponse](t, c1, req).Topics[0].Partitions[0].ErrorCode; got != tc.code {
			t.Errorf("fetch with current leader epoch %d: %d, want %d", tc.epoch, got, tc.code)
		}
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version, lo.ReplicaID = 5, -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = 0, -1, tc.epoch
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		lr := call[*kmsg.ListOffsetsResponse](t, c1, lo).Topics[0].Partitions[0]
		if lr.ErrorCode != tc.code || tc.code == 0 && (lr.Offset != b1.cl.rm.Partition("t", 0).HighWatermark() || lr.LeaderEpoch != 2) {
			t.Errorf("list offsets with current leader epoch %d: %+v, want code %d", tc.epoch, lr, tc.code)
		}
	}

	// Fencing: an older controller epoch and an older broker epoch.
	old := *fc
	old.epoch = 4
	st3 := st2
	st3.leader, st3.leaderEpoch = 2, 3
	if resp := old.leaderAndIsr(b1, []*Server{b1}, st3); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("LeaderAndIsr from controller epoch 4: %d", resp.ErrorCode)
	}
	if resp := old.updateMetadata(b1, []*Server{b1}, st3); resp.ErrorCode != kerr.StaleControllerEpoch.Code {
		t.Fatalf("UpdateMetadata from controller epoch 4: %d", resp.ErrorCode)
	}
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 5, 999, 6, b1.cl.mem.BrokerEpoch()-1
	if resp := fc.send(b1, req).(*kmsg.LeaderAndISRResponse); resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("LeaderAndIsr for an older registration: %d", resp.ErrorCode)
	}
	if p := b1.cl.rm.Partition("t", 0); p.Leader() != 1 || p.LeaderEpoch() != 2 {
		t.Fatalf("fenced requests changed the partition: leader %d epoch %d", p.Leader(), p.LeaderEpoch())
	}
	if n := len(b1.cl.images.load().brokers); n != 3 {
		t.Fatalf("a fenced UpdateMetadata changed the cache: %d brokers", n)
	}
}

// countRecords counts the records of the batches in b.
func countRecords(t testing.TB, b []byte) int {
	t.Helper()
	n := 0
	it := record.NewIterator(b, record.ScanOptions{})
	for it.Next() {
		h := it.Header()
		n += int(h.LastOffset - h.Offset + 1)
	}
	return n
}

// TestClusterMalformedTopicConfig: a /config/topics/T that does not decode
// is logged and the broker's defaults are used: the partition is served,
// not refused, and nothing panics.
func TestClusterMalformedTopicConfig(t *testing.T) {
	_, connect := testZK(t)
	fc := newFakeController(t, connect)
	z := testZKConn(t, connect)
	if err := cluster.EnsurePersistentPaths(z, time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Create(cluster.TopicConfigPath("bad"), []byte(`{"version":1,"config":{"retention.ms":12`), cluster.Persistent); err != nil {
		t.Fatal(err)
	}
	b := startClusterBroker(t, connect, 1, t.TempDir())
	st := partState{topic: "bad", id: newUUID(), partition: 0, leader: 1, leaderEpoch: 1, isr: []int32{1}, replicas: []int32{1}}
	if resp := fc.leaderAndIsr(b, []*Server{b}, st); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", resp)
	}
	fc.updateMetadata(b, []*Server{b}, st)
	if p := produceTo(t, client(t, b), "bad", 0, -1, 5000, 2); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	if got := b.cl.rm.Partition("bad", 0).Log().Options().RetentionMs; got != b.cfg.RetentionMs {
		t.Fatalf("retention.ms %d, want the broker's %d", got, b.cfg.RetentionMs)
	}
}
