package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets special timestamps.
const (
	listLatest       = -1
	listEarliest     = -2
	listMaxTimestamp = -3 // v7+
)

// handleListOffsets answers ListOffsets v0-7: latest (-1, the high
// watermark, which is also the last stable offset without transactions),
// earliest (-2), max timestamp (-3) and by timestamp. As in Kafka, a
// timestamp lookup that lands at or past the high watermark (a record whose
// append has not returned, e.g. while its flush.messages fsync runs) finds
// nothing: consumers are never pointed at offsets they cannot fetch yet. v0
// answers in the old array form with at most one offset.
func (s *Server) handleListOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Default()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch = 0
			p := s.topics.partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			off, ts, code := s.listOffset(p, rp.Timestamp, req.Version, req.IsolationLevel == 1)
			sp.ErrorCode = code
			if req.Version == 0 {
				sp.OldStyleOffsets = []int64{}
				if code == 0 && off >= 0 && rp.MaxNumOffsets > 0 {
					sp.OldStyleOffsets = append(sp.OldStyleOffsets, off)
				}
			} else {
				sp.Offset, sp.Timestamp = off, ts
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// listOffset resolves one timestamp query to (offset, timestamp).
// read_committed reads below the last stable offset, read_uncommitted
// below the high watermark.
func (s *Server) listOffset(p *partition, ts int64, version int16, readCommitted bool) (int64, int64, int16) {
	if p.offlineErr() != nil { // its log dir failed: KAFKA_STORAGE_ERROR
		return -1, -1, kerr.KafkaStorageError.Code
	}
	bound := p.log.HighWatermark
	if readCommitted {
		bound = p.log.LastStableOffset
	}
	return s.listOffsetBelow(p.log, bound, p.topic, p.index, ts, version)
}

// listOffsetBelow resolves a timestamp query on l, never at or past the
// high watermark highWatermark reports (the log's own on a single node,
// the replication one in cluster mode).
func (s *Server) listOffsetBelow(l PartitionLog, highWatermark func() int64, topic string, index int32, ts int64, version int16) (int64, int64, int16) {
	switch {
	case ts == listLatest:
		return highWatermark(), -1, 0
	case ts == listEarliest:
		return l.LogStartOffset(), -1, 0
	case ts == listMaxTimestamp && version >= 7:
		v := l.Snapshot()
		maxTs := int64(-1)
		for _, seg := range v.Segments {
			if seg.NextOffset() > v.Start && seg.MaxTimestamp() > maxTs {
				maxTs = seg.MaxTimestamp()
			}
		}
		if maxTs < 0 {
			return -1, -1, 0
		}
		r, ok, err := l.OffsetForTimestamp(maxTs)
		if err != nil {
			s.log.Error("max timestamp lookup", "topic", topic, "partition", index, "error", err)
			return -1, -1, kerr.KafkaStorageError.Code
		}
		if !ok || r.Offset >= highWatermark() {
			return -1, -1, 0
		}
		return r.Offset, r.Timestamp, 0
	case ts < 0:
		return -1, -1, kerr.InvalidRequest.Code
	}
	r, ok, err := l.OffsetForTimestamp(ts)
	if err != nil {
		s.log.Error("timestamp lookup", "topic", topic, "partition", index, "error", err)
		return -1, -1, kerr.KafkaStorageError.Code
	}
	if !ok || r.Offset >= highWatermark() {
		if version == 0 {
			return highWatermark(), -1, 0
		}
		return -1, -1, 0
	}
	return r.Offset, r.Timestamp, 0
}
