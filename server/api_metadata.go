package server

import (
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleMetadata answers Metadata v0-11: this node as the only broker and
// controller, and the requested topics (all of them for a null list, or an
// empty one at v0), auto-creating unknown ones when allowed.
func (s *Server) handleMetadata(listener string, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Default()
	b := kmsg.NewMetadataResponseBroker()
	ep := s.endpoint(listener)
	b.NodeID, b.Host, b.Port = s.cfg.NodeID, ep.Host, ep.Port
	resp.Brokers = append(resp.Brokers, b)
	id := s.topics.clusterID
	resp.ClusterID = &id
	resp.ControllerID = s.cfg.NodeID
	resp.AuthorizedOperations = math.MinInt32

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range s.topics.all() {
			resp.Topics = append(resp.Topics, s.metadataTopic(t.name, t, 0))
		}
		return resp
	}
	autoCreate := s.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		t := s.topics.get(name)
		var code int16
		if t == nil {
			switch {
			case validateTopicName(name) != nil:
				code = kerr.InvalidTopicException.Code
			case !autoCreate:
				code = kerr.UnknownTopicOrPartition.Code
			default:
				var err error
				t, err = s.autoCreate(name)
				if err != nil {
					code = kerr.UnknownServerError.Code
				}
			}
		}
		resp.Topics = append(resp.Topics, s.metadataTopic(name, t, code))
	}
	return resp
}

// autoCreate creates a topic with the broker defaults (a concurrent creation
// of the same topic is not an error).
func (s *Server) autoCreate(name string) (*topic, error) {
	if name == OffsetsTopic { // created with its own settings
		return s.groups.ensureTopic()
	}
	t, err := s.topics.create(name, s.cfg.NumPartitions, nil, false)
	if errors.Is(err, errTopicExists) {
		return t, nil
	}
	if err != nil {
		s.log.Error("auto-creating topic", "topic", name, "error", err)
		return nil, err
	}
	return t, nil
}

func (s *Server) metadataTopic(name string, t *topic, code int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	n := name
	mt.Topic = &n
	mt.ErrorCode = code
	if t == nil {
		return mt
	}
	mt.TopicID = t.id
	mt.IsInternal = t.name == OffsetsTopic
	for _, p := range s.topics.parts(t) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		mp.Leader = s.cfg.NodeID
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{s.cfg.NodeID}
		mp.ISR = []int32{s.cfg.NodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
