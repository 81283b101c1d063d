package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleUpdateMetadata answers UpdateMetadata v0-7 (cluster mode): after
// the controller request fencing (see handleLeaderAndIsr), the metadata
// cache takes the request (cluster_metadata.go): the live brokers, the
// partition states, the topic ids, the controller. A new controller is
// announced to the replica fetchers' AlterPartition sender.
func (s *Server) handleUpdateMetadata(req *kmsg.UpdateMetadataRequest) kmsg.Response {
	cl := s.cl
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	cl.stateChangeMu.Lock()
	defer cl.stateChangeMu.Unlock()
	if code := cl.checkControlRequest("UpdateMetadata", req.ControllerID, req.ControllerEpoch, req.BrokerEpoch); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	cl.checkedControl(req)
	before := cl.images.load().controllerID
	cl.images.apply(req)
	if req.ControllerID != before {
		cl.controllerChanged()
	}
	return resp
}
