package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSyncGroup answers SyncGroup v0-5. Followers are parked until the
// leader's assignment arrives; broker shutdown releases them with
// COORDINATOR_NOT_AVAILABLE.
func (s *Server) handleSyncGroup(c *conn, r *kmsg.SyncGroupRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	fill := func(res syncResult) kmsg.Response {
		resp.ErrorCode = res.code
		resp.MemberAssignment = res.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		if res.code == 0 && resp.Version >= 5 {
			pt, p := res.protocolType, res.protocol
			resp.ProtocolType, resp.Protocol = &pt, &p
		}
		return resp
	}
	if code := s.groups.groupCheck(r.Group); code != 0 {
		return fill(syncResult{code: code})
	}
	g := s.groups.lockGroup(r.Group, false)
	if g == nil {
		return fill(syncResult{code: kerr.UnknownMemberID.Code})
	}
	res, wait := g.sync(r)
	g.mu.Unlock()
	if wait != nil {
		c.quotaParked(func() { res = awaitGroup(res, wait, s.done, syncResult{code: kerr.CoordinatorNotAvailable.Code}) })
	}
	return fill(res)
}
