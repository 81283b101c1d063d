package server

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// muteProxy sits in front of a broker (its advertised listener, so
// clients and the other brokers reach it through the proxy). Once muted
// it swallows the responses to Produce requests and closes the client's
// connection at the first: the leader appended (and, acks=all, replicated)
// the batches, the producer never hears so.
type muteProxy struct {
	ln      net.Listener
	target  atomic.Value // string, the broker's own address
	muted   atomic.Bool
	dropped atomic.Int32
}

func newMuteProxy(t *testing.T) *muteProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &muteProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go acceptEach(ln, p.serve)
	return p
}

func (p *muteProxy) serve(c net.Conn) {
	target, _ := p.target.Load().(string)
	if target == "" {
		c.Close()
		return // the broker is not up yet: the caller retries
	}
	var mu sync.Mutex
	produces := map[int32]bool{} // correlation ids of produce requests
	relayFrames(c, target, func(key int16, corr int32) {
		if key == int16(kmsg.Produce) {
			mu.Lock()
			produces[corr] = true
			mu.Unlock()
		}
	}, func(corr int32) bool {
		mu.Lock()
		produce := produces[corr]
		delete(produces, corr)
		mu.Unlock()
		if produce && p.muted.Load() {
			p.dropped.Add(1)
			return true // this response and every later one on the connection are lost
		}
		return false
	})
}

// TestClusterIdempotentLeaderKilled: in a cluster of three on a real
// ZooKeeper, franz-go's default (idempotent, acks=all) producer keeps
// batches in flight to a partition of replication factor 3
// (min.insync.replicas=2). At a random point the leader's produce
// responses are lost (the batches appended and replicated, the
// connections cut) and the leader is stopped. The producer retries them
// at the new leader, which rebuilt the producer's sequence state from the
// batches it replicated and answers them as duplicates: every record is
// acknowledged, and the partition, read from its start on every surviving
// replica and by a consumer, holds each record exactly once, in the order
// produced, with no gap. (With idempotence off the same run duplicates
// records.)
func TestClusterIdempotentLeaderKilled(t *testing.T) {
	_, connect := testZK(t)
	c := &inprocCluster{t: t, connect: connect}
	var proxies []*muteProxy
	for id := int32(1); id <= 3; id++ {
		px := newMuteProxy(t)
		proxies = append(proxies, px)
		dir := t.TempDir()
		c.dirs = append(c.dirs, dir)
		b := startClusterBroker(t, connect, id, dir, "replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200",
			"offsets.topic.num.partitions=5", "min.insync.replicas=2", "advertised.listeners=PLAINTEXT://"+px.ln.Addr().String())
		px.target.Store(b.Addr().String())
		c.brokers = append(c.brokers, b)
	}
	waitFor(t, 60*time.Second, "every broker live and a controller", func() bool {
		md := metadataOf(t, c.addrs(), "")
		return len(md.Brokers) == 3 && md.ControllerID >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var seeds []string
	for _, px := range proxies {
		seeds = append(seeds, px.ln.Addr().String())
	}
	adm := clusterClient(t, seeds)
	req := kmsg.NewCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "idem", 1, 3
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, adm); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.waitLed("idem", 1, 3)
	leader := metadataOf(t, c.addrs(), "idem").Topics[0].Partitions[0].Leader

	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d, leader %d", seed, leader)
	const n = 3000
	killAt := 200 + rng.Intn(1500)
	// No linger, one record a batch mostly: many batches in flight.
	prod := clusterClient(t, seeds, kgo.DefaultProduceTopic("idem"), kgo.RetryTimeout(60*time.Second),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(64))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	acked := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		if i == killAt {
			// Stop the leader once the records before killAt are acked
			// (and the ones after it keep the pipeline full).
			go func() {
				for j := 0; j < killAt-64; j++ {
					<-acked
				}
				proxies[leader-1].muted.Store(true)
				for proxies[leader-1].dropped.Load() == 0 && ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
				c.broker(leader).Close()
			}()
		}
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%05d", i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", r.Value, err))
				mu.Unlock()
			}
			acked <- struct{}{}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d records not acknowledged, first: %v (seed %d)", len(errs), errs[0], seed)
	}
	waitFor(t, 60*time.Second, "the old leader stopped", func() bool { return c.broker(leader).closing.Load() })
	t.Logf("%d produce responses lost at the old leader", proxies[leader-1].dropped.Load())
	// Every surviving replica, once caught up, holds each record once.
	waitFor(t, 60*time.Second, "both surviving replicas hold every record exactly once", func() bool {
		for _, b := range c.brokers {
			if b.closing.Load() {
				continue
			}
			rp := b.cl.rm.Partition("idem", 0)
			if rp == nil {
				return false
			}
			var got []string
			part := &partition{topic: "idem", index: 0, log: rp.Log()}
			err := readLogTxn(part, func(_, _ int64, _, v []byte) error { got = append(got, string(v)); return nil },
				func(int64, bool) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < n {
				return false
			}
			for i, v := range got {
				if want := fmt.Sprintf("v%05d", i); v != want || len(got) != n {
					t.Fatalf("broker %d holds %d records, want %d: record %d is %s, want %s (seed %d)", b.NodeID(), len(got), n, i, v, want, seed)
				}
			}
		}
		return true
	})
	// And a consumer reading from the new leader sees the same.
	cons := clusterClient(t, seeds, kgo.ConsumeTopics("idem"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < n && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%05d", i); v != want {
			t.Fatalf("consumer: record %d is %s, want %s (seed %d)", i, v, want, seed)
		}
	}
	if len(got) != n {
		t.Fatalf("consumer read %d records, want %d (seed %d)", len(got), n, seed)
	}
}
