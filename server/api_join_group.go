package server

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleJoinGroup answers JoinGroup v0-7. The request is parked until the
// rebalance completes (the connection serves nothing else meanwhile, as
// Kafka mutes it); broker shutdown releases it with
// COORDINATOR_NOT_AVAILABLE.
func (s *Server) handleJoinGroup(c *conn, h *reqHeader, r *kmsg.JoinGroupRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	fill := func(res joinResult) kmsg.Response {
		resp.ErrorCode, resp.Generation, resp.LeaderID, resp.MemberID = res.code, res.generation, res.leader, res.memberID
		if res.code != 0 {
			resp.Generation = -1
			if resp.Version >= 7 {
				resp.ProtocolType = nil
			}
			return resp
		}
		p := res.protocol
		resp.Protocol = &p
		if resp.Version >= 7 {
			pt := res.protocolType
			resp.ProtocolType = &pt
		}
		resp.Members = res.members
		if resp.Members == nil {
			resp.Members = []kmsg.JoinGroupResponseMember{}
		}
		return resp
	}
	if code := s.groups.groupCheck(r.Group); code != 0 {
		return fill(joinResult{code: code, memberID: r.MemberID})
	}
	g := s.groups.lockGroup(r.Group, r.MemberID == "")
	if g == nil {
		if s.groups.isClosed() {
			return fill(joinResult{code: kerr.CoordinatorNotAvailable.Code, memberID: r.MemberID})
		}
		return fill(joinResult{code: kerr.UnknownMemberID.Code, memberID: r.MemberID})
	}
	res, wait := g.join(r, h.clientID, clientHost(c))
	if wait == nil && res.code != 0 {
		s.groups.dropIfUnused(g)
	}
	g.mu.Unlock()
	if wait != nil {
		c.quotaParked(func() {
			res = awaitGroup(res, wait, s.done, joinResult{code: kerr.CoordinatorNotAvailable.Code, memberID: r.MemberID})
		})
	}
	return fill(res)
}

// awaitGroup returns res when the request completed at once (wait nil);
// otherwise it waits for the rebalance to deliver the result, or for the
// broker's shutdown, which answers closing.
func awaitGroup[T any](res T, wait <-chan T, done <-chan struct{}, closing T) T {
	if wait == nil {
		return res
	}
	select {
	case res = <-wait:
		return res
	case <-done:
		return closing
	}
}

// clientHost is the peer address as Kafka prints it ("/127.0.0.1").
func clientHost(c *conn) string {
	a := c.nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		a = h
	}
	return "/" + a
}
