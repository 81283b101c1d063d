package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func shutdownReq(version int16, id int32, epoch int64) *kmsg.ControlledShutdownRequest {
	r := kmsg.NewPtrControlledShutdownRequest()
	r.Version, r.BrokerID, r.BrokerEpoch = version, id, epoch
	return r
}

// TestControlledShutdown: the stopping broker's leaderships move to the
// next live ISR member not shutting down (the ISR loses it), where it
// follows it gets StopReplica (delete=false) and leaves the ISR; the
// answer lists what it still leads (a single-replica partition).
func TestControlledShutdown(t *testing.T) {
	w, mark := threeBrokers(t, nil, nil)
	w.createTopic("solo", [][]int32{{2}}, nil)
	w.step(w.topicsEvent())
	_, mark = w.since(mark)
	e2 := w.c.brokers[2].Epoch

	w.step(ControlledShutdown{ID: 1, Req: shutdownReq(3, 2, e2-1)})
	if r := lastReply(t, w, 1).(*kmsg.ControlledShutdownResponse); r.ErrorCode != errStaleBrokerEpoch {
		t.Fatalf("stale broker epoch: error %d", r.ErrorCode)
	}
	w.step(ControlledShutdown{ID: 2, Req: shutdownReq(1, 9, -1)})
	if r := lastReply(t, w, 2).(*kmsg.ControlledShutdownResponse); r.ErrorCode != errBrokerNotAvailable {
		t.Fatalf("unknown broker: error %d", r.ErrorCode)
	}

	w.step(ControlledShutdown{ID: 3, Req: shutdownReq(3, 2, e2)})
	r := lastReply(t, w, 3).(*kmsg.ControlledShutdownResponse)
	if r.ErrorCode != 0 || r.Version != 3 || len(r.PartitionsRemaining) != 1 || r.PartitionsRemaining[0].Topic != "solo" {
		t.Fatalf("answer %+v, want only solo-0 remaining", r)
	}
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 3] v=1")
	wantState(t, w, "t", 1, "leader=3 epoch=1 isr=[3 1] v=1")
	got, _ := w.since(mark)
	wantLines(t, "requests", got,
		"lisr->1 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->1 brokers=1,2,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
		"lisr->2 t-1:L3/E1/[3 1]/v1",
		"um->2 brokers=1,2,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
		"stop->2 t-0:E1",
		"lisr->3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->3 brokers=1,2,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
	)
	// While 2 shuts down, no election picks it: 3 dies, t-1 moves to 1.
	w.kill(3)
	w.step(w.brokersEvent())
	wantState(t, w, "t", 1, "leader=1 epoch=2 isr=[1] v=2")
}

// TestControlledShutdownReplyWaitsForWrites: the answer is released only
// after the writes it reports are acknowledged.
func TestControlledShutdownReplyWaitsForWrites(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.c.Step(ControlledShutdown{ID: 5, Req: shutdownReq(3, 1, w.c.brokers[1].Epoch)})
	rd := w.c.Ready()
	if len(rd.Writes) != 1 || len(rd.Replies) != 0 || len(rd.Requests) != 0 {
		t.Fatalf("before the write is acknowledged: %d writes, %d replies, %d requests", len(rd.Writes), len(rd.Replies), len(rd.Requests))
	}
	res, err := w.zk.Multi(rd.Writes[0].Ops...)
	w.c.Step(WriteResult{Batch: rd.Writes[0].ID, Results: res, Err: err})
	rd = w.c.Ready()
	if len(rd.Replies) != 1 || rd.Replies[0].ID != 5 || len(rd.Requests) == 0 {
		t.Fatalf("after the ack: %d replies, %d requests", len(rd.Replies), len(rd.Requests))
	}
}

// TestTopicDeletion: UpdateMetadata announces leader -2, every replica
// gets StopReplica (delete=false) then (delete=true, leader epoch -2);
// the znodes go once all answered. A dead replica holds the deletion until
// its broker returns.
func TestTopicDeletion(t *testing.T) {
	w, mark := threeBrokers(t, nil, nil)
	w.kill(3)
	w.step(w.brokersEvent())
	_, mark = w.since(mark)
	w.zk.mustCreate(ctrlDeleteTopicPath("t"), nil, Persistent)
	w.step(w.deletionsEvent())
	got, mark := w.since(mark)
	wantLines(t, "requests", got,
		"um->1 brokers=1,2 t-0:L-2/E1/[1 2]/v1/off[3] t-1:L-2/E1/[2 1]/v1/off[3]",
		"stop->1 t-0:E-2 t-1:E-2",
		"um->2 brokers=1,2 t-0:L-2/E1/[1 2]/v1/off[3] t-1:L-2/E1/[2 1]/v1/off[3]",
		"stop->2 t-0:E-2 t-1:E-2",
		"stop->1 t-0:E-2/del t-1:E-2/del",
		"stop->2 t-0:E-2/del t-1:E-2/del",
	)
	if ok, _, _ := w.zk.Exists(ctrlTopicPath("t")); !ok {
		t.Fatal("topic znode deleted while broker 3 still holds replicas")
	}
	w.register(3)
	w.step(w.brokersEvent())
	got, _ = w.since(mark)
	wantLines(t, "requests after 3 returned", got,
		"um->1 brokers=1,2,3",
		"um->2 brokers=1,2,3",
		"um->3 brokers=1,2,3 t-0:L-2/E1/[1 2]/v1 t-1:L-2/E1/[2 1]/v1",
		"stop->3 t-0:E-2 t-1:E-2",
		"stop->3 t-0:E-2/del t-1:E-2/del",
	)
	for _, p := range []string{ctrlTopicPath("t"), ctrlTopicConfigPath("t"), ctrlDeleteTopicPath("t"), ctrlPartitionsPath("t")} {
		if ok, _, _ := w.zk.Exists(p); ok {
			t.Fatalf("%s still exists after the deletion", p)
		}
	}
	if w.c.topics["t"] != nil {
		t.Fatal("controller still knows t")
	}
	// A stale TopicsChanged listing the deleted topic is ignored; a new
	// topic of the same name (new id) is created.
	w.step(TopicsChanged{Topics: []Topic{{Name: "t", ID: w.c.tombstones["t"], Replicas: [][]int32{{1}}}}})
	if w.c.topics["t"] != nil {
		t.Fatal("stale listing recreated the deleted topic")
	}
	w.createTopic("t", [][]int32{{3}}, nil)
	w.step(w.topicsEvent())
	wantState(t, w, "t", 0, "leader=3 epoch=0 isr=[3] v=0")
}

// TestTopicDeletionFailedReplica: a StopReplica error holds the deletion
// until the broker restarts; delete.topic.enable=false removes the request.
func TestTopicDeletionFailedReplica(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.stopErr[2] = errKafkaStorage
	w.zk.mustCreate(ctrlDeleteTopicPath("t"), nil, Persistent)
	w.step(w.deletionsEvent())
	if ok, _, _ := w.zk.Exists(ctrlTopicPath("t")); !ok {
		t.Fatal("deleted although broker 2 failed")
	}
	delete(w.stopErr, 2)
	w.kill(2)
	w.register(2)
	w.step(w.brokersEvent())
	if ok, _, _ := w.zk.Exists(ctrlTopicPath("t")); ok {
		t.Fatal("not deleted after broker 2 restarted")
	}

	w2, _ := threeBrokers(t, &ControllerOptions{DeleteTopicEnable: false}, nil)
	w2.zk.mustCreate(ctrlDeleteTopicPath("t"), nil, Persistent)
	w2.step(w2.deletionsEvent())
	if ok, _, _ := w2.zk.Exists(ctrlDeleteTopicPath("t")); ok {
		t.Fatal("request kept with delete.topic.enable=false")
	}
	if ok, _, _ := w2.zk.Exists(ctrlTopicPath("t")); !ok {
		t.Fatal("topic deleted with delete.topic.enable=false")
	}
}

// TestPreferredElection: ElectLeaders moves leadership back to the
// preferred replica when it is online and in the ISR; the auto rebalance
// tick does so for brokers above leader.imbalance.per.broker.percentage.
func TestPreferredElection(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.kill(1)
	w.register(1)
	w.step(w.brokersEvent()) // t-0 moves to 2; 1 is back but not in the ISR
	wantState(t, w, "t", 0, "leader=2 epoch=1 isr=[2 3] v=1")

	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 2
	w.step(ElectLeaders{ID: 1, Req: req}) // all partitions
	resp := lastReply(t, w, 1).(*kmsg.ElectLeadersResponse)
	codes := fmt.Sprint(resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[1].ErrorCode)
	if codes != fmt.Sprint(errPreferredLeaderUnavailable, errElectionNotNeeded) {
		t.Fatalf("codes %s", codes)
	}
	// 1 rejoins the ISR (AlterPartition by the leader 2).
	w.step(AlterPartition{ID: 2, Req: alterReq(w, 0, 2, w.c.brokers[2].Epoch, "t", 0, 1, 1, 2, 3, 1)})
	w.step(RebalanceTick{})
	wantState(t, w, "t", 0, "leader=1 epoch=2 isr=[2 3 1] v=3")

	req = kmsg.NewPtrElectLeadersRequest()
	req.Version = 1
	req.ElectionType = 1 // unclean: not needed, leaders are live
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 7}
	req.Topics = append(req.Topics, rt)
	w.step(ElectLeaders{ID: 3, Req: req})
	resp = lastReply(t, w, 3).(*kmsg.ElectLeadersResponse)
	codes = fmt.Sprint(resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[1].ErrorCode)
	if codes != fmt.Sprint(errElectionNotNeeded, errUnknownTopicOrPartition) {
		t.Fatalf("codes %s", codes)
	}
}

// TestRebalanceThreshold: one partition of ten not led by its preferred
// broker is 10%, not above the default 10%: nothing moves; two are.
func TestRebalanceThreshold(t *testing.T) {
	w := newWorld(t, 1, nil)
	w.register(1, 2)
	w.elect()
	var a [][]int32
	for i := 0; i < 10; i++ {
		a = append(a, []int32{1, 2})
	}
	w.createTopic("t", a, nil)
	w.step(w.topicsEvent())
	for p := int32(0); p < 2; p++ {
		tt := w.c.topics["t"]
		st := tt.parts[p].st.clone()
		st.Leader, st.LeaderEpoch = 2, st.LeaderEpoch+1
		w.c.writeState(tt, p, st)
		w.c.flush()
		w.drive()
		if p == 0 {
			w.step(RebalanceTick{})
			wantState(t, w, "t", 0, "leader=2 epoch=1 isr=[1 2] v=1")
		}
	}
	w.step(RebalanceTick{})
	wantState(t, w, "t", 0, "leader=1 epoch=2 isr=[1 2] v=2")
	wantState(t, w, "t", 1, "leader=1 epoch=2 isr=[1 2] v=2")
}

// TestLogDirFailure: after a log dir notification the broker gets
// LeaderAndIsr for its replicas; those it answers KAFKA_STORAGE_ERROR for
// are offline: led elsewhere, out of the ISR, StopReplica, and the
// notification znode is deleted.
func TestLogDirFailure(t *testing.T) {
	w, mark := threeBrokers(t, nil, nil)
	w.storageErr[2] = []TopicPartition{{"t", 1}}
	w.zk.mustCreate(ctrlLogDirEventPath("log_dir_event_0000000001"), []byte(`{"version":1,"broker":2,"event":1}`), Persistent)
	w.step(LogDirEvents{Events: []LogDirEvent{{Node: "log_dir_event_0000000001", Broker: 2}}})
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2 3] v=0")
	wantState(t, w, "t", 1, "leader=3 epoch=1 isr=[3 1] v=1")
	if ok, _, _ := w.zk.Exists(ctrlLogDirEventPath("log_dir_event_0000000001")); ok {
		t.Fatal("notification not deleted")
	}
	got, _ := w.since(mark)
	if !slices.Contains(got, "stop->2 t-1:E1") {
		t.Fatalf("no StopReplica to broker 2 for t-1:\n%s", strings.Join(got, "\n"))
	}
}
