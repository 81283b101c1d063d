package server

import (
	"errors"

	"github.com/stratalog/strata/segment"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startSetter is implemented by logs whose start offset can be advanced
// (*segment.Log).
type startSetter interface {
	SetLogStartOffset(off int64) error
}

// handleDeleteRecords answers DeleteRecords v0-2: each partition's log start
// offset advances to the given offset (-1: the high watermark); segments
// wholly below it are deleted and the log-start-offset checkpoint is written
// at once so the new start survives a crash. The low watermark returned is
// the log start offset after the call (an offset below it changes nothing).
// Records of __consumer_offsets cannot be deleted (INVALID_TOPIC_EXCEPTION,
// as Kafka).
func (s *Server) handleDeleteRecords(req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.Default()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			sp.ErrorCode = s.deleteRecords(rt.Topic, rp.Partition, rp.Offset, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) deleteRecords(topic string, part int32, off int64, sp *kmsg.DeleteRecordsResponseTopicPartition) int16 {
	if s.cl != nil {
		return s.cl.deleteRecords(topic, part, off, sp)
	}
	p := s.topics.partition(topic, part)
	if p == nil {
		return kerr.UnknownTopicOrPartition.Code
	}
	if topic == OffsetsTopic {
		return kerr.InvalidTopicException.Code // as Kafka: no deleting records of an internal topic
	}
	ss, ok := p.log.(startSetter)
	if !ok {
		return kerr.UnknownServerError.Code
	}
	hw := p.log.HighWatermark()
	if off == -1 {
		off = hw
	}
	if off < 0 || off > hw {
		return kerr.OffsetOutOfRange.Code
	}
	err := ss.SetLogStartOffset(off)
	switch {
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, segment.ErrClosed):
		return kerr.UnknownTopicOrPartition.Code // deleted meanwhile
	case err != nil:
		s.log.Error("delete records", "topic", topic, "partition", part, "offset", off, "error", err)
		return kerr.KafkaStorageError.Code
	}
	if dd := p.dataDir(); dd != nil {
		if err := dd.WriteCheckpoints(); err != nil {
			s.log.Warn("writing checkpoints after delete records", "error", err)
		}
	}
	sp.LowWatermark = p.log.LogStartOffset()
	s.log.Info("records deleted", "topic", topic, "partition", part, "log_start_offset", sp.LowWatermark)
	return 0
}
