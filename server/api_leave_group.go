package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleLeaveGroup answers LeaveGroup v0-4: one member (v0-2) or a batch of
// members by id or group.instance.id (v3+, an error per member).
func (s *Server) handleLeaveGroup(r *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode = s.groups.groupCheck(r.Group); resp.ErrorCode != 0 {
		return resp
	}
	g := s.groups.lockGroup(r.Group, false)
	if r.Version < 3 {
		if g == nil {
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return resp
		}
		resp.ErrorCode = g.leave(r.MemberID, nil)
		g.mu.Unlock()
		return resp
	}
	for _, lm := range r.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		if g == nil {
			rm.ErrorCode = kerr.UnknownMemberID.Code
		} else {
			rm.ErrorCode = g.leave(lm.MemberID, lm.InstanceID)
		}
		resp.Members = append(resp.Members, rm)
	}
	if g != nil {
		g.mu.Unlock()
	}
	return resp
}
