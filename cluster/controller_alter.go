package cluster

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the controller answers with.
const (
	errUnknownTopicOrPartition    int16 = 3
	errBrokerNotAvailable         int16 = 8
	errInvalidTopic               int16 = 17
	errNotController              int16 = 41
	errInvalidRequest             int16 = 42
	errOperationNotAttempted      int16 = 55
	errKafkaStorage               int16 = 56
	errFencedLeaderEpoch          int16 = 74
	errStaleBrokerEpoch           int16 = 77
	errPreferredLeaderUnavailable int16 = 80
	errEligibleLeadersUnavailable int16 = 83
	errElectionNotNeeded          int16 = 84
	errInvalidUpdateVersion       int16 = 95
	errUnknownTopicID             int16 = 100
	errIneligibleReplica          int16 = 107
)

// onAlterPartition handles a leader's ISR change (KIP-497; Kafka 3.x's
// processAlterPartition). The request's broker must be live with that
// broker epoch (else STALE_BROKER_EPOCH for the whole request). Per
// partition: a leader or partition epoch above the controller's means the
// sender saw a newer controller (NOT_CONTROLLER); an older leader epoch is
// FENCED_LEADER_EPOCH; a sender that is not the leader is INVALID_REQUEST;
// an ISR equal to the current one is answered with the current state
// (idempotent retries); an older partition epoch is INVALID_UPDATE_VERSION;
// an ISR that is empty, lacks the leader, repeats a broker or names one
// outside the assignment is INVALID_REQUEST; one naming a broker that is
// not online (dead, shutting down, log dir failed, or of another broker
// epoch in v3) is INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2).
// Otherwise the state is written (leader epoch kept, partition epoch + 1),
// every live broker gets UpdateMetadata, and the answer, held until the
// write is acknowledged, carries the new state.
func (c *Controller) onAlterPartition(e AlterPartition) {
	req := e.Req
	version := req.Version
	notController := func() kmsg.Response {
		r := kmsg.NewPtrAlterPartitionResponse()
		r.Version = version
		r.ErrorCode = errNotController
		return r
	}
	if !c.active {
		c.outReplies = append(c.outReplies, Reply{ID: e.ID, Msg: notController()})
		return
	}
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Version = version
	if b := c.brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = errStaleBrokerEpoch
	} else {
		for i := range req.Topics {
			rt := &req.Topics[i]
			var t *ctopic
			if version >= 2 {
				t = c.topicByID(rt.TopicID)
			} else {
				t = c.topics[rt.Topic]
			}
			ot := kmsg.NewAlterPartitionResponseTopic()
			ot.Topic, ot.TopidID = rt.Topic, rt.TopicID
			for j := range rt.Partitions {
				ot.Partitions = append(ot.Partitions, c.alterOne(req, t, &rt.Partitions[j]))
			}
			resp.Topics = append(resp.Topics, ot)
		}
	}
	c.hold(heldOut{reply: &Reply{ID: e.ID, Msg: resp}, notController: notController})
}

func (c *Controller) topicByID(id [16]byte) *ctopic {
	if id == ([16]byte{}) {
		return nil
	}
	for _, name := range c.names {
		if t := c.topics[name]; t.id == id {
			return t
		}
	}
	return nil
}

func (c *Controller) alterOne(req *kmsg.AlterPartitionRequest, t *ctopic, rp *kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
	out := kmsg.NewAlterPartitionResponseTopicPartition()
	out.Partition = rp.Partition
	if t == nil {
		out.ErrorCode = errUnknownTopicOrPartition
		if req.Version >= 2 {
			out.ErrorCode = errUnknownTopicID
		}
		return out
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(t.parts) || !t.parts[rp.Partition].hasState {
		out.ErrorCode = errUnknownTopicOrPartition
		return out
	}
	part := &t.parts[rp.Partition]
	tp := TopicPartition{t.name, rp.Partition}
	cur := &part.st
	isr := rp.NewISR
	if req.Version >= 3 {
		isr = make([]int32, 0, len(rp.NewEpochISR))
		for _, m := range rp.NewEpochISR {
			isr = append(isr, m.BrokerID)
		}
	}
	fill := func(st *PartitionState) {
		out.LeaderID, out.LeaderEpoch, out.ISR, out.PartitionEpoch = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR), st.Version
	}
	switch {
	case rp.LeaderEpoch > cur.LeaderEpoch || rp.PartitionEpoch > cur.Version:
		out.ErrorCode = errNotController
	case rp.LeaderEpoch < cur.LeaderEpoch:
		out.ErrorCode = errFencedLeaderEpoch
	case req.BrokerID != cur.Leader:
		out.ErrorCode = errInvalidRequest
	case sameMembers(isr, cur.ISR):
		fill(cur)
	case rp.PartitionEpoch < cur.Version:
		out.ErrorCode = errInvalidUpdateVersion
	case !validISR(isr, cur.Leader, part.replicas):
		out.ErrorCode = errInvalidRequest
	case !c.eligibleISR(req, rp, isr, tp):
		out.ErrorCode = errOperationNotAttempted
		if req.Version >= 2 {
			out.ErrorCode = errIneligibleReplica
		}
	default:
		st := cur.clone()
		st.ISR = slices.Clone(isr)
		c.writeState(t, rp.Partition, st)
		c.addUpdateMetadata(tp)
		fill(&part.st)
		if part.reassigning() {
			c.reassignProgress(t, rp.Partition)
		}
	}
	return out
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func validISR(isr []int32, leader int32, replicas []int32) bool {
	if len(isr) == 0 || !slices.Contains(isr, leader) {
		return false
	}
	for i, r := range isr {
		if slices.Contains(isr[:i], r) || !slices.Contains(replicas, r) {
			return false
		}
	}
	return true
}

func (c *Controller) eligibleISR(req *kmsg.AlterPartitionRequest, rp *kmsg.AlterPartitionRequestTopicPartition, isr []int32, tp TopicPartition) bool {
	for i, r := range isr {
		if !c.online(r, tp) {
			return false
		}
		if req.Version >= 3 {
			if e := rp.NewEpochISR[i].BrokerEpoch; e != -1 && e != c.brokers[r].Epoch {
				return false
			}
		}
	}
	return true
}
