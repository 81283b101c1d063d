package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicaID is the fetching broker of a Fetch (-1 for consumers).
func replicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// HandleFetch answers a follower's Fetch (replica id >= 0, topics by name:
// v4-v12) at once, copying the records into the response: each partition
// through Partition.FetchFromFollower, within the partition's and the
// response's max bytes (the first partition with records always gets one
// whole batch). It serves no consumer and does not wait: the broker's fetch
// path long-polls (re-serving when the leader's log moves or max wait
// passes) and sends Partition.FetchFromFollower's regions with sendfile
// instead; the simulation uses this.
func (m *Manager) HandleFetch(req *kmsg.FetchRequest, now int64) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	id := replicaID(req)
	budget := int64(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 1<<31 - 1
	}
	var buf []byte
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark = -1
			p := m.Partition(rt.Topic, rp.Partition)
			if p == nil || id < 0 {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if id < 0 {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			lastEpoch := rp.LastFetchedEpoch
			if req.Version < 12 {
				lastEpoch = -1
			}
			res := p.FetchFromFollower(FollowerFetch{
				ReplicaID:          id,
				FetchOffset:        rp.FetchOffset,
				LogStartOffset:     rp.LogStartOffset,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
				LastFetchedEpoch:   lastEpoch,
				MaxBytes:           min(int64(rp.PartitionMaxBytes), budget),
			}, now)
			sp.ErrorCode = ErrorCode(res.Err)
			sp.HighWatermark, sp.LogStartOffset = res.HighWatermark, res.LogStartOffset
			sp.LastStableOffset = res.HighWatermark
			if res.DivergingEndOffset >= 0 {
				sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
			}
			if res.Err == nil && res.Records.Len > 0 {
				var err error
				buf, err = res.Records.ReadInto(buf[:0])
				if err != nil {
					sp.ErrorCode = kerr.KafkaStorageError.Code
				} else {
					sp.RecordBatches = append([]byte(nil), buf...)
					budget -= int64(len(buf))
				}
			}
			res.Records.Release()
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// HandleListOffsets answers a follower's ListOffsets (replica id >= 0):
// timestamp -1 gives the leader's log end offset, -2 its log start offset,
// after KIP-320's epoch check.
func (m *Manager) HandleListOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			p := m.Partition(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case req.ReplicaID < 0:
				sp.ErrorCode = ErrorCode(fmt.Errorf("%w: consumers list offsets through the broker", ErrInvalidRequest))
			default:
				off, err := p.OffsetForReplica(rp.CurrentLeaderEpoch, rp.Timestamp)
				sp.ErrorCode = ErrorCode(err)
				if err == nil {
					sp.Offset, sp.LeaderEpoch = off, p.LeaderEpoch()
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// HandleOffsetForLeaderEpoch answers OffsetForLeaderEpoch (key 23) with
// Partition.LastOffsetForLeaderEpoch, from the leader only (as Kafka 2.8;
// the debug replica id -2 may ask a follower).
func (m *Manager) HandleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = UndefinedEpoch, UndefinedEpochOffset
			p := m.Partition(rt.Topic, rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				current := rp.CurrentLeaderEpoch
				if req.Version < 2 {
					current = -1
				}
				requireLeader := req.Version < 3 || req.ReplicaID != -2
				e, o, err := p.LastOffsetForLeaderEpoch(current, rp.LeaderEpoch, requireLeader)
				sp.ErrorCode = ErrorCode(err)
				if err == nil {
					sp.LeaderEpoch, sp.EndOffset = e, o
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
