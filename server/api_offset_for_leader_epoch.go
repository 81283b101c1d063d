package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handleOffsetForLeaderEpoch answers OffsetForLeaderEpoch v0-4 (cluster
// mode; key 23): for each partition the largest leader epoch at or below
// the asked one and where it ends in the leader's log (KIP-101, KIP-279),
// after KIP-320's check of current_leader_epoch; from the leader only (the
// debug replica id -2 may ask a follower).
func (s *Server) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	return s.cl.rm.HandleOffsetForLeaderEpoch(req)
}
