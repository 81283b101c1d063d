package cluster

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// manyPartitions: brokers 1-3, controller 1, a topic of n partitions on
// [1 2 3] rotated.
func manyPartitions(t testing.TB, n int, opts *ControllerOptions) *world {
	w := newWorld(t, 1, opts)
	w.register(1, 2, 3)
	w.elect()
	var a [][]int32
	for i := 0; i < n; i++ {
		a = append(a, []int32{int32(1 + i%3), int32(1 + (i+1)%3), int32(1 + (i+2)%3)})
	}
	w.createTopic("big", a, nil)
	w.step(w.topicsEvent())
	return w
}

// TestWriteBatches: a failover of many partitions is written in several
// multis, each under MaxWriteBatchBytes and fenced by the epoch check, and
// no request is released before the last one is acknowledged.
func TestWriteBatches(t *testing.T) {
	const max = 4 << 10
	w := manyPartitions(t, 300, &ControllerOptions{DeleteTopicEnable: true, MaxWriteBatchBytes: max})
	w.kill(1)
	w.c.Step(w.brokersEvent())
	rd := w.c.Ready()
	if len(rd.Writes) < 3 || len(rd.Requests) != 0 {
		t.Fatalf("%d write batches and %d requests before any ack", len(rd.Writes), len(rd.Requests))
	}
	_, ver := w.c.Epoch()
	for i, b := range rd.Writes {
		size := 0
		for _, op := range b.Ops {
			size += len(op.Path) + len(op.Data) + opOverhead
		}
		if b.Ops[0].Kind != OpCheck || b.Ops[0].Version != ver || size > max+opOverhead+len(ctrlControllerEpochPath) {
			t.Fatalf("batch %d: first op %+v, %d bytes", i, b.Ops[0], size)
		}
		res, err := w.zk.Multi(b.Ops...)
		w.c.Step(WriteResult{Batch: b.ID, Results: res, Err: err})
		got := w.c.Ready()
		if last := i == len(rd.Writes)-1; last != (len(got.Requests) > 0) {
			t.Fatalf("after ack %d of %d: %d requests released", i+1, len(rd.Writes), len(got.Requests))
		}
	}
}

// TestWriteFenced: a batch whose epoch check fails (another controller
// bumped /controller_epoch) makes the controller resign: nothing held is
// released, and a held reply becomes NOT_CONTROLLER.
func TestWriteFenced(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.c.Step(AlterPartition{ID: 9, Req: alterReq(w, 0, 1, w.c.brokers[1].Epoch, "t", 0, 0, 0, 1, 2)})
	rd := w.c.Ready()
	w.zk.mustSet(ctrlControllerEpochPath, []byte("2")) // another controller
	res, err := w.zk.Multi(rd.Writes[0].Ops...)
	w.c.Step(WriteResult{Batch: rd.Writes[0].ID, Results: res, Err: err})
	rd = w.c.Ready()
	if !rd.Resigned || rd.Reload || w.c.Active() || len(rd.Requests) != 0 || len(rd.Replies) != 1 {
		t.Fatalf("after a fenced write: resigned %v reload %v active %v, %d requests, %d replies", rd.Resigned, rd.Reload, w.c.Active(), len(rd.Requests), len(rd.Replies))
	}
	if r := rd.Replies[0].Msg.(*kmsg.AlterPartitionResponse); r.ErrorCode != errNotController {
		t.Fatalf("held reply answered %d", r.ErrorCode)
	}
	// Inactive: requests are answered NOT_CONTROLLER at once.
	w.c.Step(ControlledShutdown{ID: 10, Req: shutdownReq(3, 2, -1)})
	if rd = w.c.Ready(); len(rd.Replies) != 1 || rd.Replies[0].Msg.(*kmsg.ControlledShutdownResponse).ErrorCode != errNotController {
		t.Fatalf("inactive controller answered %+v", rd.Replies)
	}
}

// TestWriteUnknownOutcome: a connection loss (applied or not) makes the
// controller ask for a reload; activated again from ZooKeeper, it agrees
// with what is there, whichever way the write went.
func TestWriteUnknownOutcome(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprint("applied=", applied), func(t *testing.T) {
			w, _ := threeBrokers(t, nil, nil)
			w.zk.failNext = func([]Op) (bool, error) { return applied, ErrConnectionLoss }
			w.kill(2)
			w.step(w.brokersEvent())
			if w.reloads != 1 || !w.c.Active() {
				t.Fatalf("reloads %d active %v", w.reloads, w.c.Active())
			}
			// Whether or not the first write happened, t-1 is led by 3 now.
			wantState(t, w, "t", 1, "leader=3 epoch=1 isr=[3 1] v=1")
		})
	}
}

// TestWriteUnexpectedVersion: a set that succeeded but left another
// version than predicted (someone else wrote the znode) forces a reload.
func TestWriteUnexpectedVersion(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.kill(2)
	w.c.Step(w.brokersEvent())
	rd := w.c.Ready()
	res, err := w.zk.Multi(rd.Writes[0].Ops...)
	for i := range res {
		if res[i].Stat.Version > 0 {
			res[i].Stat.Version++
		}
	}
	w.c.Step(WriteResult{Batch: rd.Writes[0].ID, Results: res, Err: err})
	if rd = w.c.Ready(); !rd.Reload || len(rd.Requests) != 0 {
		t.Fatalf("reload %v, %d requests", rd.Reload, len(rd.Requests))
	}
	// A late or repeated result is ignored once reloaded.
	w.activate()
	w.c.Step(WriteResult{Batch: 1, Err: ErrBadVersion})
	if !w.c.Active() {
		t.Fatal("a stale write result deposed the controller")
	}
}

// TestFailover: a new controller takes over a cluster where broker 2 died
// while no controller ran: t-1 (led by 2) is elected, 2 leaves t-0's ISR,
// and every live broker gets the full metadata and its replicas' states.
func TestFailover(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.c.Step(Resign{Reason: "test"})
	w.kill(2)
	w.c = NewController(1, nil)
	mark := len(w.sent)
	w.elect()
	wantState(t, w, "t", 0, "leader=1 epoch=1 isr=[1 3] v=1")
	wantState(t, w, "t", 1, "leader=3 epoch=1 isr=[3 1] v=1")
	got, _ := w.since(mark)
	wantLines(t, "requests", got,
		"lisr->1 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->1 brokers=1,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
		"lisr->3 t-0:L1/E1/[1 3]/v1 t-1:L3/E1/[3 1]/v1",
		"um->3 brokers=1,3 t-0:L1/E1/[1 3]/v1/off[2] t-1:L3/E1/[3 1]/v1/off[2]",
	)
	if e, _ := w.c.Epoch(); e != 2 {
		t.Fatalf("controller epoch %d, want 2", e)
	}
	for _, r := range w.sent[mark:] {
		if m, ok := r.Msg.(*kmsg.LeaderAndISRRequest); ok && m.ControllerEpoch != 2 {
			t.Fatalf("LeaderAndIsr with controller epoch %d", m.ControllerEpoch)
		}
	}
}

// TestTopicIDBackfill: a topic written without topic_id gets one from the
// controller, written into its assignment znode.
func TestTopicIDBackfill(t *testing.T) {
	w := newWorld(t, 1, nil)
	w.register(1)
	w.elect()
	w.zk.mustCreate(ctrlTopicPath("old"), []byte(`{"version":1,"partitions":{"0":[1]}}`), Persistent)
	w.step(w.topicsEvent())
	data, _, _ := w.zk.Get(ctrlTopicPath("old"))
	id, replicas, err := decodeAssignment("old", data)
	if err != nil || id == ([16]byte{}) || id != w.c.topics["old"].id || len(replicas) != 1 {
		t.Fatalf("assignment after backfill %s (%v)", data, err)
	}
	wantState(t, w, "old", 0, "leader=1 epoch=0 isr=[1] v=0")
}

// TestRequestVersionsEncode: the requests round-trip through kmsg at the
// versions the controller sends, and the responses it reads decode.
func TestRequestVersionsEncode(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	w.zk.mustCreate(ctrlDeleteTopicPath("t"), nil, Persistent)
	w.step(w.deletionsEvent())
	kinds := map[int16]bool{}
	for _, r := range w.sent {
		b := r.Msg.AppendTo(nil)
		var back kmsg.Request
		switch r.Msg.(type) {
		case *kmsg.LeaderAndISRRequest:
			back = &kmsg.LeaderAndISRRequest{Version: LeaderAndISRVersion}
		case *kmsg.UpdateMetadataRequest:
			back = &kmsg.UpdateMetadataRequest{Version: UpdateMetadataVersion}
		case *kmsg.StopReplicaRequest:
			back = &kmsg.StopReplicaRequest{Version: StopReplicaVersion}
		}
		if err := back.ReadFrom(b); err != nil {
			t.Fatalf("%T v%d does not decode: %v", r.Msg, r.Msg.GetVersion(), err)
		}
		if again := back.AppendTo(nil); string(again) != string(b) {
			t.Fatalf("%T v%d does not round-trip", r.Msg, r.Msg.GetVersion())
		}
		kinds[r.Msg.Key()] = true
	}
	if !kinds[4] || !kinds[5] || !kinds[6] {
		t.Fatalf("kinds sent: %v", kinds)
	}
}
