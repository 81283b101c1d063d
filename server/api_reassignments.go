package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments (key 45) and ListPartitionReassignments (key
// 46), cluster mode only: handed to the controller like ElectLeaders
// (api_controller_requests.go); NOT_CONTROLLER from other brokers.

func (s *Server) handleAlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	ctx, cancel := s.cl.controllerCall()
	defer cancel()
	resp, err := s.cl.mem.AlterPartitionReassignments(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = controllerErrorCode(ctx)
	}
	return resp
}

func (s *Server) handleListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	ctx, cancel := s.cl.controllerCall()
	defer cancel()
	resp, err := s.cl.mem.ListPartitionReassignments(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = controllerErrorCode(ctx)
	}
	return resp
}
