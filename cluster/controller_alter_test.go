package cluster

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterReq(w *world, version int16, broker int32, epoch int64, topic string, p, leaderEpoch, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = version, broker, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = topic
	if t := w.c.topics[topic]; t != nil {
		rt.TopicID = t.id
	}
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p, leaderEpoch, partitionEpoch
	if version >= 3 {
		for _, b := range isr {
			m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			m.BrokerID = b
			if w.c.brokers[b] != nil {
				m.BrokerEpoch = w.c.brokers[b].Epoch
			}
			rp.NewEpochISR = append(rp.NewEpochISR, m)
		}
	} else {
		rp.NewISR = isr
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestAlterPartition checks each of the controller's answers to a leader's
// ISR change, from the state t-0 leader=1 epoch=0 isr=[1 2 3] v=0.
func TestAlterPartition(t *testing.T) {
	cases := []struct {
		name      string
		version   int16
		broker    int32
		epochDiff int64 // added to the broker's epoch
		topic     string
		leaderEp  int32
		partEp    int32
		isr       []int32
		top       int16 // top-level error
		code      int16 // partition error
		after     string
	}{
		{"shrink", 0, 1, 0, "t", 0, 0, []int32{1, 2}, 0, 0, "leader=1 epoch=0 isr=[1 2] v=1"},
		{"shrink v2 by topic id", 2, 1, 0, "t", 0, 0, []int32{1, 3}, 0, 0, "leader=1 epoch=0 isr=[1 3] v=1"},
		{"shrink v3 with broker epochs", 3, 1, 0, "t", 0, 0, []int32{1}, 0, 0, "leader=1 epoch=0 isr=[1] v=1"},
		{"same ISR, stale partition epoch: idempotent", 0, 1, 0, "t", 0, 0, []int32{3, 2, 1}, 0, 0, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"stale broker epoch", 0, 1, -1, "t", 0, 0, []int32{1, 2}, errStaleBrokerEpoch, 0, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"unknown broker", 0, 9, 0, "t", 0, 0, []int32{1, 2}, errStaleBrokerEpoch, 0, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"newer leader epoch: not the controller it knows", 0, 1, 0, "t", 1, 0, []int32{1, 2}, 0, errNotController, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"newer partition epoch", 0, 1, 0, "t", 0, 1, []int32{1, 2}, 0, errNotController, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"not the leader", 0, 2, 0, "t", 0, 0, []int32{2, 3}, 0, errInvalidRequest, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"ISR without the leader", 0, 1, 0, "t", 0, 0, []int32{2, 3}, 0, errInvalidRequest, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"ISR with a duplicate", 0, 1, 0, "t", 0, 0, []int32{1, 1}, 0, errInvalidRequest, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"ISR outside the assignment", 0, 1, 0, "t", 0, 0, []int32{1, 4}, 0, errInvalidRequest, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"unknown topic", 0, 1, 0, "nope", 0, 0, []int32{1}, 0, errUnknownTopicOrPartition, "leader=1 epoch=0 isr=[1 2 3] v=0"},
		{"unknown topic id", 2, 1, 0, "nope", 0, 0, []int32{1}, 0, errUnknownTopicID, "leader=1 epoch=0 isr=[1 2 3] v=0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := threeBrokers(t, nil, nil)
			epoch := int64(0)
			if b := w.c.brokers[tc.broker]; b != nil {
				epoch = b.Epoch
			}
			w.step(AlterPartition{ID: 7, Req: alterReq(w, tc.version, tc.broker, epoch+tc.epochDiff, tc.topic, 0, tc.leaderEp, tc.partEp, tc.isr...)})
			resp := lastReply(t, w, 7).(*kmsg.AlterPartitionResponse)
			if resp.Version != tc.version || resp.ErrorCode != tc.top {
				t.Fatalf("response v%d error %d, want v%d error %d", resp.Version, resp.ErrorCode, tc.version, tc.top)
			}
			wantState(t, w, "t", 0, tc.after)
			if tc.top != 0 {
				return
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tc.code {
				t.Fatalf("partition error %d, want %d", p.ErrorCode, tc.code)
			}
			if tc.code == 0 {
				st := w.c.topics["t"].parts[0].st
				if p.LeaderID != st.Leader || p.LeaderEpoch != st.LeaderEpoch || !slices.Equal(p.ISR, st.ISR) || p.PartitionEpoch != st.Version {
					t.Fatalf("answer %+v does not carry the state %s", p, fmtState(&st))
				}
			}
		})
	}
}

// TestAlterPartitionIneligible: an ISR naming a dead or shutting-down
// broker is INELIGIBLE_REPLICA from v2, OPERATION_NOT_ATTEMPTED before;
// a v3 member with another broker epoch is ineligible too.
func TestAlterPartitionIneligible(t *testing.T) {
	w, _ := threeBrokers(t, nil, nil)
	e1 := w.c.brokers[1].Epoch
	w.step(AlterPartition{ID: 1, Req: alterReq(w, 0, 1, e1, "t", 0, 0, 0, 1, 2)})
	w.kill(3)
	w.step(w.brokersEvent()) // t-0 untouched (3 left its ISR); t-1 shrinks with epoch 1
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2] v=1")
	wantState(t, w, "t", 1, "leader=2 epoch=1 isr=[2 1] v=1")
	for _, v := range []int16{1, 2} {
		w.step(AlterPartition{ID: 2, Req: alterReq(w, v, 1, e1, "t", 0, 0, 1, 1, 2, 3)})
		code := lastReply(t, w, 2).(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0].ErrorCode
		want := errOperationNotAttempted
		if v >= 2 {
			want = errIneligibleReplica
		}
		if code != want {
			t.Fatalf("v%d: error %d, want %d", v, code, want)
		}
	}
	req := alterReq(w, 3, 1, e1, "t", 0, 0, 1, 1)
	req.Topics[0].Partitions[0].NewEpochISR[0].BrokerEpoch--
	w.step(AlterPartition{ID: 3, Req: req})
	if code := lastReply(t, w, 3).(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0].ErrorCode; code != errIneligibleReplica {
		t.Fatalf("v3 stale member epoch: error %d", code)
	}
	// An older leader epoch is fenced.
	w.step(AlterPartition{ID: 4, Req: alterReq(w, 0, 2, w.c.brokers[2].Epoch, "t", 1, 0, 1, 2)})
	if code := lastReply(t, w, 4).(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0].ErrorCode; code != errFencedLeaderEpoch {
		t.Fatalf("old leader epoch: error %d", code)
	}
	// An older partition epoch with a different ISR: INVALID_UPDATE_VERSION.
	w.step(AlterPartition{ID: 5, Req: alterReq(w, 0, 1, e1, "t", 0, 0, 0, 1)})
	if code := lastReply(t, w, 5).(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0].ErrorCode; code != errInvalidUpdateVersion {
		t.Fatalf("old partition epoch: error %d", code)
	}
	wantState(t, w, "t", 0, "leader=1 epoch=0 isr=[1 2] v=1")
	wantState(t, w, "t", 1, "leader=2 epoch=1 isr=[2 1] v=1")
}

func lastReply(t testing.TB, w *world, id uint64) kmsg.Response {
	t.Helper()
	for i := len(w.replies) - 1; i >= 0; i-- {
		if w.replies[i].ID == id {
			return w.replies[i].Msg
		}
	}
	t.Fatalf("no reply %d", id)
	return nil
}
