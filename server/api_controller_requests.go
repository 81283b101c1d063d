package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The requests to the controller (cluster mode): ControlledShutdown (key 7)
// from a stopping broker, AlterPartition (key 56) from leaders changing
// their ISR, ElectLeaders (key 43) from tools. Each is handed to the
// member's entry point, which blocks until the controller answers (at most
// controller.socket.timeout.ms); a broker that is not the controller
// answers NOT_CONTROLLER, as Kafka's, and the sender looks the controller up
// again.

// controllerCall bounds a call into the controller.
func (cl *clusterNode) controllerCall() (context.Context, context.CancelFunc) {
	return context.WithTimeout(cl.ctx, time.Duration(cl.cfg.Cluster.ControllerSocketTimeoutMs)*time.Millisecond)
}

// controllerErrorCode maps a failed entry point call: NOT_CONTROLLER when
// this broker stopped being (or shuts down), REQUEST_TIMED_OUT when the
// controller did not answer in time.
func controllerErrorCode(ctx context.Context) int16 {
	if ctx.Err() == context.DeadlineExceeded {
		return kerr.RequestTimedOut.Code
	}
	return kerr.NotController.Code
}

func (s *Server) handleControlledShutdown(req *kmsg.ControlledShutdownRequest) kmsg.Response {
	ctx, cancel := s.cl.controllerCall()
	defer cancel()
	resp, err := s.cl.mem.ControlledShutdown(ctx, req)
	if err != nil {
		s.log.Info("controlled shutdown request not answered", "broker", req.BrokerID, "error", err)
		resp = req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = controllerErrorCode(ctx)
	}
	return resp
}

func (s *Server) handleAlterPartition(req *kmsg.AlterPartitionRequest) kmsg.Response {
	ctx, cancel := s.cl.controllerCall()
	defer cancel()
	resp, err := s.cl.mem.AlterPartition(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = controllerErrorCode(ctx)
	}
	return resp
}

func (s *Server) handleElectLeaders(req *kmsg.ElectLeadersRequest) kmsg.Response {
	ctx, cancel := s.cl.controllerCall()
	defer cancel()
	resp, err := s.cl.mem.ElectLeaders(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = controllerErrorCode(ctx)
	}
	return resp
}
