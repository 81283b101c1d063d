package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleProduceExternal refuses client produce to the internal offsets topic
// with INVALID_TOPIC_EXCEPTION, as Kafka does, and hands the rest of the
// request to handleProduce.
func (s *Server) handleProduceExternal(c *conn, r *kmsg.ProduceRequest) kmsg.Response {
	internal := -1
	for i := range r.Topics {
		if r.Topics[i].Topic == OffsetsTopic {
			internal = i
			break
		}
	}
	if internal < 0 {
		return s.handleProduce(c, r)
	}
	refused := r.Topics[internal]
	r.Topics = append(r.Topics[:internal:internal], r.Topics[internal+1:]...)
	resp := s.handleProduce(c, r).(*kmsg.ProduceResponse)
	st := kmsg.NewProduceResponseTopic()
	st.Topic = refused.Topic
	for _, rp := range refused.Partitions {
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition, sp.ErrorCode = rp.Partition, kerr.InvalidTopicException.Code
		sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
		st.Partitions = append(st.Partitions, sp)
	}
	resp.Topics = append(resp.Topics, st)
	c.log.Warn("produce to the internal topic refused", "topic", OffsetsTopic)
	return resp
}
