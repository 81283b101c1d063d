package replica

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProduceWait is what an acks=-1 produce waits for (Kafka's DelayedProduce
// for one partition): the high watermark reaching Required while this
// leadership lasts.
type ProduceWait struct {
	// Required is the last appended offset + 1.
	Required int64
	// Deadline (milliseconds) is when the wait times out: the produce
	// request's timeout_ms after it arrived.
	Deadline int64
	// MinISR is min.insync.replicas at the append.
	MinISR int
	gen    uint64 // the leadership the append happened in
}

// AckStatus is the outcome of an acks=-1 wait.
type AckStatus uint8

// Outcomes of PollProduce.
const (
	// AckPending: keep waiting (sleep on HWChanged, or until the deadline).
	AckPending AckStatus = iota
	// AckCommitted: the high watermark passed the batch with at least
	// MinISR replicas in the ISR.
	AckCommitted
	// AckNotEnoughReplicasAfterAppend: the high watermark passed the batch
	// but the ISR shrank below MinISR meanwhile; the records stay in the
	// log (a retry may duplicate them).
	AckNotEnoughReplicasAfterAppend
	// AckTimedOut: the deadline passed first (REQUEST_TIMED_OUT).
	AckTimedOut
	// AckNotLeader: leadership was lost since the append, whatever happens
	// to the high watermark later (NOT_LEADER_OR_FOLLOWER): the batch may
	// have been truncated and its offsets reused.
	AckNotLeader
)

// ErrorCode is the produce response's error code for s (0 for committed;
// meaningless for pending).
func (s AckStatus) ErrorCode() int16 {
	switch s {
	case AckNotEnoughReplicasAfterAppend:
		return kerr.NotEnoughReplicasAfterAppend.Code
	case AckTimedOut:
		return kerr.RequestTimedOut.Code
	case AckNotLeader:
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

func (s AckStatus) String() string {
	switch s {
	case AckCommitted:
		return "committed"
	case AckNotEnoughReplicasAfterAppend:
		return "not enough replicas after append"
	case AckTimedOut:
		return "timed out"
	case AckNotLeader:
		return "not leader"
	}
	return "pending"
}

// PollProduce tells where an acks=-1 wait stands at now, in Kafka's order:
// leadership lost, then the high watermark (with the maximal ISR's size
// against MinISR), then the deadline.
func (p *Partition) PollProduce(w *ProduceWait, now int64) AckStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.role != RoleLeader || p.gen != w.gen:
		return AckNotLeader
	case p.hw >= w.Required && p.log.HighWatermark() >= w.Required:
		if len(p.isr.maximal()) >= w.MinISR {
			return AckCommitted
		}
		return AckNotEnoughReplicasAfterAppend
	case now >= w.Deadline:
		return AckTimedOut
	}
	return AckPending
}

// Await blocks until w is decided (the produce path's wait: one goroutine per
// request, which it already has, none per record): it sleeps on the
// partition's high-watermark notification and a timer for the deadline, and
// returns AckTimedOut early if ctx ends. now gives the clock in
// milliseconds.
func Await(ctx context.Context, p *Partition, w *ProduceWait, now func() int64) AckStatus {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ch := p.HWChanged() // before the poll: a change after it closes ch
		t := now()
		if s := p.PollProduce(w, t); s != AckPending {
			return s
		}
		d := time.Duration(w.Deadline-t) * time.Millisecond
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ch:
		case <-timer.C:
		case <-ctx.Done():
			return AckTimedOut
		}
	}
}
