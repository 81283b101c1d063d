package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller's request entry points, for the broker's API handlers of
// AlterPartition (key 56), ControlledShutdown (key 7) and ElectLeaders
// (key 43). Each blocks until the controller's answer or until ctx ends;
// a broker that is not the controller answers NOT_CONTROLLER at once, as
// Kafka's does (the sender looks up the controller and retries there).

// AlterPartition hands a leader's ISR change to the controller.
func (m *Member) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp, err := m.control(ctx, func(id uint64) Event { return AlterPartition{ID: id, Req: req} })
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.AlterPartitionResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: AlterPartition answered with %T", resp)
	}
	return r, nil
}

// ControlledShutdown hands a stopping broker's request to the controller.
func (m *Member) ControlledShutdown(ctx context.Context, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	resp, err := m.control(ctx, func(id uint64) Event { return ControlledShutdown{ID: id, Req: req} })
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.ControlledShutdownResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: ControlledShutdown answered with %T", resp)
	}
	return r, nil
}

// ElectLeaders hands a preferred or unclean election request to the
// controller.
func (m *Member) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	resp, err := m.control(ctx, func(id uint64) Event { return ElectLeaders{ID: id, Req: req} })
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.ElectLeadersResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: ElectLeaders answered with %T", resp)
	}
	return r, nil
}

// control steps the event mk(id) on the controller and waits for its
// reply.
func (m *Member) control(ctx context.Context, mk func(id uint64) Event) (kmsg.Response, error) {
	select {
	case <-m.closed:
		return nil, ErrMemberClosed
	default:
	}
	id := m.reqID.Add(1)
	if !m.active.Load() {
		m.idleMu.Lock()
		m.idleCtrl.Step(mk(id))
		rd := m.idleCtrl.Ready()
		m.idleMu.Unlock()
		for _, r := range rd.Replies {
			if r.ID == id {
				return r.Msg, nil
			}
		}
	}
	ch := make(chan kmsg.Response, 1)
	m.wmu.Lock()
	m.waiters[id] = ch
	m.wmu.Unlock()
	forget := func() {
		m.wmu.Lock()
		delete(m.waiters, id)
		m.wmu.Unlock()
	}
	if !m.q.push(driverEvent{kind: evControl, ctrl: mk(id)}) {
		forget()
		return nil, ErrMemberClosed
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-m.closed:
		forget()
		return nil, ErrMemberClosed
	}
}

// ReportLogDirFailure tells the controller that one of this broker's log
// dirs failed (Kafka's propagateLogDirEvent): it creates
// /log_dir_event_notification/log_dir_event_N with {"version":1,"broker":N,"event":1}.
// It returns at once; the write is retried in the background while
// ZooKeeper is unreachable, until it is done or the Member closes.
func (m *Member) ReportLogDirFailure() {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	select {
	case <-m.closed:
		return
	default:
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		backoff := 100 * time.Millisecond
		for {
			p, err := m.zk.Create(LogDirEventCreatePath(), EncodeLogDirEvent(m.id), PersistentSequential)
			if err == nil {
				m.log.Warn("reported a log dir failure to the controller", "znode", p)
				return
			}
			if errors.Is(err, ErrClosed) {
				return
			}
			m.log.Warn("reporting a log dir failure: retrying", "after", backoff, "error", err)
			select {
			case <-m.closed:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}()
}
