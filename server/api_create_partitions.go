package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleCreatePartitions answers CreatePartitions v0-3: a topic grows to
// Count partitions (never shrinks), new directories going to the log dir with
// the fewest partitions; an explicit assignment must place exactly one
// replica, this node, per new partition. __consumer_offsets cannot grow
// (INVALID_REQUEST): it would move groups away from their offsets.
func (s *Server) handleCreatePartitions(req *kmsg.CreatePartitionsRequest) kmsg.Response {
	if s.cl != nil {
		return s.handleCreatePartitionsCluster(req)
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	resp.Default()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		code, msg := s.createPartitions(req, &rt, seen[rt.Topic] > 1)
		st.ErrorCode = code
		if code != 0 && msg != "" {
			st.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) createPartitions(req *kmsg.CreatePartitionsRequest, rt *kmsg.CreatePartitionsRequestTopic, dup bool) (int16, string) {
	if dup {
		return kerr.InvalidRequest.Code, "topic named more than once in the request"
	}
	t := s.topics.get(rt.Topic)
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, "unknown topic " + rt.Topic
	}
	if rt.Topic == OffsetsTopic {
		// Groups map to a partition by hash modulo the count: a new count
		// would move groups away from their committed offsets.
		return kerr.InvalidRequest.Code, "the partition count of the internal topic " + OffsetsTopic + " cannot change"
	}
	if code, msg := s.checkPartitionCount(rt.Count); code != 0 {
		return code, msg
	}
	if cur := int32(len(s.topics.parts(t))); rt.Assignment != nil && rt.Count > cur {
		if int32(len(rt.Assignment)) != rt.Count-cur {
			return kerr.InvalidReplicaAssignment.Code, "the assignment must name a replica list for each new partition"
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != s.cfg.NodeID {
				return kerr.InvalidReplicaAssignment.Code, "a single node can only place one replica on itself"
			}
		}
	}
	err := s.topics.addPartitions(rt.Topic, rt.Count, req.ValidateOnly)
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, errUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code, "unknown topic " + rt.Topic
	case errors.Is(err, errPartitionCount):
		return kerr.InvalidPartitions.Code, err.Error()
	case errors.Is(err, ErrClosed):
		return kerr.NotController.Code, "broker shutting down"
	default:
		s.log.Error("creating partitions", "topic", rt.Topic, "error", err)
		return kerr.UnknownServerError.Code, "creating partitions failed"
	}
}
