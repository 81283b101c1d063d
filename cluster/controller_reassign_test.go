package cluster

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func reassignReq(topic string, p int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = p, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func reassignCode(t *testing.T, w *world, id uint64) int16 {
	t.Helper()
	r := lastReply(t, w, id).(*kmsg.AlterPartitionAssignmentsResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("reply %d: %+v", id, r)
	}
	return r.Topics[0].Partitions[0].ErrorCode
}

// listed is ListPartitionReassignments' answer as text.
func listed(t *testing.T, w *world, id uint64) string {
	t.Helper()
	w.step(ListReassignments{ID: id, Req: kmsg.NewPtrListPartitionReassignmentsRequest()})
	r := lastReply(t, w, id).(*kmsg.ListPartitionReassignmentsResponse)
	s := ""
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			s += fmt.Sprintf("%s-%d:%v+%v-%v ", rt.Topic, p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas)
		}
	}
	return s
}

// zkAssignment is /brokers/topics/T's partition p as text.
func zkAssignment(t *testing.T, w *world, topic string, p int32) string {
	t.Helper()
	data, _, err := w.zk.Get(ctrlTopicPath(topic))
	if err != nil {
		t.Fatal(err)
	}
	a, err := DecodeTopicAssignment(topic, data)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%v+%v-%v", a.Partitions[p], a.Adding[p], a.Removing[p])
}

// fourBrokers: brokers 1-4, controller 1, topic t with t-0 on {1,2,3}.
func fourBrokers(t *testing.T) (*world, int) {
	w := newWorld(t, 1, nil)
	w.register(1, 2, 3, 4)
	w.elect()
	w.createTopic("t", [][]int32{{1, 2, 3}}, nil)
	w.step(w.topicsEvent())
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2 3] v=0")
	_, mark := w.since(0)
	return w, mark
}

// TestReassignMove moves t-0 from {1,2,3} to {2,3,4}: the full set and
// adding/removing are written, the leader epoch bumped and LeaderAndIsr
// sent (is_new to 4); when the leader's AlterPartition puts 4 in the ISR,
// leadership leaves 1 for 2, the ISR drops 1, the assignment becomes
// {2,3,4} and 1 gets StopReplica (delete).
func TestReassignMove(t *testing.T) {
	w, mark := fourBrokers(t)
	w.step(AlterReassignments{ID: 1, Req: reassignReq("t", 0, []int32{2, 3, 4})})
	if code := reassignCode(t, w, 1); code != 0 {
		t.Fatalf("reassign: error %d", code)
	}
	if got := zkAssignment(t, w, "t", 0); got != "[2 3 4 1]+[4]-[1]" {
		t.Fatalf("assignment in progress: %s", got)
	}
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 2 3] v=1")
	got, mark := w.since(mark)
	wantLines(t, "requests", got,
		"lisr->1 t-0:L1/E1/[1 2 3]/v1",
		"um->1 brokers=1,2,3,4 t-0:L1/E1/[1 2 3]/v1",
		"lisr->2 t-0:L1/E1/[1 2 3]/v1",
		"um->2 brokers=1,2,3,4 t-0:L1/E1/[1 2 3]/v1",
		"lisr->3 t-0:L1/E1/[1 2 3]/v1",
		"um->3 brokers=1,2,3,4 t-0:L1/E1/[1 2 3]/v1",
		"lisr->4 t-0:L1/E1/[1 2 3]/v1/new",
		"um->4 brokers=1,2,3,4 t-0:L1/E1/[1 2 3]/v1",
	)
	lisr := w.sent[len(w.sent)-2].Msg.(*kmsg.LeaderAndISRRequest).TopicStates[0].PartitionStates[0]
	if !slices.Equal(lisr.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(lisr.AddingReplicas, []int32{4}) || !slices.Equal(lisr.RemovingReplicas, []int32{1}) {
		t.Fatalf("LeaderAndIsr replicas %v adding %v removing %v", lisr.Replicas, lisr.AddingReplicas, lisr.RemovingReplicas)
	}
	if got := listed(t, w, 2); got != "t-0:[2 3 4 1]+[4]-[1] " {
		t.Fatalf("listed: %q", got)
	}
	// 4 catches up but the ISR change shrinks first: still in progress.
	w.step(AlterPartition{ID: 3, Req: alterReq(w, 0, 1, w.c.brokers[1].Epoch, "t", 0, 1, 1, 1, 2)})
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 2] v=2")
	_, mark = w.since(mark)
	w.step(AlterPartition{ID: 4, Req: alterReq(w, 0, 1, w.c.brokers[1].Epoch, "t", 0, 1, 2, 1, 2, 3, 4)})
	wantState(t, w, "t", 0, "leader=2 epoch=2 isr=[2 3 4] v=4")
	if got := zkAssignment(t, w, "t", 0); got != "[2 3 4]+[]-[]" {
		t.Fatalf("assignment after: %s", got)
	}
	got, _ = w.since(mark)
	wantLines(t, "requests", got,
		"um->1 brokers=1,2,3,4 t-0:L2/E2/[2 3 4]/v4",
		"stop->1 t-0:E2/del",
		"lisr->2 t-0:L2/E2/[2 3 4]/v4",
		"um->2 brokers=1,2,3,4 t-0:L2/E2/[2 3 4]/v4",
		"lisr->3 t-0:L2/E2/[2 3 4]/v4",
		"um->3 brokers=1,2,3,4 t-0:L2/E2/[2 3 4]/v4",
		"lisr->4 t-0:L2/E2/[2 3 4]/v4",
		"um->4 brokers=1,2,3,4 t-0:L2/E2/[2 3 4]/v4",
	)
	if got := listed(t, w, 5); got != "" {
		t.Fatalf("listed after completion: %q", got)
	}
}

// TestReassignBadInput: each refusal has its code, and nothing is written.
func TestReassignBadInput(t *testing.T) {
	w, mark := fourBrokers(t)
	cases := []struct {
		topic    string
		p        int32
		replicas []int32
		code     int16
	}{
		{"nope", 0, []int32{1, 2, 3}, errUnknownTopicOrPartition},
		{"t", 1, []int32{1, 2, 3}, errUnknownTopicOrPartition},
		{"t", -1, []int32{1, 2, 3}, errUnknownTopicOrPartition},
		{"t", 0, []int32{}, errInvalidReplicaAssignment},
		{"t", 0, []int32{2, 3, 2}, errInvalidReplicaAssignment},
		{"t", 0, []int32{2, -3}, errInvalidReplicaAssignment},
		{"t", 0, []int32{2, 3, 9}, errInvalidReplicaAssignment},
		{"t", 0, nil, errNoReassignmentInProgress},
	}
	for i, tc := range cases {
		w.step(AlterReassignments{ID: uint64(i + 1), Req: reassignReq(tc.topic, tc.p, tc.replicas)})
		if code := reassignCode(t, w, uint64(i+1)); code != tc.code {
			t.Errorf("%s-%d %v: error %d, want %d", tc.topic, tc.p, tc.replicas, code, tc.code)
		}
	}
	if got := zkAssignment(t, w, "t", 0); got != "[1 2 3]+[]-[]" {
		t.Fatalf("assignment after refusals: %s", got)
	}
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2 3] v=0")
	if got, _ := w.since(mark); len(got) != 0 {
		t.Fatalf("requests after refusals: %v", got)
	}
	// An inactive controller answers NOT_CONTROLLER.
	idle := NewController(5, nil)
	idle.Step(AlterReassignments{ID: 9, Req: reassignReq("t", 0, []int32{1})})
	idle.Step(ListReassignments{ID: 10, Req: kmsg.NewPtrListPartitionReassignmentsRequest()})
	rd := idle.Ready()
	if len(rd.Replies) != 2 || rd.Replies[0].Msg.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode != errNotController ||
		rd.Replies[1].Msg.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode != errNotController {
		t.Fatalf("inactive controller: %+v", rd.Replies)
	}
}

// TestReassignNewBrokerDiesThenCancel: the adding broker dies half-way:
// the reassignment stays in progress (its ISR cannot complete); when it
// returns it is told the partition again; a cancel restores {1,2,3} and
// deletes its replica.
func TestReassignNewBrokerDiesThenCancel(t *testing.T) {
	w, _ := fourBrokers(t)
	w.step(AlterReassignments{ID: 1, Req: reassignReq("t", 0, []int32{2, 3, 4})})
	w.kill(4)
	w.step(w.brokersEvent())
	if got := listed(t, w, 2); got != "t-0:[2 3 4 1]+[4]-[1] " {
		t.Fatalf("listed with 4 dead: %q", got)
	}
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 2 3] v=1")
	w.register(4)
	_, mark := w.since(0)
	w.step(w.brokersEvent())
	got, mark := w.since(mark)
	if !slices.Contains(got, "lisr->4 t-0:L1/E1/[1 2 3]/v1") {
		t.Fatalf("returning broker 4 not told t-0: %v", got)
	}
	w.step(AlterReassignments{ID: 3, Req: reassignReq("t", 0, nil)})
	if code := reassignCode(t, w, 3); code != 0 {
		t.Fatalf("cancel: error %d", code)
	}
	// As in Kafka, the origin replicas keep their order within the full
	// set (target first): 2, 3, 1.
	if got := zkAssignment(t, w, "t", 0); got != "[2 3 1]+[]-[]" {
		t.Fatalf("assignment after cancel: %s", got)
	}
	wantState(t, w, "t", 0, "leader=1 epoch=2 isr=[1 2 3] v=2")
	got, _ = w.since(mark)
	if !slices.Contains(got, "stop->4 t-0:E2/del") {
		t.Fatalf("cancel does not delete 4's replica: %v", got)
	}
	if got := listed(t, w, 4); got != "" {
		t.Fatalf("listed after cancel: %q", got)
	}
}

// TestReassignControllerFailover: controller 1 starts a reassignment and
// is replaced; controller 2 reads it from /brokers/topics/t, lists it,
// and completes it on the leader's ISR expansion. A reassignment whose
// target joined the ISR while no controller ran completes at activation.
func TestReassignControllerFailover(t *testing.T) {
	w, _ := fourBrokers(t)
	w.step(AlterReassignments{ID: 1, Req: reassignReq("t", 0, []int32{2, 3, 4})})
	w2 := newWorld(t, 2, nil)
	w2.zk = w.zk
	w2.elect()
	if got := listed(t, w2, 2); got != "t-0:[2 3 4 1]+[4]-[1] " {
		t.Fatalf("new controller lists %q", got)
	}
	w2.step(AlterPartition{ID: 3, Req: alterReq(w2, 0, 1, w2.c.brokers[1].Epoch, "t", 0, 1, 1, 1, 2, 3, 4)})
	wantState(t, w2, "t", 0, "leader=2 epoch=2 isr=[2 3 4] v=3")
	if got := zkAssignment(t, w2, "t", 0); got != "[2 3 4]+[]-[]" {
		t.Fatalf("assignment after: %s", got)
	}

	// Target in the ISR before the activation: completed at once.
	w3 := newWorld(t, 3, nil)
	w3.zk = w.zk
	w3.createTopic("u", [][]int32{{1}}, nil)
	w3.elect()
	w3.step(AlterReassignments{ID: 4, Req: reassignReq("u", 0, []int32{1, 2})})
	w3.step(AlterPartition{ID: 5, Req: alterReq(w3, 0, 1, w3.c.brokers[1].Epoch, "u", 0, 1, 1, 1)}) // no change
	if got := zkAssignment(t, w3, "u", 0); got != "[1 2]+[2]-[]" {
		t.Fatalf("u in progress: %s", got)
	}
	// The ISR grows behind the controllers' back, then 4 takes over.
	w3.zk.mustSet(ctrlStatePath("u", 0), []byte(`{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":1,"isr":[1,2]}`))
	w4 := newWorld(t, 4, nil)
	w4.zk = w.zk
	w4.elect()
	if got := zkAssignment(t, w4, "u", 0); got != "[1 2]+[]-[]" {
		t.Fatalf("u after activation: %s", got)
	}
	if got := listed(t, w4, 6); got != "" {
		t.Fatalf("listed after activation: %q", got)
	}
}

// reassignZnodeEvent reads /admin/reassign_partitions as the driver does.
func (w *world) reassignZnodeEvent() ReassignZnode {
	data, _, err := w.zk.Get(ReassignPartitionsPath)
	if err != nil {
		return ReassignZnode{}
	}
	ps, err := DecodeReassignPartitions(data)
	return ReassignZnode{Exists: true, Partitions: ps, Err: err}
}

// TestReassignZnode: /admin/reassign_partitions (Kafka's JSON) starts the
// reassignments it lists; a refused entry (unknown broker) is taken out of
// the znode at once; a controller taking over remembers the one in
// progress without starting it again; the znode is deleted when the last
// one completes. Malformed JSON deletes the znode and starts nothing.
func TestReassignZnode(t *testing.T) {
	w, _ := fourBrokers(t)
	w.createTopic("u", [][]int32{{1, 2}}, nil)
	w.step(w.topicsEvent())
	w.zk.mustCreate(ReassignPartitionsPath, EncodeReassignPartitions([]PartitionReplicas{
		{Topic: "t", Partition: 0, Replicas: []int32{2, 3, 4}},
		{Topic: "u", Partition: 0, Replicas: []int32{1, 9}},
	}), Persistent)
	w.step(w.reassignZnodeEvent())
	if got := zkAssignment(t, w, "t", 0); got != "[2 3 4 1]+[4]-[1]" {
		t.Fatalf("t-0 in progress: %s", got)
	}
	if got := zkAssignment(t, w, "u", 0); got != "[1 2]+[]-[]" {
		t.Fatalf("u-0 refused, yet: %s", got)
	}
	ev := w.reassignZnodeEvent()
	if !ev.Exists || len(ev.Partitions) != 1 || ev.Partitions[0].Topic != "t" {
		t.Fatalf("znode after the refusal: %+v", ev)
	}
	w.step(ev) // the watch fires for the controller's own write: nothing new
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 2 3] v=1")

	w2 := newWorld(t, 2, nil)
	w2.zk = w.zk
	w2.elect()
	wantState(t, w2, "t", 0, "leader=1 epoch=1 isr=[1 2 3] v=1") // remembered, not restarted
	w2.step(AlterPartition{ID: 1, Req: alterReq(w2, 0, 1, w2.c.brokers[1].Epoch, "t", 0, 1, 1, 1, 2, 3, 4)})
	if got := zkAssignment(t, w2, "t", 0); got != "[2 3 4]+[]-[]" {
		t.Fatalf("t-0 after: %s", got)
	}
	if ok, _, _ := w2.zk.Exists(ReassignPartitionsPath); ok {
		t.Fatal("znode left after the last reassignment completed")
	}

	w2.zk.mustCreate(ReassignPartitionsPath, []byte(`{"version":1,"partitions":[{"topic":"u"`), Persistent)
	w2.step(w2.reassignZnodeEvent())
	if ok, _, _ := w2.zk.Exists(ReassignPartitionsPath); ok {
		t.Fatal("malformed znode not deleted")
	}
	if got := zkAssignment(t, w2, "u", 0); got != "[1 2]+[]-[]" {
		t.Fatalf("u-0 after malformed JSON: %s", got)
	}
}
