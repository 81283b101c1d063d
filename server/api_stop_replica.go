package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleStopReplica answers StopReplica v0-3 (cluster mode): after the
// controller request fencing (see handleLeaderAndIsr), the replica Manager
// stops each partition (a leader epoch not newer than the partition's is
// FENCED_LEADER_EPOCH; -1 and -2 always match): no produce, no fetching,
// waiting produces answered NOT_LEADER_OR_FOLLOWER; with delete, its log is
// closed and its directory renamed -delete and removed later. Offsets
// partitions stopped here unload their groups.
func (s *Server) handleStopReplica(req *kmsg.StopReplicaRequest) kmsg.Response {
	cl := s.cl
	cl.stateChangeMu.Lock()
	defer cl.stateChangeMu.Unlock()
	if code := cl.checkControlRequest("StopReplica", req.ControllerID, req.ControllerEpoch, req.BrokerEpoch); code != 0 {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = code
		return resp
	}
	cl.checkedControl(req)
	resp := cl.rm.StopReplica(req, time.Now().UnixMilli())
	cl.appendedAsLeader() // parked fetches see the stopped replicas at once
	var offsets, txns []int32
	for _, p := range resp.Partitions { // moved away or stopped: unload
		if p.ErrorCode == kerr.FencedLeaderEpoch.Code {
			continue
		}
		if p.Topic == OffsetsTopic {
			offsets = append(offsets, p.Partition)
		} else if p.Topic == TxnStateTopic {
			txns = append(txns, p.Partition)
		}
	}
	if len(offsets) > 0 {
		cl.offsetsLeadershipChanged(offsets)
	}
	if len(txns) > 0 {
		cl.txnLeadershipChanged(txns)
	}
	return resp
}
