package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/producer"
	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// handleDescribeProducers answers DescribeProducers v0: the producers a
// partition this broker leads keeps state for (Kafka's
// ProducerStateManager entries): id, epoch, last sequence and timestamp,
// coordinator epoch, and the first offset of the transaction each has
// open (-1: none). NOT_LEADER_OR_FOLLOWER where this broker does not lead,
// UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist.
func (s *Server) handleDescribeProducers(r *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			l, code := s.leaderLog(t.Topic, p)
			rp.ErrorCode = code
			if l != nil {
				l.WithProducerState(func(st *producer.State) {
					for _, e := range st.Entries() {
						ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
						ap.ProducerID, ap.ProducerEpoch = e.ID, int32(e.Epoch)
						ap.LastSequence, ap.LastTimestamp = e.LastSeq(), e.LastTimestamp
						ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.CoordinatorEpoch, e.TxnFirstOffset
						rp.ActiveProducers = append(rp.ActiveProducers, ap)
					}
				})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// leaderLog is the log of a partition this broker leads, or the error code
// to answer.
func (s *Server) leaderLog(topic string, p int32) (*segment.Log, int16) {
	if s.cl != nil {
		if !s.partitionKnown(topic, p) {
			return nil, kerr.UnknownTopicOrPartition.Code
		}
		rp := s.cl.rm.Partition(topic, p)
		if rp == nil || rp.Role() != replica.RoleLeader {
			return nil, kerr.NotLeaderForPartition.Code
		}
		return rp.Log(), 0
	}
	part := s.topics.partition(topic, p)
	if part == nil {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	l, ok := segmentLogOf(part.log)
	if !ok {
		return nil, kerr.UnknownServerError.Code
	}
	return l, 0
}
