package server

import (
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterFollowerFetchWholeBatches: a follower's fetch whose max bytes
// end inside a batch gets the whole batches before it only (the follower
// would drop the partial one and fetch it again), one larger than the max
// bytes whole (KIP-74); a consumer's fetch keeps Kafka's partial last
// batch.
func TestClusterFollowerFetchWholeBatches(t *testing.T) {
	_, connect := testZK(t)
	fc := newFakeController(t, connect)
	z := testZKConn(t, connect)
	if err := cluster.EnsurePersistentPaths(z, time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	fc.ghosts = []int32{2}
	b1 := startClusterBroker(t, connect, 1, t.TempDir())
	st := partState{topic: "w", id: newUUID(), partition: 0, leader: 1, leaderEpoch: 1, isr: []int32{1, 2}, replicas: []int32{1, 2}}
	if resp := fc.leaderAndIsr(b1, []*Server{b1}, st); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("LeaderAndIsr: %+v", resp)
	}
	c := client(t, b1)
	batch := len(makeBatch(t, 5, 10)) // produceTo's batches
	for i := range 3 {
		if p := produceTo(t, c, "w", 0, 1, 5000, 5); p.ErrorCode != 0 || p.BaseOffset != int64(5*i) {
			t.Fatalf("produce %d: %+v", i, p)
		}
	}
	fetch := func(replica int32, maxBytes int) int {
		t.Helper()
		req := fetchRequest(12, "w", 0, 0)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes = replica, 0, 0
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
		req.Topics[0].Partitions[0].PartitionMaxBytes = int32(maxBytes)
		f := call[*kmsg.FetchResponse](t, c, req).Topics[0].Partitions[0]
		if f.ErrorCode != 0 {
			t.Fatalf("fetch as %d of %d bytes: code %d", replica, maxBytes, f.ErrorCode)
		}
		return len(f.RecordBatches)
	}
	for _, tc := range []struct{ max, want int }{
		{3 * batch, 3 * batch},
		{2*batch + batch/2, 2 * batch},
		{batch + 20, batch}, // a partial header
		{batch / 2, batch},  // the first batch whole
	} {
		if got := fetch(2, tc.max); got != tc.want {
			t.Errorf("follower fetch of %d bytes: %d bytes, want %d (batches of %d)", tc.max, got, tc.want, batch)
		}
	}
	// The follower has all: the high watermark moves, consumers read.
	if f := followerFetch(t, c, 2, "w", 0, 15, 1, 1); f.ErrorCode != 0 || f.HighWatermark != 15 {
		t.Fatalf("follower caught up: code %d hw %d", f.ErrorCode, f.HighWatermark)
	}
	if got := fetch(-1, 2*batch+batch/2); got != 2*batch+batch/2 {
		t.Errorf("consumer fetch of %d bytes: %d bytes, want all of them", 2*batch+batch/2, got)
	}
}
