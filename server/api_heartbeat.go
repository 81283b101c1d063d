package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleHeartbeat answers Heartbeat v0-4: NONE, REBALANCE_IN_PROGRESS while
// the group prepares a rebalance (the member must rejoin),
// ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID.
func (s *Server) handleHeartbeat(r *kmsg.HeartbeatRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	if resp.ErrorCode = s.groups.groupCheck(r.Group); resp.ErrorCode != 0 {
		return resp
	}
	g := s.groups.lockGroup(r.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	resp.ErrorCode = g.heartbeat(r)
	g.mu.Unlock()
	return resp
}
