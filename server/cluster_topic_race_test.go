package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/cluster"
)

// TestClusterTopicCreateRacesDeletion: a topic of three partitions
// (replication factor 3) holding records is deleted while two clients keep
// creating a topic of the same name through kadm. Every creation answers
// TOPIC_ALREADY_EXISTS (the topic, or its deletion, still there) until
// exactly one succeeds; the new topic has a new topic id on every broker,
// is not taken by the old deletion (once /admin/delete_topics/T is gone it
// still exists and is led with a full ISR) and starts empty on every
// replica: its partition.metadata names the new id, and a consumer from
// the start reads only what was produced after.
func TestClusterTopicCreateRacesDeletion(t *testing.T) {
	const topic, parts = "race", 3
	c := startInprocCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c.addrs()))
	if res, err := adm.CreateTopic(ctx, parts, 3, nil, topic); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	c.waitLed(topic, parts, 3)
	oldID := c.broker(1).cl.images.load().topics[topic].id
	prod := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "old-%d", i)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	// Two creators race the deletion.
	var created, refused, timedOut atomic.Int32
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		cadm := kadm.NewClient(clusterClient(t, c.addrs()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() && ctx.Err() == nil {
				res, err := cadm.CreateTopic(ctx, parts, 3, nil, topic)
				if err == nil {
					err = res.Err
				}
				switch {
				case err == nil:
					created.Add(1)
					done.Store(true)
				case errors.Is(err, kerr.TopicAlreadyExists):
					refused.Add(1)
					time.Sleep(5 * time.Millisecond) // retry soon, not in a busy loop
				case errors.Is(err, kerr.RequestTimedOut):
					// created in ZooKeeper, not yet led within the
					// request's timeout: the checks below decide
					timedOut.Add(1)
					done.Store(true)
				default:
					errs <- fmt.Errorf("CreateTopics racing the deletion: %w", err)
					return
				}
			}
		}()
	}
	waitFor(t, 30*time.Second, "creations refused while the topic exists", func() bool { return refused.Load() >= 2 })
	del, err := adm.DeleteTopics(ctx, topic)
	if err != nil || del[topic].Err != nil {
		t.Fatalf("delete: %v %+v", err, del[topic])
	}
	waitFor(t, 60*time.Second, "a creation after the deletion", func() bool { return done.Load() || len(errs) > 0 })
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := created.Load(); n > 1 || n == 0 && timedOut.Load() == 0 {
		t.Fatalf("%d creations succeeded (%d timed out)", n, timedOut.Load())
	}

	// ZooKeeper: the deletion done, the new topic there with a new id.
	z := testZKConn(t, c.connect)
	var newID [16]byte
	waitFor(t, 60*time.Second, "the deletion finished and the new topic in ZooKeeper", func() bool {
		if ok, _, err := z.Exists(cluster.DeleteTopicPath(topic)); err != nil || ok {
			return false
		}
		data, _, err := z.Get(cluster.TopicPath(topic))
		if err != nil {
			return false
		}
		ta, err := cluster.DecodeTopicAssignment(topic, data)
		if err != nil {
			t.Fatalf("the new assignment: %v", err)
		}
		newID = ta.TopicID
		return true
	})
	if newID == oldID {
		t.Fatalf("the topic in ZooKeeper has the deleted topic's id %s", uuidString(oldID))
	}
	c.waitLed(topic, parts, 3)
	// Every broker holds the new topic, empty, under the new id.
	waitFor(t, 60*time.Second, "every replica of the new topic on every broker", func() bool {
		for _, b := range c.brokers {
			if b.cl.images.load().topics[topic].id != newID {
				return false
			}
			for p := int32(0); p < parts; p++ {
				if b.cl.rm.Partition(topic, p) == nil {
					return false
				}
			}
		}
		return true
	})
	for _, b := range c.brokers {
		for p := int32(0); p < parts; p++ {
			l := b.cl.rm.Partition(topic, p).Log()
			if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 {
				t.Errorf("broker %d: new %s-%d holds offsets %d to %d, want an empty log", b.NodeID(), topic, p, l.LogStartOffset(), l.LogEndOffset())
			}
			pm, err := os.ReadFile(filepath.Join(l.Dir(), PartitionMetadataFile))
			if err != nil || partitionMetadataID(pm) != uuidString(newID) {
				t.Errorf("broker %d: %s-%d partition.metadata %q (%v), want topic id %s", b.NodeID(), topic, p, pm, err, uuidString(newID))
			}
		}
	}
	// A new producer: franz-go's client that wrote to the old topic refuses
	// the recreated one (UNKNOWN_TOPIC_ID) by design.
	prod2 := clusterClient(t, c.addrs(), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 30 {
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "new-%d", i)}
		if err := prod2.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to the new topic: %v", err)
		}
	}
	cons := clusterClient(t, c.addrs(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	got := map[string]bool{}
	for len(got) < 30 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of the new topic's 30 records", len(got))
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !strings.HasPrefix(string(r.Value), "new-") {
				t.Fatalf("the new topic served %q at %s-%d offset %d", r.Value, r.Topic, r.Partition, r.Offset)
			}
			got[string(r.Value)] = true
		})
	}
	t.Logf("%d creations refused before one succeeded (%d timed out)", refused.Load(), timedOut.Load())
}

// TestClusterInvalidReplicationFactor: CreateTopics at the controller
// answers INVALID_REPLICATION_FACTOR, with a message naming the live
// brokers, for a factor above the number of live brokers: 4 with three
// brokers, and 3 once one of them has stopped; nothing is written to
// ZooKeeper; a factor the live brokers can hold is created.
func TestClusterInvalidReplicationFactor(t *testing.T) {
	c := startInprocCluster(t, 3)
	z := testZKConn(t, c.connect)
	create := func(name string, rf int16) (int16, string) {
		t.Helper()
		ctrl := c.controller()
		if ctrl == nil {
			t.Fatal("no controller")
		}
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, rf
		req.Topics = append(req.Topics, rt)
		resp := call[*kmsg.CreateTopicsResponse](t, client(t, ctrl), req).Topics[0]
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return resp.ErrorCode, msg
	}
	absent := func(name string) {
		t.Helper()
		if ok, _, err := z.Exists(cluster.TopicPath(name)); err != nil || ok {
			t.Fatalf("%s in ZooKeeper after a refused creation: %v %v", name, ok, err)
		}
	}
	if code, msg := create("rf4", 4); code != kerr.InvalidReplicationFactor.Code || !strings.Contains(msg, "3 available brokers") {
		t.Fatalf("replication factor 4 on 3 brokers: %d %q", code, msg)
	}
	absent("rf4")
	// Stop a broker that is not the controller: 2 live.
	ctrl := c.controller()
	var stopped *Server
	for _, b := range c.brokers {
		if b != ctrl {
			stopped = b
			break
		}
	}
	stopped.Close()
	waitFor(t, 30*time.Second, "the controller to see 2 live brokers", func() bool {
		return c.controller() == ctrl && len(ctrl.cl.images.load().brokers) == 2
	})
	if code, msg := create("rf3", 3); code != kerr.InvalidReplicationFactor.Code || !strings.Contains(msg, "2 available brokers") {
		t.Fatalf("replication factor 3 with 2 live brokers: %d %q", code, msg)
	}
	absent("rf3")
	if code, msg := create("rf2", 2); code != 0 {
		t.Fatalf("replication factor 2 with 2 live brokers: %d %q", code, msg)
	}
	c.waitLed("rf2", 2, 2)
	for _, mp := range ctrl.cl.images.load().topics["rf2"].parts {
		for _, r := range mp.replicas {
			if r == stopped.NodeID() {
				t.Fatalf("a replica placed on stopped broker %d: %v", r, mp.replicas)
			}
		}
	}
}
