package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDeleteGroups answers DeleteGroups v0-2: an Empty group's offsets and
// metadata are tombstoned and the group removed; a group with members is
// NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND.
func (s *Server) handleDeleteGroups(r *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range r.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		dg.ErrorCode = s.deleteGroup(id)
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (s *Server) deleteGroup(id string) int16 {
	if code := s.groups.groupCheck(id); code != 0 {
		return code
	}
	g := s.groups.lockGroup(id, false)
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	defer g.mu.Unlock()
	if g.state != groupEmpty {
		return kerr.NonEmptyGroup.Code
	}
	tps := make([]topicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	if code := s.groups.deleteOffsets(g, tps, true); code != 0 {
		return code
	}
	g.setState(groupDead)
	s.groups.remove(g)
	s.log.Info("group deleted", "group", id, "offsets", len(tps))
	return 0
}

// handleOffsetDelete answers OffsetDelete v0: committed offsets of an Empty
// group, or of topics its consumer members do not subscribe to, are
// tombstoned; partitions of a subscribed topic get
// GROUP_SUBSCRIBED_TO_TOPIC.
func (s *Server) handleOffsetDelete(r *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if resp.ErrorCode = s.groups.groupCheck(r.Group); resp.ErrorCode != 0 {
		return resp
	}
	g := s.groups.lockGroup(r.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	defer g.mu.Unlock()
	if g.state != groupEmpty && g.protocolType != "consumer" {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp
	}
	subscribed := g.subscribedTopics()
	var tps []topicPartition
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case subscribed[rt.Topic]:
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			case !s.partitionKnown(rt.Topic, rp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				tps = append(tps, topicPartition{rt.Topic, rp.Partition})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if code := s.groups.deleteOffsets(g, tps, false); code != 0 {
		resp.ErrorCode = code
	}
	return resp
}

// subscribedTopics are the topics the consumer members of g subscribe to,
// from their ConsumerMemberMetadata (g.mu held).
func (g *group) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	if g.state == groupEmpty || g.protocolType != "consumer" {
		return out
	}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if md.ReadFrom(m.metadataFor(g.protocol)) != nil {
			continue
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out
}
