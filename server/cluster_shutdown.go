package server

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// controlledShutdown is Kafka's KafkaServer.controlledShutdown, run by
// Close while the broker still serves: with controlled.shutdown.enable it
// asks the controller (ControlledShutdown v3 over the inter-broker
// listener, this broker's id and epoch) to move its leaderships away and
// take it out of the ISRs, and retries (controlled.shutdown.max.retries
// attempts, controlled.shutdown.retry.backoff.ms apart) until the
// controller answers with no partition left to move. When every attempt
// fails the broker stops anyway (Kafka's "unclean shutdown": the
// controller sees the session go and elects new leaders then).
func (cl *clusterNode) controlledShutdown() {
	cc := &cl.cfg.Cluster
	if !cc.ControlledShutdownEnable || cl.mem == nil {
		return
	}
	start := time.Now()
	for attempt := int32(1); attempt <= cc.ControlledShutdownMaxRetries; attempt++ {
		remaining, err := cl.askControlledShutdown()
		if err == nil && remaining == 0 {
			cl.log.Info("controlled shutdown succeeded", "attempt", attempt, "took", time.Since(start))
			return
		}
		if err != nil {
			cl.log.Warn("controlled shutdown attempt failed", "attempt", attempt, "error", err)
		} else {
			cl.log.Info("controlled shutdown: partitions still led here", "attempt", attempt, "remaining", remaining)
		}
		if attempt < cc.ControlledShutdownMaxRetries {
			time.Sleep(time.Duration(cc.ControlledShutdownRetryBackoffMs) * time.Millisecond)
		}
	}
	cl.log.Warn("proceeding to an unclean shutdown: every controlled shutdown attempt failed", "attempts", cc.ControlledShutdownMaxRetries)
}

// errShutdownRefused carries the controller's error code.
type errShutdownRefused int16

func (e errShutdownRefused) Error() string {
	return "the controller answered " + kerr.ErrorForCode(int16(e)).Error()
}

// askControlledShutdown sends one ControlledShutdown to the controller and
// returns how many partitions it says this broker still leads.
func (cl *clusterNode) askControlledShutdown() (int, error) {
	id, addr, ok := cl.controllerAddr()
	if !ok {
		return 0, errNoController
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cl.cfg.Cluster.ControllerSocketTimeoutMs)*time.Millisecond)
	defer cancel()
	c, err := kwire.Dial(ctx, addr, kwire.Options{ClientID: "broker-" + itoa(cl.id) + "-controlled-shutdown",
		Security: cl.security})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	req := kmsg.NewPtrControlledShutdownRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = cl.id, cl.mem.BrokerEpoch()
	resp, err := c.Request(ctx, req)
	if err != nil {
		return 0, err
	}
	r := resp.(*kmsg.ControlledShutdownResponse)
	if r.ErrorCode != 0 {
		cl.log.Info("controlled shutdown refused", "controller", id, "code", r.ErrorCode)
		return 0, errShutdownRefused(r.ErrorCode)
	}
	return len(r.PartitionsRemaining), nil
}

// errNoController: no controller is known (none elected, or this broker
// has not heard of it).
var errNoController = errors.New("server: no controller known")

func itoa(n int32) string { return strconv.Itoa(int(n)) }
