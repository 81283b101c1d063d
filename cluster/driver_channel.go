package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/stratalog/strata/internal/kwire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// channelManager carries the controller's requests to the brokers (Kafka's
// ControllerChannelManager): per live broker one kwire connection and an
// ordered queue, served by one goroutine that sends a request, waits for
// its response (at most controller.socket.timeout.ms) and sends the next.
// A failed exchange closes the connection and is tried again after a
// backoff, until it is answered or the broker's queue is dropped (the
// broker died or bounced, or the controller resigned): then every request
// left gets its RequestResult with an error.
type channelManager struct {
	self     int32
	listener string // inter.broker.listener.name
	timeout  time.Duration
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	security kwire.Security
	result   func(RequestResult)
	log      *slog.Logger

	mu     sync.Mutex
	queues map[int32]*brokerQueue
	closed bool
	wg     sync.WaitGroup
}

// errBrokerGone is the RequestResult error of a request whose broker's
// queue was dropped.
var errBrokerGone = errors.New("cluster: request dropped: the broker is gone or the controller resigned")

type brokerQueue struct {
	id    int32
	epoch int64
	addr  string // "" when the broker has no usable endpoint

	mu     sync.Mutex
	reqs   []Request
	stop   bool
	wake   chan struct{} // 1-buffered
	stopCh chan struct{} // closed by drop
	done   chan struct{} // closed when the goroutine stopped
}

// endpointAddr is host:port of b's endpoint on listener (else its first
// endpoint, as the Controller's live_leaders), "" when it has none.
func endpointAddr(b *Broker, listener string) string {
	var e *Endpoint
	for i := range b.Endpoints {
		if b.Endpoints[i].Listener == listener {
			e = &b.Endpoints[i]
			break
		}
	}
	if e == nil && len(b.Endpoints) > 0 {
		e = &b.Endpoints[0]
	}
	if e == nil {
		return ""
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// setBrokers keeps the queues of brokers listed with the same epoch and
// address, replaces those that changed and drops the others.
func (m *channelManager) setBrokers(bs []Broker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	listed := make(map[int32]bool, len(bs))
	for i := range bs {
		b := &bs[i]
		listed[b.ID] = true
		addr := endpointAddr(b, m.listener)
		q := m.queues[b.ID]
		if q != nil && q.epoch == b.Epoch && q.addr == addr {
			continue
		}
		if q != nil {
			q.drop()
		}
		q = &brokerQueue{id: b.ID, epoch: b.Epoch, addr: addr, wake: make(chan struct{}, 1),
			stopCh: make(chan struct{}), done: make(chan struct{})}
		m.queues[b.ID] = q
		m.wg.Add(1)
		go m.serve(q)
	}
	for id, q := range m.queues {
		if !listed[id] {
			q.drop()
			delete(m.queues, id)
		}
	}
}

// send queues requests on their brokers' queues; one for a broker without
// a queue gets its error result at once.
func (m *channelManager) send(reqs []Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range reqs {
		q := m.queues[r.Broker]
		if q == nil || !q.push(r) {
			m.result(RequestResult{Request: r.ID, Err: fmt.Errorf("%w: broker %d", errBrokerGone, r.Broker)})
		}
	}
}

// stopAll drops every queue.
func (m *channelManager) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, q := range m.queues {
		q.drop()
		delete(m.queues, id)
	}
}

// close drops every queue and waits for their goroutines.
func (m *channelManager) close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.stopAll()
	m.wg.Wait()
}

func (q *brokerQueue) push(r Request) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop {
		return false
	}
	q.reqs = append(q.reqs, r)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *brokerQueue) drop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.stop {
		q.stop = true
		close(q.stopCh)
	}
}

// next waits for the queue's first request (left in place until done);
// false once dropped.
func (q *brokerQueue) next() (Request, bool) {
	for {
		q.mu.Lock()
		if q.stop {
			q.mu.Unlock()
			return Request{}, false
		}
		if len(q.reqs) > 0 {
			r := q.reqs[0]
			q.mu.Unlock()
			return r, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-q.stopCh:
		}
	}
}

func (q *brokerQueue) done1() {
	q.mu.Lock()
	q.reqs[0] = Request{}
	q.reqs = q.reqs[1:]
	q.mu.Unlock()
}

func (q *brokerQueue) stopped() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stop
}

// serve is a broker queue's goroutine (Kafka's RequestSendThread).
func (m *channelManager) serve(q *brokerQueue) {
	defer m.wg.Done()
	defer close(q.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a drop interrupts a request in progress
		select {
		case <-q.stopCh:
			cancel()
		case <-q.done:
		}
	}()
	var conn *kwire.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
		q.mu.Lock()
		left := q.reqs
		q.reqs = nil
		q.mu.Unlock()
		for _, r := range left {
			m.result(RequestResult{Request: r.ID, Err: fmt.Errorf("%w: broker %d", errBrokerGone, q.id)})
		}
	}()
	backoff := 100 * time.Millisecond
	for {
		r, ok := q.next()
		if !ok {
			return
		}
		if q.addr == "" {
			m.log.Error("controller: broker has no endpoint to send to", "broker", q.id)
			q.done1()
			m.result(RequestResult{Request: r.ID, Err: fmt.Errorf("cluster: broker %d has no endpoint", q.id)})
			continue
		}
		var err error
		if conn == nil {
			dctx, dcancel := context.WithTimeout(ctx, m.timeout)
			conn, err = kwire.Dial(dctx, q.addr, kwire.Options{ClientID: fmt.Sprintf("controller-%d-to-broker-%d", m.self, q.id),
				DialTimeout: m.timeout, Dial: m.dial, Security: m.security})
			dcancel()
		}
		var resp kmsg.Response
		if err == nil {
			rctx, rcancel := context.WithTimeout(ctx, m.timeout)
			resp, err = conn.Request(rctx, r.Msg)
			rcancel()
		}
		if err != nil {
			if conn != nil {
				conn.Close()
				conn = nil
			}
			if q.stopped() {
				return
			}
			m.log.Warn("controller: request to broker failed: retrying", "broker", q.id, "addr", q.addr,
				"request", kmsg.NameForKey(r.Msg.Key()), "after", backoff, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		q.done1()
		m.result(RequestResult{Request: r.ID, Resp: resp})
	}
}
