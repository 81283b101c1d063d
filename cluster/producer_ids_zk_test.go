package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/cluster"
	"github.com/stratalog/strata/internal/zktest"
	"github.com/stratalog/strata/producer"
)

// TestProducerIDBlocksRealZK: two brokers reserving blocks at once from a
// real ZooKeeper never get the same block (the conditional write makes
// the loser read again), and the znode holds Kafka's JSON of the newest.
func TestProducerIDBlocksRealZK(t *testing.T) {
	srv := zktest.Start(t)
	z1, _ := dialReal(t, srv, 6*time.Second, false)
	defer z1.Close()
	z2, _ := dialReal(t, srv, 6*time.Second, false)
	defer z2.Close()
	srcs := []cluster.ProducerIDBlocks{{ZK: z1, Broker: 1}, {ZK: z2, Broker: 2}}
	var mu sync.Mutex
	starts := map[int64]int32{}
	var wg sync.WaitGroup
	for _, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				b, err := s.NextBlock(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if b.End-b.Start != cluster.ProducerIDBlockSize-1 || b.Start%cluster.ProducerIDBlockSize != 0 {
					t.Errorf("block %+v", b)
				}
				mu.Lock()
				if other, dup := starts[b.Start]; dup {
					t.Errorf("block at %d reserved by broker %d and %d", b.Start, other, s.Broker)
				}
				starts[b.Start] = s.Broker
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(starts) != 20 {
		t.Fatalf("%d blocks, want 20", len(starts))
	}
	latest, err := srcs[0].Latest(context.Background())
	if err != nil || latest != 20*cluster.ProducerIDBlockSize-1 {
		t.Fatalf("latest %d, %v", latest, err)
	}
	data, _, err := z1.Get(cluster.ProducerIDBlockPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := producer.DecodeBlock(data)
	if err != nil || b.End != latest {
		t.Fatalf("znode %s: %+v, %v", data, b, err)
	}
}
