package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/history"
	"github.com/stratalog/strata/internal/vfs"
	"github.com/stratalog/strata/replica"
)

// inprocCluster is n in-process cluster brokers (ids 1..n) on one real
// ZooKeeper. Close of one ends its session at once (controlled shutdown
// off unless asked), so the controller sees it gone without waiting for
// the session timeout.
type inprocCluster struct {
	t       *testing.T
	connect string
	brokers []*Server
	dirs    []string
}

func startInprocCluster(t *testing.T, n int, extra ...string) *inprocCluster {
	t.Helper()
	_, connect := testZK(t)
	return startInprocClusterAt(t, connect, n, extra...)
}

// startInprocClusterAt is startInprocCluster on a ZooKeeper the test
// prepared (znodes written before the brokers start).
func startInprocClusterAt(t *testing.T, connect string, n int, extra ...string) *inprocCluster {
	t.Helper()
	c := &inprocCluster{t: t, connect: connect}
	for id := int32(1); id <= int32(n); id++ {
		dir := t.TempDir()
		c.dirs = append(c.dirs, dir)
		c.brokers = append(c.brokers, startClusterBroker(t, connect, id, dir,
			append([]string{"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5"}, extra...)...))
	}
	waitFor(t, 60*time.Second, "every broker live and a controller", func() bool {
		md := metadataOf(t, c.addrs(), "")
		return len(md.Brokers) == n && md.ControllerID >= 1
	})
	return c
}

// addrs are the addresses of the brokers still running.
func (c *inprocCluster) addrs() []string {
	var out []string
	for _, b := range c.brokers {
		if !b.closing.Load() {
			out = append(out, b.Addr().String())
		}
	}
	return out
}

func (c *inprocCluster) broker(id int32) *Server { return c.brokers[id-1] }

// controller is the broker that is the active controller, nil if none.
func (c *inprocCluster) controller() *Server {
	for _, b := range c.brokers {
		if !b.closing.Load() && b.cl.mem.IsController() {
			return b
		}
	}
	return nil
}

// waitLed waits until every partition of topic has a live leader and, if
// isr > 0, an ISR of that size, as the metadata of every running broker
// shows it.
func (c *inprocCluster) waitLed(topic string, partitions, isr int) {
	c.t.Helper()
	defer func() {
		if c.t.Failed() {
			for _, b := range c.brokers {
				if b.closing.Load() {
					continue
				}
				im := b.cl.images.load()
				if t := im.topics[topic]; t != nil {
					for p, mp := range t.parts {
						c.t.Logf("broker %d sees %s-%d: %+v", b.NodeID(), topic, p, mp)
					}
				} else {
					c.t.Logf("broker %d does not know %s", b.NodeID(), topic)
				}
			}
		}
	}()
	waitFor(c.t, 60*time.Second, fmt.Sprintf("%s led with ISR %d on every broker", topic, isr), func() bool {
		for _, b := range c.brokers {
			if b.closing.Load() {
				continue
			}
			im := b.cl.images.load()
			ok, n := im.led(topic)
			if !ok || n != partitions {
				return false
			}
			for _, mp := range im.topics[topic].parts {
				if isr > 0 && len(mp.isr) != isr {
					return false
				}
			}
		}
		return true
	})
}

// TestClusterMinInsyncReplicas: with min.insync.replicas=2 on a topic of
// replication factor 3, acks=all goes on with one broker of three down;
// with two down the ISR is the leader alone and acks=all is refused with
// NOT_ENOUGH_REPLICAS before the append, while acks=1 works.
func TestClusterMinInsyncReplicas(t *testing.T) {
	c := startInprocCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	res, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg2("2")}, "minisr")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("minisr", 1, 3)
	all := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1))
	if err := all.ProduceSync(ctx, &kgo.Record{Topic: "minisr", Value: []byte("three")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with three in sync: %v", err)
	}
	// Stop a follower: the ISR shrinks to two, acks=all goes on.
	leader := c.broker(1).cl.images.load().topics["minisr"].parts[0].leader
	var followers []int32
	for id := int32(1); id <= 3; id++ {
		if id != leader {
			followers = append(followers, id)
		}
	}
	c.broker(followers[0]).Close()
	c.waitLed("minisr", 1, 2)
	if err := all.ProduceSync(ctx, &kgo.Record{Topic: "minisr", Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with two in sync: %v", err)
	}
	// Stop the other follower: the leader is alone.
	c.broker(followers[1]).Close()
	c.waitLed("minisr", 1, 1)
	// The client may still try a stopped broker (a metadata refresh
	// through a seed that is gone): with one record retry that surfaces
	// as a dial error, which says nothing of the broker's answer, so
	// such attempts are repeated until the leader answers.
	for deadline := time.Now().Add(30 * time.Second); ; {
		err = all.ProduceSync(ctx, &kgo.Record{Topic: "minisr", Value: []byte("one")}).FirstErr()
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" && time.Now().Before(deadline) {
			continue
		}
		break
	}
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with the leader alone: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	r, err := one.ProduceSync(ctx, &kgo.Record{Topic: "minisr", Value: []byte("acks1")}).First()
	if err != nil {
		t.Fatalf("acks=1 with the leader alone: %v", err)
	}
	if r.Offset != 2 {
		t.Fatalf("acks=1 record at offset %d, want 2 (the refused acks=all one was not appended)", r.Offset)
	}
}

func kmsg2(s string) *string { return &s }

// TestClusterTopicAdmin: topic administration across brokers with kadm,
// whose requests go to whichever broker, the controller for CreateTopics,
// CreatePartitions and DeleteTopics: a topic created through the
// controller is in every broker's metadata with its replicas placed over
// the three brokers; CreateTopics at a broker that is not the controller
// answers NOT_CONTROLLER; partitions added are led; configs altered at one
// broker are in ZooKeeper, described by the others and applied to their
// live logs; a deleted topic leaves every broker's metadata and logs.
func TestClusterTopicAdmin(t *testing.T) {
	c := startInprocCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	res, err := adm.CreateTopic(ctx, 6, 2, nil, "admin")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("admin", 6, 2)
	leads := map[int32]int{}
	for _, mp := range c.broker(2).cl.images.load().topics["admin"].parts {
		if len(mp.replicas) != 2 || mp.replicas[0] == mp.replicas[1] {
			t.Fatalf("replicas %v", mp.replicas)
		}
		leads[mp.leader]++
	}
	if len(leads) != 3 {
		t.Fatalf("6 partitions led by %v: placement should spread them over the 3 brokers", leads)
	}
	// A broker that is not the controller refuses CreateTopics.
	ctrl := c.controller()
	var other *Server
	for _, b := range c.brokers {
		if b != ctrl {
			other = b
		}
	}
	r := dialRaw(t, other)
	if code := createWithConfigs(t, r, "elsewhere"); code != kerr.NotController.Code {
		t.Fatalf("CreateTopics at broker %d (controller %d): %d, want NOT_CONTROLLER", other.NodeID(), ctrl.NodeID(), code)
	}
	// More partitions.
	if _, err := adm.UpdatePartitions(ctx, 8, "admin"); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	c.waitLed("admin", 8, 2)
	// Configs altered through one broker reach every broker's live logs.
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg2("123456")}}, "admin")
	if err != nil || alter[0].Err != nil {
		t.Fatalf("alter configs: %v %v", err, alter)
	}
	waitFor(t, 30*time.Second, "retention.ms on every live log", func() bool {
		for _, b := range c.brokers {
			for _, p := range b.cl.rm.Partitions() {
				if p.TopicPartition().Topic == "admin" && p.Log().Options().RetentionMs != 123456 {
					return false
				}
			}
		}
		return true
	})
	desc, err := kadm.NewClient(clusterClient(t, []string{other.Addr().String()})).DescribeTopicConfigs(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cfg := range desc[0].Configs {
		found = found || cfg.Key == "retention.ms" && cfg.Value != nil && *cfg.Value == "123456"
	}
	if !found {
		t.Fatalf("describe at broker %d: %+v", other.NodeID(), desc[0].Configs)
	}
	// Delete.
	del, err := adm.DeleteTopics(ctx, "admin")
	if err != nil || del["admin"].Err != nil {
		t.Fatalf("delete: %v %v", err, del)
	}
	waitFor(t, 30*time.Second, "the topic gone from every broker", func() bool {
		for _, b := range c.brokers {
			if _, ok := b.cl.images.load().topics["admin"]; ok {
				return false
			}
			if slices.ContainsFunc(b.cl.rm.Partitions(), func(p *replica.Partition) bool { return p.TopicPartition().Topic == "admin" }) {
				return false
			}
		}
		return true
	})
}

// TestClusterGroupCoordinatorMoves: a franz-go group consumer keeps
// consuming when the broker coordinating its group stops: the leadership
// of the group's __consumer_offsets partition moves, the new leader loads
// the group and its committed offsets, other brokers answer
// NOT_COORDINATOR, and every record produced before and after is read.
func TestClusterGroupCoordinatorMoves(t *testing.T) {
	c := startInprocCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 3, 3, nil, "events"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("events", 3, 3)
	cons := clusterClient(t, c.addrs(), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.AutoCommitInterval(200*time.Millisecond))
	prod := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	seen := map[string]bool{}
	readUntil := func(n int) {
		t.Helper()
		for len(seen) < n {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records", len(seen), n)
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)] = true
			})
		}
	}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			v := fmt.Sprintf("e%05d", i)
			p := int32(i % 3)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "events", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	produce(0, 300)
	readUntil(300)
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	coord := adm.FindGroupCoordinators(ctx, "g")
	if coord["g"].Err != nil {
		t.Fatalf("find coordinator: %+v", coord)
	}
	old := coord["g"].NodeID
	// A broker that does not coordinate the group says so.
	other := c.broker(old%3 + 1)
	if code := other.groups.groupCheck("g"); code != kerr.NotCoordinator.Code {
		t.Fatalf("broker %d (coordinator %d) answers %d for the group, want NOT_COORDINATOR", other.NodeID(), old, code)
	}
	committed, err := adm.FetchOffsets(ctx, "g")
	if err != nil || committed.Error() != nil {
		t.Fatalf("offsets: %v", err)
	}
	c.broker(old).Close()
	produce(300, 600)
	readUntil(600)
	coord = kadm.NewClient(clusterClient(t, c.addrs())).FindGroupCoordinators(ctx, "g")
	if coord["g"].Err != nil || coord["g"].NodeID == old {
		t.Fatalf("coordinator after broker %d stopped: %+v", old, coord)
	}
	// The group's offsets survived the move.
	after, err := kadm.NewClient(clusterClient(t, c.addrs())).FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if a, ok := after.Lookup(o.Topic, o.Partition); !ok || a.At < o.At {
			t.Errorf("%s/%d: committed %d before the move, %d after", o.Topic, o.Partition, o.At, a.At)
		}
	})
	for i := range 600 {
		if v := fmt.Sprintf("e%05d", i); !seen[v] {
			t.Fatalf("the group never read %s", v)
		}
	}
}

// TestClusterOffsetsTopicReplication: __consumer_offsets is created with
// offsets.topic.replication.factor replicas once that many brokers live:
// with one broker of a factor 2 FindCoordinator answers
// COORDINATOR_NOT_AVAILABLE (as Kafka's "does not meet the required
// replication factor"), once the second broker is up the topic is created
// with 2 replicas per partition and the group is coordinated.
func TestClusterOffsetsTopicReplication(t *testing.T) {
	_, connect := testZK(t)
	b1 := startClusterBroker(t, connect, 1, t.TempDir(), "offsets.topic.replication.factor=2", "offsets.topic.num.partitions=3")
	waitFor(t, 30*time.Second, "broker 1 to see itself and a controller", func() bool {
		im := b1.cl.images.load()
		return len(im.brokers) == 1 && im.controllerID == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, []string{b1.Addr().String()}, kgo.RetryTimeout(time.Second)))
	if co := adm.FindGroupCoordinators(ctx, "g"); !errors.Is(co["g"].Err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("FindCoordinator with 1 of 2 brokers: %+v", co["g"])
	}
	if _, ok := b1.cl.images.load().topics[OffsetsTopic]; ok {
		t.Fatal("the offsets topic was created with too few brokers")
	}
	startClusterBroker(t, connect, 2, t.TempDir(), "offsets.topic.replication.factor=2", "offsets.topic.num.partitions=3")
	waitFor(t, 30*time.Second, "the group coordinated", func() bool {
		co := adm.FindGroupCoordinators(ctx, "g")
		return co["g"].Err == nil && co["g"].NodeID >= 1
	})
	for _, mp := range b1.cl.images.load().topics[OffsetsTopic].parts {
		if len(mp.replicas) != 2 {
			t.Fatalf("offsets partition replicas %v, want 2", mp.replicas)
		}
	}
	// A produce to a topic nobody created: Metadata auto-creates it with
	// default.replication.factor and the record lands once it is led.
	cl := clusterClient(t, []string{b1.Addr().String()}, kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to an auto-created topic: %v", err)
	}
}

// TestClusterZooKeeperOutage: with ZooKeeper stopped, the brokers keep
// serving what they lead (acks=all produce and consume go on: replication
// does not go through ZooKeeper); once it is back within the session
// timeout the sessions resume and the controller works again (a topic can
// be created).
func TestClusterZooKeeperOutage(t *testing.T) {
	zs, connect := testZK(t)
	c := &inprocCluster{t: t, connect: connect}
	for id := int32(1); id <= 3; id++ {
		dir := t.TempDir()
		c.dirs = append(c.dirs, dir)
		c.brokers = append(c.brokers, startClusterBroker(t, connect, id, dir, "zookeeper.session.timeout.ms=20000",
			"replica.lag.time.max.ms=20000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5"))
	}
	waitFor(t, 60*time.Second, "every broker live and a controller", func() bool {
		md := metadataOf(t, c.addrs(), "")
		return len(md.Brokers) == 3 && md.ControllerID >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 1, 3, nil, "outage"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed("outage", 1, 3)
	prod := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	send := func(v string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "outage", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	send("before")
	zs.Stop()
	for i := range 50 {
		send(fmt.Sprintf("during-%d", i))
	}
	got := 0
	cons := clusterClient(t, c.addrs(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"outage": {0: kgo.NewOffset().AtStart()}}))
	for got < 51 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 51 records with ZooKeeper down", got)
		}
		got += len(fs.Records())
	}
	zs.Restart()
	waitFor(t, 60*time.Second, "a topic created once ZooKeeper is back", func() bool {
		res, err := adm.CreateTopic(ctx, 1, 3, nil, "after-outage")
		return err == nil && (res.Err == nil || errors.Is(res.Err, kerr.TopicAlreadyExists))
	})
	c.waitLed("after-outage", 1, 3)
	send("after")
}

// TestClusterLogDirFailure: the leader's log dir fails (its fsyncs return
// an I/O error): the produce in flight answers KAFKA_STORAGE_ERROR, the
// dir goes offline, the broker tells the controller
// (/log_dir_event_notification), answers the controller's LeaderAndIsr for
// the dir's partition with KAFKA_STORAGE_ERROR, and the controller elects
// another ISR member and takes the broker out of the ISR: producers go on
// at the new leader and every acknowledged record is there.
func TestClusterLogDirFailure(t *testing.T) {
	_, connect := testZK(t)
	c := &inprocCluster{t: t, connect: connect}
	var fail atomic.Bool
	dir1 := t.TempDir()
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if fail.Load() && op.Kind == vfs.OpSync && strings.HasPrefix(op.Path, dir1+"/") {
			return vfs.ErrInjected
		}
		return nil
	})
	extra := []string{"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5"}
	b1, err := tryClusterBrokerWith(connect, 1, dir1, &Options{FS: vfs.Inject(vfs.OS, inj)}, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b1.Close() })
	c.brokers = append(c.brokers, b1)
	for id := int32(2); id <= 3; id++ {
		c.brokers = append(c.brokers, startClusterBroker(t, connect, id, t.TempDir(), extra...))
	}
	waitFor(t, 60*time.Second, "every broker live and a controller", func() bool {
		md := metadataOf(t, c.addrs(), "")
		return len(md.Brokers) == 3 && md.ControllerID >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// Broker 1 first: the preferred (and first) leader. flush.messages=1
	// makes every append fsync, so the failure shows at the next produce.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "disk", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "flush.messages", kmsg2("1")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	cresp, err := req.RequestWith(ctx, clusterClient(t, c.addrs()))
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, cresp)
	}
	c.waitLed("disk", 1, 3)
	if l := b1.cl.images.load().topics["disk"].parts[0].leader; l != 1 {
		t.Fatalf("leader %d, want 1", l)
	}
	h := history.New()
	prod := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceHistory(t, prod, h, "disk", 0, 50)
	fail.Store(true)
	produceHistory(t, prod, h, "disk", 50, 100) // retried at the new leader
	var leader int32
	var isr []int32
	waitFor(t, 30*time.Second, "another leader and broker 1 out of the ISR", func() bool {
		leader, isr, _ = partitionState(t, c.addrs()[1:], "disk", 0)
		return leader >= 2 && !slices.Contains(isr, 1)
	})
	if off := b1.OfflineLogDirs(); len(off) != 1 {
		t.Fatalf("offline log dirs %v", off)
	}
	consumeHistory(t, c.addrs()[1:], h, "after", "disk", 100)
	for _, b := range c.brokers[1:] {
		b.Close()
	}
	var reps []history.Replica
	for i, dir := range []string{c.brokers[1].cfg.LogDirs[0], c.brokers[2].cfg.LogDirs[0]} {
		reps = append(reps, readReplica(t, int32(i+2), dir, "disk", 0))
	}
	if rep := h.Check(reps); rep.Err() != nil {
		t.Fatalf("history: %v (%s)", rep.Err(), rep.Summary())
	}
}
