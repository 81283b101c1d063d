package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleFindCoordinator answers FindCoordinator v0-4: this node coordinates
// every group (v4 batches keys). The offsets topic is created on the first
// group lookup, as Kafka does; __transaction_state on the first
// transactional id's (key type 1). Other key types are INVALID_REQUEST.
func (s *Server) handleFindCoordinator(listener string, r *kmsg.FindCoordinatorRequest) kmsg.Response {
	ep := s.endpoint(listener)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	lookup := func(key string) (int16, string) {
		switch {
		case r.CoordinatorType == 1:
			return s.txns.findCoordinator(key)
		case r.CoordinatorType != 0:
			return kerr.InvalidRequest.Code, "unknown coordinator key type"
		case key == "":
			return kerr.InvalidRequest.Code, "empty group id"
		}
		if _, err := s.groups.ensureTopic(); err != nil {
			return kerr.CoordinatorNotAvailable.Code, "the offsets topic cannot be created"
		}
		return 0, ""
	}
	if r.Version >= 4 {
		for _, key := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = key
			c.ErrorCode, c.NodeID, c.Host, c.Port = 0, s.cfg.NodeID, ep.Host, ep.Port
			if code, msg := lookup(key); code != 0 {
				c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port = code, &msg, -1, "", -1
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
	resp.NodeID, resp.Host, resp.Port = s.cfg.NodeID, ep.Host, ep.Port
	if code, msg := lookup(r.CoordinatorKey); code != 0 {
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, -1, "", -1
		resp.ErrorMessage = &msg
	}
	return resp
}
