package server

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/record"
)

// BenchmarkClusterAcksAllRoundTrip is the leader's side of one acks=-1
// produce, as the replication path runs it: a produce of one batch (10
// records of 100 bytes) to a leader whose follower (broker 2, played here
// over a socket) long-polls Fetch v12; the append wakes the parked follower
// fetch, the follower fetches again from its new log end, the high
// watermark passes the batch and the produce is answered. One op is one
// produce round trip; the follower's fetches run in a goroutine of their
// own, on their own connection, as a follower's fetcher would. A real
// ZooKeeper holds the cluster's znodes; the test plays the controller.
func BenchmarkClusterAcksAllRoundTrip(b *testing.B) {
	_, connect := testZK(b)
	fc := newFakeController(b, connect)
	z := testZKConn(b, connect)
	if err := cluster.EnsurePersistentPaths(z, time.Now().Add(10*time.Second)); err != nil {
		b.Fatal(err)
	}
	fc.ghosts = []int32{2}
	l := startClusterBroker(b, connect, 1, b.TempDir())
	st := partState{topic: "t", id: newUUID(), partition: 0, leader: 1, leaderEpoch: 1, isr: []int32{1, 2}, replicas: []int32{1, 2}}
	if resp := fc.leaderAndIsr(l, []*Server{l}, st); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		b.Fatalf("LeaderAndIsr: %+v", resp)
	}
	if resp := fc.updateMetadata(l, []*Server{l}, st); resp.ErrorCode != 0 {
		b.Fatalf("UpdateMetadata: %d", resp.ErrorCode)
	}
	prod, fol := client(b, l), client(b, l)
	ctx, cancel := context.WithCancel(context.Background())
	var stopped atomic.Bool
	followed := make(chan error, 1)
	go func() {
		var offset int64
		for !stopped.Load() {
			req := fetchRequest(12, "t", 0, offset)
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes = 2, 500, 1
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
			resp, err := fol.Request(ctx, req)
			if err != nil {
				if stopped.Load() {
					err = nil
				}
				followed <- err
				return
			}
			for recs := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches; len(recs) >= 61; {
				n := 12 + int(binary.BigEndian.Uint32(recs[8:]))
				if n > len(recs) {
					break
				}
				bt := record.Batch(recs[:n])
				offset = bt.BaseOffset() + int64(bt.LastOffsetDelta()) + 1
				recs = recs[n:]
			}
		}
		followed <- nil
	}()
	req := produceRequest("t", 0, makeBatch(b, 10, 100), 9)
	req.Acks, req.TimeoutMillis = -1, 30000
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		resp, err := prod.Request(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
			b.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	b.StopTimer()
	// The process's CPU time per op (leader, follower and producer
	// together): on a machine shared with other work the wall clock
	// mostly measures the wait for a CPU.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	stopped.Store(true)
	cancel()
	if err := <-followed; err != nil {
		b.Fatal(err)
	}
}
