package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/replica"
	"github.com/stratalog/strata/segment"
)

// handleListOffsetsCluster answers ListOffsets v0-7 in cluster mode. A
// follower's (replica id >= 0) is served from the leader's log end and
// start (replica.Manager). A consumer's is answered by the leader only
// (NOT_LEADER_OR_FOLLOWER elsewhere) after KIP-320's check of
// current_leader_epoch (v4+), as on a single node but below the
// replication high watermark: latest is the high watermark, and lookups by
// time never point at or past it. v4+ carries the leader epoch of the
// offset found (the current epoch for latest).
func (s *Server) handleListOffsetsCluster(req *kmsg.ListOffsetsRequest) kmsg.Response {
	cl := s.cl
	if req.ReplicaID >= 0 {
		return cl.rm.HandleListOffsets(req)
	}
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Default()
	im := cl.images.load()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch = -1
			current := rp.CurrentLeaderEpoch
			if req.Version < 4 {
				current = -1
			}
			p := cl.rm.Partition(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if _, ok := im.partition(rt.Topic, rp.Partition); ok {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
			default:
				if err := p.CheckLeaderEpoch(current, true); err != nil {
					sp.ErrorCode = replica.ErrorCode(err)
					break
				}
				l := p.Log()
				bound := p.HighWatermark
				if req.IsolationLevel == 1 { // read_committed: the last stable offset
					bound = p.LastStableOffset
				}
				off, ts, code := s.listOffsetBelow(l, bound, rt.Topic, rp.Partition, rp.Timestamp, req.Version)
				sp.ErrorCode = code
				if code == 0 && off >= 0 {
					sp.LeaderEpoch = epochAt(p, off)
				}
				if req.Version == 0 {
					sp.OldStyleOffsets = []int64{}
					if code == 0 && off >= 0 && rp.MaxNumOffsets > 0 {
						sp.OldStyleOffsets = append(sp.OldStyleOffsets, off)
					}
				} else {
					sp.Offset, sp.Timestamp = off, ts
				}
			}
			if sp.ErrorCode != 0 {
				sp.Offset, sp.Timestamp = -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// epochAt is the leader epoch of the batch holding offset off: the epoch
// of the last leader-epoch entry starting at or before it (the current
// epoch at the log end).
func epochAt(p *replica.Partition, off int64) int32 {
	e := int32(-1)
	for _, en := range p.Epochs() {
		if en.StartOffset > off {
			break
		}
		e = en.Epoch
	}
	if e < 0 {
		return p.LeaderEpoch()
	}
	return e
}

// deleteRecordsCluster moves a partition's log start on its leader (Kafka's
// deleteRecordsOnLeader): -1 is the high watermark, past it is
// OFFSET_OUT_OF_RANGE; followers take the new start from their next fetch
// response. The log-start checkpoint is written at once. Unlike Kafka,
// the answer does not wait for the followers' log starts to follow.
func (cl *clusterNode) deleteRecords(topic string, part int32, off int64, sp *kmsg.DeleteRecordsResponseTopicPartition) int16 {
	if topic == OffsetsTopic {
		return kerr.InvalidTopicException.Code
	}
	p := cl.rm.Partition(topic, part)
	if p == nil {
		if _, ok := cl.images.load().partition(topic, part); ok {
			return kerr.NotLeaderForPartition.Code
		}
		return kerr.UnknownTopicOrPartition.Code
	}
	start, err := p.DeleteRecords(off)
	switch {
	case err == nil:
	case errors.Is(err, segment.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	default:
		code := replica.ErrorCode(err)
		if code == kerr.KafkaStorageError.Code {
			cl.log.Error("delete records", "topic", topic, "partition", part, "offset", off, "error", err)
		}
		return code
	}
	cl.s.topics.writeCheckpoints()
	sp.LowWatermark = start
	cl.log.Info("records deleted", "topic", topic, "partition", part, "log_start_offset", start)
	return 0
}
