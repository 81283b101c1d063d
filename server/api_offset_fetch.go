package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetFetch answers OffsetFetch v1-8: committed offsets of the
// requested partitions (offset -1 and empty metadata when none), or of every
// partition the group committed when topics is null (v2+); v8 batches
// groups. A group whose offsets partition is still loading answers
// COORDINATOR_LOAD_IN_PROGRESS (per partition before v2).
func (s *Server) handleOffsetFetch(r *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			req := make([]kmsg.OffsetFetchRequestTopic, 0, len(rg.Topics))
			for _, t := range rg.Topics {
				req = append(req, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
			if rg.Topics == nil {
				req = nil
			}
			topics, code := s.fetchOffsets(rg.Group, req)
			sg.ErrorCode = code
			for _, t := range topics {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.Topic
				for _, p := range t.Partitions {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					gt.Partitions = append(gt.Partitions, gp)
				}
				sg.Topics = append(sg.Topics, gt)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	}
	topics, code := s.fetchOffsets(r.Group, r.Topics)
	resp.Topics = topics
	if r.Version >= 2 {
		resp.ErrorCode = code
	} else if code != 0 {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return resp
}

// fetchOffsets looks up committed offsets; a null topic list means all.
func (s *Server) fetchOffsets(groupID string, req []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, int16) {
	code := s.groups.groupCheck(groupID)
	var g *group
	if code == 0 {
		g = s.groups.lockGroup(groupID, false)
	}
	if g != nil {
		defer g.mu.Unlock()
	}
	part := func(tp topicPartition) kmsg.OffsetFetchResponseTopicPartition {
		p := kmsg.NewOffsetFetchResponseTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = tp.partition, -1, -1
		empty := ""
		p.Metadata = &empty
		if g != nil {
			if e, ok := g.offsets[tp]; ok {
				md := e.metadata
				p.Offset, p.LeaderEpoch, p.Metadata = e.offset, e.leaderEpoch, &md
			}
		}
		return p
	}
	var out []kmsg.OffsetFetchResponseTopic
	if req == nil {
		if g == nil {
			return []kmsg.OffsetFetchResponseTopic{}, code
		}
		byTopic := map[string][]int32{}
		for tp := range g.offsets {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ps := byTopic[n]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			req = append(req, kmsg.OffsetFetchRequestTopic{Topic: n, Partitions: ps})
		}
	}
	for _, rt := range req {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			t.Partitions = append(t.Partitions, part(topicPartition{rt.Topic, p}))
		}
		out = append(out, t)
	}
	return out, code
}
