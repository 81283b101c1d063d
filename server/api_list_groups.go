package server

import (
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleListGroups answers ListGroups v0-4 (v4 filters by state, case-
// insensitively as Kafka). Groups of partitions still loading are left out.
func (s *Server) handleListGroups(r *kmsg.ListGroupsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, g := range s.groups.sortedGroups() {
		if s.groups.groupCheck(g.id) != 0 {
			continue
		}
		g.mu.Lock()
		state, ptype := g.state, g.protocolType
		g.mu.Unlock()
		if state == groupDead || !stateWanted(r.StatesFilter, state) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState = g.id, ptype, state.String()
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

func stateWanted(filter []string, st groupState) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, st.String()) {
			return true
		}
	}
	return false
}

// handleDescribeGroups answers DescribeGroups v0-5: state, protocol and
// members (with their subscription and assignment only when Stable, as
// Kafka); an unknown group is described as Dead with no error.
func (s *Server) handleDescribeGroups(r *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range r.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group, dg.State, dg.AuthorizedOperations = id, groupDead.String(), math.MinInt32
		if dg.ErrorCode = s.groups.groupCheck(id); dg.ErrorCode != 0 {
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if g := s.groups.lockGroup(id, false); g != nil {
			dg.State, dg.ProtocolType = g.state.String(), g.protocolType
			stable := g.state == groupStable
			if stable {
				dg.Protocol = g.protocol
			}
			for _, m := range g.members {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
				dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
				if stable {
					dm.ProtocolMetadata, dm.MemberAssignment = m.metadataFor(g.protocol), m.assignment
				}
				dg.Members = append(dg.Members, dm)
			}
			g.mu.Unlock()
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}
