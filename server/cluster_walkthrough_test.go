package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// startProcCluster starts n brokers (ids 1..n) in child processes and
// waits until they all live and one is the controller.
func startProcCluster(t *testing.T, n int, extra ...string) (string, []*procBroker, []string) {
	t.Helper()
	_, connect := testZK(t)
	var bs []*procBroker
	var addrs []string
	for id := int32(1); id <= int32(n); id++ {
		b := newProcBroker(t, connect, id, extra...).start()
		bs = append(bs, b)
		addrs = append(addrs, b.addr)
	}
	waitFor(t, 60*time.Second, "every broker live and a controller", func() bool {
		md := metadataOf(t, addrs, "")
		return len(md.Brokers) == n && md.ControllerID >= 1
	})
	return connect, bs, addrs
}

// partitionState is one partition's leader and ISR as a broker's metadata
// says.
func partitionState(t testing.TB, addrs []string, topic string, p int32) (leader int32, isr, replicas []int32) {
	t.Helper()
	md := metadataOf(t, addrs, topic)
	for _, mt := range md.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		for _, mp := range mt.Partitions {
			if mp.Partition == p {
				return mp.Leader, mp.ISR, mp.Replicas
			}
		}
	}
	return -1, nil, nil
}

// produceHistory sends values from..to-1 (one record each, to partition
// 0) and records every outcome.
func produceHistory(t testing.TB, cl *kgo.Client, h *history.History, topic string, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := from; i < to; i++ {
		v := fmt.Sprintf("v%06d", i)
		h.Send(v, 0)
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).First()
		if err != nil {
			h.Fail(v, false)
			t.Fatalf("produce %s: %v", v, err)
		}
		h.Ack(v, r.Offset)
	}
}

// consumeHistory reads topic's partition 0 from the start until it has
// read want records, recording each read.
func consumeHistory(t testing.TB, addrs []string, h *history.History, reader, topic string, want int) {
	t.Helper()
	cl := clusterClient(t, addrs, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s read %d of %d records", reader, got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			h.Read(reader, r.Partition, r.Offset, string(r.Value))
			got++
		})
	}
}

// readReplica reads a stopped broker's copy of a partition: its records
// and the checkpointed high watermark.
func readReplica(t testing.TB, id int32, logDir, topic string, p int32) history.Replica {
	t.Helper()
	tp := replica.TopicPartition{Topic: topic, Partition: p}
	hws, err := replica.ReadHighWatermarks(vfs.OS, logDir)
	if err != nil {
		t.Fatalf("broker %d: replication-offset-checkpoint: %v", id, err)
	}
	l, err := segment.Open(filepath.Join(logDir, tp.String()), &segment.Options{Logger: testLogger()})
	if err != nil {
		t.Fatalf("broker %d: %v", id, err)
	}
	defer l.Close()
	rep := history.Replica{Broker: id, Partition: p, HighWatermark: hws[tp]}
	var buf []byte
	var rr record.RecordReader
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		reg, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		buf, err = reg.ReadInto(buf[:0])
		reg.Release()
		if err != nil || len(buf) == 0 {
			t.Fatalf("broker %d: reading at %d: %v", id, off, err)
		}
		it := record.NewIterator(buf, record.ScanOptions{})
		for it.Next() {
			rr.Reset(it.Batch(), 0)
			for rec, ok := rr.Next(); ok; rec, ok = rr.Next() {
				rep.Records = append(rep.Records, history.Record{Offset: rec.Offset, Value: string(rec.Value)})
			}
			off = it.Header().LastOffset + 1
		}
	}
	return rep
}

// kcatMetadata runs kcat -L against the brokers.
func kcatMetadata(t *testing.T, addrs []string) string {
	t.Helper()
	bin := kcatBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-L", "-b", strings.Join(addrs, ",")).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	return string(out)
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// TestClusterWalkthrough is the seed documentation's walk-through, with
// three brokers in child processes and a real ZooKeeper: kcat -L shows the
// three brokers; my-replicated-topic is created with replication factor 3
// (kadm, through the controller) and described with its leader, replicas
// and a full ISR; records are produced with acks=all; the leader is killed
// with SIGKILL: the leadership moves to another ISR member and the ISR
// shrinks, consumers still read every acknowledged record and producers go
// on; the killed broker restarts, gets its replica back as a follower,
// catches up and rejoins the ISR. At the end, with every broker stopped,
// the three copies hold the same records up to the high watermark and the
// history finds no acknowledged record lost or moved.
func TestClusterWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three broker processes")
	}
	const topic = "my-replicated-topic"
	_, bs, addrs := startProcCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, addrs))
	created, err := adm.CreateTopic(ctx, 1, 3, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, created.Err)
	}
	var leader int32
	var isr, replicas []int32
	// Every broker's metadata, not just the first to answer: kcat -L
	// below asks whichever broker it reaches, and UpdateMetadata reaches
	// the brokers one by one (seen at load 25: kcat showed 0 topics).
	waitFor(t, 30*time.Second, "the topic led with a full ISR, on every broker", func() bool {
		for _, a := range addrs {
			l, i, r := partitionState(t, []string{a}, topic, 0)
			if l < 1 || len(i) != 3 || len(r) != 3 || (a != addrs[0] && l != leader) {
				return false
			}
			if a == addrs[0] {
				leader, isr, replicas = l, i, r
			}
		}
		return true
	})
	t.Logf("Topic: %s\tPartition: 0\tLeader: %d\tReplicas: %s\tIsr: %s", topic, leader, joinIDs(replicas), joinIDs(isr))
	out := kcatMetadata(t, addrs)
	if !strings.Contains(out, " 3 brokers:") ||
		!strings.Contains(out, fmt.Sprintf("partition 0, leader %d, replicas: %s, isrs: ", leader, joinIDs(replicas))) {
		t.Fatalf("kcat -L:\n%s", out)
	}
	h := history.New()
	prod := clusterClient(t, addrs, kgo.RequiredAcks(kgo.AllISRAcks()))
	produceHistory(t, prod, h, topic, 0, 300)

	// kill -9 the leader: another ISR member leads, the ISR shrinks.
	old := bs[leader-1]
	killedAt := time.Now()
	old.kill()
	var survivors []string
	for _, b := range bs {
		if b != old {
			survivors = append(survivors, b.addr)
		}
	}
	var newLeader int32
	waitFor(t, 30*time.Second, "a new leader and a shrunk ISR", func() bool {
		newLeader, isr, _ = partitionState(t, survivors, topic, 0)
		return newLeader >= 1 && newLeader != leader && len(isr) == 2 && !slices.Contains(isr, leader)
	})
	t.Logf("after kill -9 of broker %d (%v): Leader: %d\tIsr: %s", leader, time.Since(killedAt).Round(time.Millisecond), newLeader, joinIDs(isr))
	consumeHistory(t, survivors, h, "after-kill", topic, 300)
	produceHistory(t, prod, h, topic, 300, 600)

	// The killed broker comes back as a follower and rejoins the ISR.
	old.start()
	waitFor(t, 60*time.Second, "the restarted broker back in the ISR", func() bool {
		_, isr, _ = partitionState(t, addrs, topic, 0)
		return len(isr) == 3
	})
	produceHistory(t, prod, h, topic, 600, 700)
	consumeHistory(t, addrs, h, "after-restart", topic, 700)

	// Every broker stopped: the copies agree and nothing acknowledged is
	// missing.
	for _, b := range bs {
		b.term(60 * time.Second)
	}
	var reps []history.Replica
	for _, b := range bs {
		reps = append(reps, readReplica(t, b.id, b.dir, topic, 0))
	}
	rep := h.Check(reps)
	if err := rep.Err(); err != nil {
		t.Fatalf("history: %v (%s)", err, rep.Summary())
	}
	t.Logf("history: %s", rep.Summary())
	// Every copy holds the 700 records; followers learn the high watermark
	// one fetch late, so only the highest is sure to be 700.
	highest := int64(0)
	for _, r := range reps {
		highest = max(highest, r.HighWatermark)
		if len(r.Records) != 700 {
			t.Errorf("broker %d holds %d records, want 700", r.Broker, len(r.Records))
		}
	}
	if highest != 700 {
		t.Errorf("highest checkpointed high watermark %d, want 700", highest)
	}
}

// allLed reports whether every partition of topic has a leader among live
// brokers (the metadata of the brokers at addrs) and how many partitions
// it has.
func allLed(t testing.TB, addrs []string, topic string, live func(int32) bool) (bool, int) {
	md := metadataOf(t, addrs, topic)
	for _, mt := range md.Topics {
		if mt.Topic == nil || *mt.Topic != topic || mt.ErrorCode != 0 {
			continue
		}
		for _, mp := range mt.Partitions {
			if mp.ErrorCode != 0 || !live(mp.Leader) {
				return false, len(mt.Partitions)
			}
		}
		return true, len(mt.Partitions)
	}
	return false, 0
}

// TestClusterControllerFailover: SIGKILL of the controller's process; a
// new controller is elected once its ZooKeeper session expires
// (zookeeper.session.timeout.ms, 4 s here) and every partition the dead
// broker led is led again by a live one. The time from the kill is logged
// (Kafka's bound: the session timeout plus a second).
func TestClusterControllerFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three broker processes")
	}
	_, bs, addrs := startProcCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, addrs))
	if res, err := adm.CreateTopic(ctx, 30, 2, nil, "failover"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	all := func(int32) bool { return true }
	waitFor(t, 30*time.Second, "30 partitions led", func() bool { ok, n := allLed(t, addrs, "failover", all); return ok && n == 30 })
	ctrl := metadataOf(t, addrs, "").ControllerID
	dead := bs[ctrl-1]
	var survivors []string
	for _, b := range bs {
		if b != dead {
			survivors = append(survivors, b.addr)
		}
	}
	start := time.Now()
	dead.kill()
	live := func(id int32) bool { return id >= 1 && id != ctrl }
	var elected, led time.Duration
	waitFor(t, 60*time.Second, "a new controller and every partition led", func() bool {
		md := metadataOf(t, survivors, "")
		if md.ControllerID >= 1 && md.ControllerID != ctrl && elected == 0 {
			elected = time.Since(start)
		}
		if elected == 0 {
			return false
		}
		ok, n := allLed(t, survivors, "failover", live)
		if ok && n == 30 {
			led = time.Since(start)
			return true
		}
		return false
	})
	t.Logf("controller %d killed: new controller after %v, all 30 partitions led after %v (zookeeper.session.timeout.ms=4000)",
		ctrl, elected.Round(time.Millisecond), led.Round(time.Millisecond))
}

// TestClusterControlledShutdown: SIGTERM of a broker that leads partitions
// (controlled.shutdown.enable, the default): before it exits, the
// controller has moved its leaderships to other ISR members and taken it
// out of the ISRs, so a steady acks=all producer never waits for a
// session timeout; the longest stall is logged.
func TestClusterControlledShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and three broker processes")
	}
	_, bs, addrs := startProcCluster(t, 3, "controlled.shutdown.enable=true")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, addrs))
	if res, err := adm.CreateTopic(ctx, 6, 3, nil, "cs"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	all := func(int32) bool { return true }
	waitFor(t, 30*time.Second, "6 partitions led", func() bool { ok, n := allLed(t, addrs, "cs", all); return ok && n == 6 })
	leader, _, _ := partitionState(t, addrs, "cs", 0)
	stopping := bs[leader-1]
	var survivors []string
	for _, b := range bs {
		if b != stopping {
			survivors = append(survivors, b.addr)
		}
	}
	prod := clusterClient(t, survivors, kgo.RequiredAcks(kgo.AllISRAcks()))
	stop := make(chan struct{})
	stalls := make(chan time.Duration, 1)
	var acked atomic.Int64
	go func() {
		var longest time.Duration
		for i := 0; ; i++ {
			select {
			case <-stop:
				stalls <- longest
				return
			default:
			}
			start := time.Now()
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "cs", Partition: 0, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Errorf("produce during the controlled shutdown: %v", err)
				stalls <- longest
				return
			}
			longest = max(longest, time.Since(start))
			acked.Add(1)
		}
	}()
	waitFor(t, 30*time.Second, "traffic before the stop", func() bool { return acked.Load() >= 20 })
	start := time.Now()
	stopping.term(60 * time.Second)
	took := time.Since(start)
	// Moved before it exited: the controller answers ControlledShutdown
	// once ZooKeeper holds the new leaders and ISRs, and the broker logs
	// that answer before it exits. The survivors learn it from
	// UpdateMetadata, sent after that answer as Kafka's controller does,
	// so their metadata is awaited.
	if log, err := os.ReadFile(stopping.log); err != nil || !strings.Contains(string(log), "controlled shutdown succeeded") {
		t.Fatalf("broker %d exited without a successful controlled shutdown (log read: %v)", leader, err)
	}
	var newLeader int32
	var isr []int32
	waitFor(t, 10*time.Second, "the survivors' metadata without the stopped broker", func() bool {
		newLeader, isr, _ = partitionState(t, survivors, "cs", 0)
		return newLeader != leader && newLeader >= 0 && !slices.Contains(isr, leader)
	})
	before := acked.Load()
	waitFor(t, 30*time.Second, "traffic after the stop", func() bool { return acked.Load() >= before+20 })
	close(stop)
	longest := <-stalls
	t.Logf("controlled shutdown of broker %d took %v; longest acks=all produce during it: %v", leader, took.Round(time.Millisecond), longest.Round(time.Millisecond))
}
