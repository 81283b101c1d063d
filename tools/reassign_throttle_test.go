package tools

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/cluster"
)

// TestReassignThrottle: strata reassign --execute --throttle on three
// in-process brokers and a real ZooKeeper. It writes Kafka's throttle
// configs (the rates in /config/brokers/<id> of every broker of the move,
// the throttled-replica lists in /config/topics/T), the new replica copies
// the pre-filled partition at the throttle (within 20%, from its first
// byte to its last, DescribeLogDirs polled) although each of its fetches
// ends inside a batch (40 KB batches, 64 KiB fetches: the throttles count
// only the whole batches the follower keeps; counting the partial one it
// fetches again kept the move near 0.6 of the throttle), an acks=all
// producer is served all along (the ISR replicas are not throttled), and
// --verify removes every config once the move is complete.
func TestReassignThrottle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three brokers")
	}
	// Small samples and fetches so that a few MB show the rate; batches
	// of four 10 KB records, so a fetch holds one whole and part of the
	// next.
	bs, connect := startClusterBrokersWith(t, 3, "replication.quota.window.num=2",
		"replication.quota.window.size.seconds=1", "replica.fetch.max.bytes=65536")
	addr := bs[0].Addr().String()
	var addrs []string
	for _, b := range bs {
		addrs = append(addrs, b.Addr().String())
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := runTopicsCmd(t, addr, "--create", "--topic", "thr", "--replica-assignment", "1:2")
		if r.code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, a := range addrs {
		waitTopicReplicas(t, a, "thr", "1,2")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("thr"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(45_000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const fill, size = 300, 10_000 // 3 MB
	val := []byte(strings.Repeat("x", size))
	var wg sync.WaitGroup
	for i := 0; i < fill; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	const rate = 1_000_000
	adm := kadm.NewClient(cl)
	target := replicaSize(ctx, t, adm, 1, "thr") // broker 1's copy: what broker 3 gets
	// Broker 3's copy polled from before the move starts: its first byte
	// to its last.
	type moveTimes struct{ first, last time.Time }
	moved := make(chan moveTimes, 1)
	go func() {
		var m moveTimes
		defer func() { moved <- m }()
		for ctx.Err() == nil {
			n := replicaSize(ctx, nil, adm, 3, "thr")
			if n > 0 && m.first.IsZero() {
				m.first = time.Now()
			}
			if n >= target {
				m.last = time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	plan := writeFile(t, "plan.json", `{"version":1,"partitions":[{"topic":"thr","partition":0,"replicas":[1,2,3]}]}`)
	// A steady producer while the data moves: each record acknowledged.
	var stop atomic.Bool
	var waits []time.Duration // of each acknowledged record; read after done
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			start := time.Now()
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("live-%d", i))).FirstErr(); err != nil {
				t.Errorf("produce during the move: %v", err)
				return
			}
			waits = append(waits, time.Since(start))
			time.Sleep(20 * time.Millisecond)
		}
	}()
	start := time.Now()
	r := runReassignCmd(t, addr, "--execute", "--reassignment-json-file", plan, "--throttle", fmt.Sprint(rate))
	if r.code != ExitOK || !strings.Contains(r.stdout, "The inter-broker throttle limit was set to 1000000 B/s") {
		t.Fatalf("execute: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	zk, err := cluster.DialZK(cluster.ZKConfig{Connect: connect, SessionTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	admin := cluster.NewAdmin(zk)
	for _, b := range []string{"1", "2", "3"} {
		cfg, err := admin.EntityConfig(cluster.ConfigTypeBroker, b)
		if err != nil || cfg[cfgLeaderRate] != "1000000" || cfg[cfgFollowerRate] != "1000000" {
			t.Fatalf("broker %s configs during the move: %v %v", b, cfg, err)
		}
	}
	tc, err := admin.TopicConfig("thr")
	if err != nil || tc[cfgLeaderReplicas] != "0:1,0:2" || tc[cfgFollowReplicas] != "0:3" {
		t.Fatalf("topic configs during the move: %v %v", tc, err)
	}
	// Completion: the first --verify that finds it complete clears.
	var verified groupsOut
	for deadline := time.Now().Add(90 * time.Second); ; {
		verified = runReassignCmd(t, addr, "--verify", "--reassignment-json-file", plan)
		if verified.code == ExitOK && !strings.Contains(verified.stdout, "in progress") {
			break
		}
		if verified.code != ExitOK || time.Now().After(deadline) {
			t.Fatalf("verify: exit %d %q %s", verified.code, verified.stdout, verified.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stop.Store(true)
	<-done
	mt := <-moved
	if mt.last.IsZero() {
		t.Fatalf("broker 3's copy never reached %d bytes", target)
	}
	took := mt.last.Sub(mt.first)
	got := float64(target) / took.Seconds()
	var sum time.Duration
	for _, w := range waits {
		sum += w
	}
	mean := sum / time.Duration(max(len(waits), 1))
	t.Logf("moved %d bytes in %v (%v from execute to verified): %.0f B/s at a throttle of %d B/s; %d records produced meanwhile, mean wait %v",
		target, took, elapsed, got, rate, len(waits), mean)
	// A fresh quota lets one window (num-1 samples) through at once, and
	// then nothing until that window has passed: from the first byte on,
	// the move is at the rate. Unthrottled it takes a fraction of a second.
	if got > 1.2*rate || got < 0.8*rate {
		t.Errorf("moved at %.0f B/s, want %d ± 20%%", got, rate)
	}
	// The ISR (1, 2) is not throttled: acks=all waits for broker 2's
	// fetches, which the leader throttle must not hold back (about 2 ms
	// a record on average here; 60-230 ms when it throttled in-sync
	// followers too).
	if len(waits) < 3 || mean > 25*time.Millisecond {
		t.Errorf("producer during the move: %d acknowledged, mean wait %v (want under 25 ms)", len(waits), mean)
	}
	if !strings.Contains(verified.stdout, "Throttle was removed.") {
		t.Errorf("verify did not remove the throttle: %q", verified.stdout)
	}
	for _, b := range []string{"1", "2", "3"} {
		cfg, err := admin.EntityConfig(cluster.ConfigTypeBroker, b)
		if err != nil || len(cfg) != 0 {
			t.Errorf("broker %s configs after verify: %v %v", b, cfg, err)
		}
	}
	tc, err = admin.TopicConfig("thr")
	if _, ok := tc[cfgLeaderReplicas]; err != nil || ok || tc[cfgFollowReplicas] != "" {
		t.Errorf("topic configs after verify: %v %v", tc, err)
	}
	waitTopicReplicas(t, addr, "thr", "1,2,3")
}

// replicaSize is the size of topic's partition 0 on broker (DescribeLogDirs;
// 0 while it has none). With t set, an error fails the test.
func replicaSize(ctx context.Context, t *testing.T, adm *kadm.Client, broker int32, topic string) int64 {
	ds, err := adm.DescribeBrokerLogDirs(ctx, broker, kadm.TopicsSet{topic: {0: {}}})
	if err == nil {
		err = ds.Error()
	}
	if err != nil {
		if t != nil {
			t.Fatalf("DescribeLogDirs of broker %d: %v", broker, err)
		}
		return 0
	}
	p, _ := ds.LookupPartition(topic, 0)
	return p.Size
}
