package server

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterUncleanElection: the availability-versus-durability switch end
// to end, on two in-process brokers and a real ZooKeeper. A topic of
// replication factor 2 takes records A on both replicas, then, its
// follower F stopped, records B on the leader L alone (acknowledged with
// acks=all: the ISR is {L}). L stops; F comes back. With
// unclean.leader.election.enable off the partition stays without a leader
// (the ISR {L} is kept: F would lose B). Enabled on the topic, F leads: B
// is lost, as the option says, and F takes records C at B's offsets in a
// new leader epoch. When L comes back it follows F, truncates B by leader
// epoch (KIP-101: its tail diverges from F's) and fetches C: both replicas
// then hold A and C at the same offsets, and no B.
func TestClusterUncleanElection(t *testing.T) {
	c := startInprocCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "unclean"
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, 1, 2, nil, topic); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed(topic, 1, 2)
	l := c.broker(1).cl.images.load().topics[topic].parts[0].leader
	f := 3 - l
	send := func(addrs []string, vals ...string) []int64 {
		t.Helper()
		cl := clusterClient(t, addrs, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
		defer cl.Close()
		var offs []int64
		for _, v := range vals {
			r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).First()
			if err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			offs = append(offs, r.Offset)
		}
		return offs
	}
	restart := func(id int32) {
		t.Helper()
		c.brokers[id-1] = startClusterBroker(t, c.connect, id, c.dirs[id-1],
			"replica.lag.time.max.ms=4000", "replica.fetch.wait.max.ms=200", "offsets.topic.num.partitions=5")
	}

	send(c.addrs(), "a0", "a1", "a2")
	c.broker(f).Close()
	c.waitLed(topic, 1, 1)
	if offs := send(c.addrs(), "b3", "b4", "b5"); !slices.Equal(offs, []int64{3, 4, 5}) {
		t.Fatalf("records B at offsets %v", offs)
	}
	c.broker(l).Close()

	// F alone, unclean election off (the default): no leader.
	restart(f)
	fb := c.broker(f)
	waitFor(t, 60*time.Second, fmt.Sprintf("broker %d controller with the topic in its metadata", f), func() bool {
		_, ok := fb.cl.images.load().topics[topic]
		return fb.cl.mem.IsController() && ok
	})
	leader, isr, _ := partitionState(t, c.addrs(), topic, 0)
	if leader != -1 || !slices.Equal(isr, []int32{l}) {
		t.Fatalf("unclean election off, the ISR's only member %d down: leader %d, ISR %v; want no leader, ISR [%d]", l, leader, isr, l)
	}
	if p := fb.cl.rm.Partition(topic, 0); p == nil || p.Log().LogEndOffset() != 3 {
		t.Fatalf("broker %d's replica: %v", f, p)
	}

	// Enabled on the topic: F leads, without B. (A new client: F
	// listens on a new port.)
	alter, err := kadm.NewClient(clusterClient(t, c.addrs())).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kmsg2("true")}}, topic)
	if err != nil || alter[0].Err != nil {
		t.Fatalf("alter configs: %v %v", err, alter)
	}
	waitFor(t, 60*time.Second, fmt.Sprintf("broker %d leading after the unclean election", f), func() bool {
		leader, _, _ := partitionState(t, c.addrs(), topic, 0)
		return leader == f
	})
	if offs := send(c.addrs(), "c3", "c4"); !slices.Equal(offs, []int64{3, 4}) {
		t.Fatalf("records C at offsets %v, want B's 3 and 4", offs)
	}

	// L comes back: it follows F and truncates B away.
	restart(l)
	c.waitLed(topic, 1, 2)
	waitFor(t, 60*time.Second, fmt.Sprintf("broker %d at the leader's log end", l), func() bool {
		p := c.broker(l).cl.rm.Partition(topic, 0)
		return p != nil && p.Log().LogEndOffset() == 5 && p.HighWatermark() == 5
	})
	c.broker(l).Close()
	c.broker(f).Close()
	want := []string{"a0", "a1", "a2", "c3", "c4"}
	for _, id := range []int32{l, f} {
		rep := readReplica(t, id, c.dirs[id-1], topic, 0)
		var got []string
		for i, r := range rep.Records {
			if r.Offset != int64(i) {
				t.Fatalf("broker %d: record %d at offset %d", id, i, r.Offset)
			}
			got = append(got, r.Value)
		}
		if !slices.Equal(got, want) {
			t.Errorf("broker %d holds %v, want %v", id, got, want)
		}
	}
}
