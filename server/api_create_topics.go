package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleCreateTopics answers CreateTopics v0-7. Replication factor must be 1
// (or -1: the default); a manual assignment must place every replica on this
// node. Topic configs are checked (unknown names and bad values are
// INVALID_CONFIG; see configdefs.go) and stored with the topic; v5+ reports
// the new topic's effective configs.
func (s *Server) handleCreateTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	if s.cl != nil {
		return s.handleCreateTopicsCluster(req)
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Default()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		code, msg, t := s.createTopic(req, &rt, seen[rt.Topic] > 1)
		st.ErrorCode = code
		if code != 0 && req.Version >= 1 && msg != "" {
			m := msg
			st.ErrorMessage = &m
		}
		if code == 0 {
			n := rt.NumPartitions
			if len(rt.ReplicaAssignment) > 0 {
				n = int32(len(rt.ReplicaAssignment))
			} else if n == -1 {
				n = s.cfg.NumPartitions
			}
			st.NumPartitions, st.ReplicationFactor = n, 1
			st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
			if t != nil {
				st.TopicID = t.id
			}
			if req.Version >= 5 {
				st.Configs = s.createdTopicConfigs(rt.Configs)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) createTopic(req *kmsg.CreateTopicsRequest, rt *kmsg.CreateTopicsRequestTopic, dup bool) (int16, string, *topic) {
	if dup {
		return kerr.InvalidRequest.Code, "topic named more than once in the request", nil
	}
	if err := validateTopicName(rt.Topic); err != nil {
		return kerr.InvalidTopicException.Code, err.Error(), nil
	}
	n := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if n != -1 || rt.ReplicationFactor != -1 {
			return kerr.InvalidRequest.Code, "both a replica assignment and partitions/replication factor", nil
		}
		for _, a := range rt.ReplicaAssignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != s.cfg.NodeID {
				return kerr.InvalidReplicaAssignment.Code, "a single node can only place one replica on itself", nil
			}
		}
		n = int32(len(rt.ReplicaAssignment))
	} else {
		if n == -1 && req.Version >= 4 {
			n = s.cfg.NumPartitions
		}
		if n <= 0 {
			return kerr.InvalidPartitions.Code, "number of partitions must be positive", nil
		}
		if rf := rt.ReplicationFactor; rf != 1 && !(rf == -1 && req.Version >= 4) {
			return kerr.InvalidReplicationFactor.Code, "replication factor must be 1 on a single node", nil
		}
	}
	if code, msg := s.checkPartitionCount(n); code != 0 {
		return code, msg, nil
	}
	var configs map[string]string
	for _, c := range rt.Configs {
		if configs == nil {
			configs = map[string]string{}
		}
		if c.Value == nil {
			return kerr.InvalidConfig.Code, "null value for config " + c.Name, nil
		}
		configs[c.Name] = *c.Value
	}
	t, err := s.topics.create(rt.Topic, n, configs, req.ValidateOnly)
	switch {
	case errors.Is(err, errTopicExists):
		return kerr.TopicAlreadyExists.Code, "topic " + rt.Topic + " already exists", nil
	case errors.Is(err, ErrConfig):
		return kerr.InvalidConfig.Code, err.Error(), nil
	case errors.Is(err, ErrInvalidTopic):
		return kerr.InvalidTopicException.Code, err.Error(), nil
	case err != nil:
		s.log.Error("creating topic", "topic", rt.Topic, "error", err)
		return kerr.UnknownServerError.Code, "creating topic failed", nil
	}
	return 0, "", t
}

// createdTopicConfigs is the v5+ CreateTopics report of the new topic's
// configs: each config strata applies, with its override or broker default.
func (s *Server) createdTopicConfigs(given []kmsg.CreateTopicsRequestTopicConfig) []kmsg.CreateTopicsResponseTopicConfig {
	overrides := map[string]string{}
	for _, c := range given {
		if c.Value != nil {
			overrides[c.Name] = *c.Value
		}
	}
	entries := s.topicConfigEntries(overrides)
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.def.name, kmsg.StringPtr(e.value), int8(e.source)
		out = append(out, c)
	}
	return out
}
