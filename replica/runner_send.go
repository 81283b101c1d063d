package replica

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kwire"
)

// sendListOffsets sends a follower's ListOffsets (rare: a fetch out of
// range) on a connection of its own, closed after, and hands the outcome
// back.
func (r *Runner) sendListOffsets(l ListOffsetsRequest) {
	defer r.wg.Done()
	resp, err := r.listOffsets(l)
	if err != nil && r.ctx.Err() == nil {
		r.log.Warn("ListOffsets to leader failed", "leader", l.Broker, "err", err)
	}
	r.m.ListOffsetsResponse(l.Broker, l.Req, resp, err, r.o.Now())
}

func (r *Runner) listOffsets(l ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	addr, ok := r.o.Resolve(l.Broker)
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrNoEndpoint, l.Broker)
	}
	ctx, cancel := r.requestCtx()
	defer cancel()
	c, err := r.dial(ctx, addr, r.clientID(""), false)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	resp, err := c.Request(ctx, l.Req)
	if err != nil {
		return nil, err
	}
	lr, ok := resp.(*kmsg.ListOffsetsResponse)
	if !ok {
		return nil, fmt.Errorf("%w: ListOffsets answered by another response kind", kwire.ErrBadFrame)
	}
	return lr, nil
}

// alterBackoff remembers a controller that failed the last AlterPartition
// (no answer, a top-level error, or NOT_CONTROLLER for a partition): the
// next request waits until the controller changes, or until a backoff
// doubling from the Manager's AlterPartitionRetryMs up to maxAlterBackoffMs
// passes (the same controller may be reloading, or the broker epoch it
// knows may lag).
type alterBackoff struct {
	id       int32
	addr     string
	failures int
	until    int64
}

func (b *alterBackoff) fail(id int32, addr string, retryMs, now int64) {
	if b.failures == 0 || b.id != id || b.addr != addr {
		*b = alterBackoff{id: id, addr: addr}
	}
	b.failures++
	d := retryMs << min(b.failures-1, 20)
	b.until = now + min(d, max(maxAlterBackoffMs, retryMs))
}

// holds reports whether the backoff holds requests to controller (id, addr).
func (b *alterBackoff) holds(id int32, addr string, now int64) bool {
	return b.failures > 0 && b.id == id && b.addr == addr && now < b.until
}

// runAlter sends the Manager's AlterPartition requests to the controller,
// one at a time on one connection (Kafka's AlterIsrManager over its
// controller channel). With no controller known a request waits for
// ControllerChanged; after a failure it waits for a new controller or the
// backoff. Every request's outcome is handed back, Close included.
func (r *Runner) runAlter() {
	defer r.wg.Done()
	var conn *kwire.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var bo alterBackoff
	for {
		var req *kmsg.AlterPartitionRequest
		select {
		case <-r.ctx.Done():
			return // Close's sweep hands back a queued request
		case req = <-r.alterCh:
		}
		id, addr, ok := r.waitController(&bo)
		if !ok {
			r.m.AlterPartitionResponse(nil, ErrRunnerStopped, r.o.Now())
			return
		}
		if conn != nil && conn.Addr() != addr {
			conn.Close()
			conn = nil
		}
		resp, err := r.alterPartition(&conn, addr, req)
		now := r.o.Now()
		switch {
		case err != nil:
			if r.ctx.Err() == nil {
				r.log.Warn("AlterPartition to the controller failed", "controller", id, "addr", addr, "err", err)
			}
			bo.fail(id, addr, r.m.Config().AlterPartitionRetryMs, now)
		case resp.ErrorCode != 0 || notController(resp):
			r.log.Info("AlterPartition refused by the controller", "controller", id, "code", resp.ErrorCode)
			bo.fail(id, addr, r.m.Config().AlterPartitionRetryMs, now)
		default:
			bo = alterBackoff{}
		}
		r.m.AlterPartitionResponse(resp, err, now)
	}
}

// waitController returns the controller to send to once there is one the
// backoff does not hold; false when the Runner stops first.
func (r *Runner) waitController(bo *alterBackoff) (int32, string, bool) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	logged := false
	for {
		id, addr, ok := r.o.Controller()
		now := r.o.Now()
		var due <-chan time.Time
		switch {
		case !ok:
			if !logged {
				r.log.Info("no controller known: AlterPartition waits for one")
				logged = true
			}
		case bo.holds(id, addr, now):
			d := time.Duration(bo.until-now) * time.Millisecond
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			due = timer.C
		default:
			return id, addr, true
		}
		select {
		case <-r.ctx.Done():
			return 0, "", false
		case <-r.ctrlCh:
		case <-due:
		}
	}
}

// alterPartition sends req on *conn, dialling addr first if needed; an
// error closes the connection.
func (r *Runner) alterPartition(conn **kwire.Conn, addr string, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	ctx, cancel := r.requestCtx()
	defer cancel()
	if *conn == nil {
		c, err := r.dial(ctx, addr, r.clientID(""), false)
		if err != nil {
			return nil, err
		}
		*conn = c
	}
	resp, err := (*conn).Request(ctx, req)
	if err == nil {
		if ar, ok := resp.(*kmsg.AlterPartitionResponse); ok {
			return ar, nil
		}
		err = fmt.Errorf("%w: AlterPartition answered by another response kind", kwire.ErrBadFrame)
	}
	(*conn).Close()
	*conn = nil
	return nil, err
}

// notController reports a partition answered NOT_CONTROLLER: the
// controller's view is older than the sender's (a newer controller wrote
// the partition's state).
func notController(resp *kmsg.AlterPartitionResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	}
	return false
}
