package zksim

import (
	"fmt"

	"github.com/stratalog/strata/cluster"
)

type handleState int

const (
	stateConnected handleState = iota
	stateDisconnected
	stateClosed
)

// Session is one client handle: a cluster.ZK whose session is renewed
// after an expiry, as the production client's is.
type Session struct {
	srv      *Server
	chroot   string // "" or a path every call's paths are under
	client   int
	id       int64
	state    handleState
	expired  bool // the server expired the session while disconnected
	failNext bool // the next call returns ErrSessionExpired (it was in flight at the expiry)
	events   chan cluster.SessionEvent
	watches  []*watch
	queue    []Delivery
}

var _ cluster.ZK = (*Session)(nil)

// Client is the handle's number, as in Delivery.Client.
func (h *Session) Client() int { return h.client }

// SessionID is the current session's id; 0 while disconnected after an
// expiry or once closed.
func (h *Session) SessionID() int64 {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	if h.state == stateClosed || h.expired {
		return 0
	}
	return h.id
}

// Events delivers session state changes; closed by Close.
func (h *Session) Events() <-chan cluster.SessionEvent { return h.events }

// Disconnect drops the connection; the session lives on at the server
// (until ExpireSession). Calls return ErrConnectionLoss until Reconnect.
func (h *Session) Disconnect() {
	s := h.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.state != stateConnected {
		return
	}
	h.state = stateDisconnected
	s.queue(h, Delivery{Session: h.id, Event: &cluster.SessionEvent{State: cluster.SessionDisconnected, SessionID: h.id}})
	s.flush(h)
}

// Reconnect restores the connection: the same session if it still lives
// (watch events that fired meanwhile follow), else Expired, WatchLost for
// every watch, and a new session.
func (h *Session) Reconnect() {
	s := h.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.state != stateDisconnected {
		return
	}
	h.state = stateConnected
	if h.expired {
		h.expired = false
		s.renew(h, h.id)
	} else {
		s.queue(h, Delivery{Session: h.id, Event: &cluster.SessionEvent{State: cluster.SessionConnected, SessionID: h.id}})
	}
	s.flush(h)
}

// Close ends the session at once: its ephemerals go, its watches report
// WatchLost, Events is closed, later calls return ErrClosed.
func (h *Session) Close() {
	s := h.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.state == stateClosed {
		return
	}
	if !h.expired && s.live[h.id] == h {
		s.endSession(h.id)
	}
	s.loseWatches(h)
	h.state = stateClosed
	s.deliver(h, 0, true)
	h.queue = nil
	close(h.events)
	s.flushAll()
}

// begin starts a call: it delivers what is queued for h, refuses calls
// while closed, disconnected or just expired, and asks Options.Fault. run
// reports whether the call runs; after it, end must be called with lose.
func (h *Session) begin(op, p string) (run bool, lose bool, err error) {
	s := h.srv
	s.deliver(h, 0, true) // held or not: events before the answer
	switch {
	case h.state == stateClosed:
		return false, false, fmt.Errorf("%w: %s", cluster.ErrClosed, p)
	case h.state == stateDisconnected:
		return false, false, fmt.Errorf("%w: %s: disconnected", cluster.ErrConnectionLoss, p)
	case h.failNext:
		h.failNext = false
		return false, false, fmt.Errorf("%w: %s", cluster.ErrSessionExpired, p)
	}
	if s.opts.Fault != nil {
		switch s.opts.Fault(Call{Session: h.id, Op: op, Path: p}) {
		case LoseRequest:
			h.bounce()
			return false, false, fmt.Errorf("%w: %s: request lost", cluster.ErrConnectionLoss, p)
		case LoseResponse:
			return true, true, nil
		}
	}
	return true, false, nil
}

// end finishes a call that ran: commits its watch triggers, and for a lost
// response drops the connection and turns the answer into
// ErrConnectionLoss.
func (h *Session) end(p string, lose bool, err error) error {
	s := h.srv
	s.dispatch(err)
	if lose {
		h.bounce()
		err = fmt.Errorf("%w: %s: response lost", cluster.ErrConnectionLoss, p)
	}
	s.flushAll()
	return err
}

// bounce is a dropped connection that comes back at once (same session).
func (h *Session) bounce() {
	s := h.srv
	s.queue(h, Delivery{Session: h.id, Event: &cluster.SessionEvent{State: cluster.SessionDisconnected, SessionID: h.id}})
	s.queue(h, Delivery{Session: h.id, Event: &cluster.SessionEvent{State: cluster.SessionConnected, SessionID: h.id}})
}

// full is p inside the handle's chroot.
func (h *Session) full(p string) string {
	switch {
	case h.chroot == "":
		return p
	case p == "/":
		return h.chroot
	}
	return h.chroot + p
}

// rel is a full path as the handle names it.
func (h *Session) rel(p string) string {
	if h.chroot == "" {
		return p
	}
	if r := p[len(h.chroot):]; r != "" {
		return r
	}
	return "/"
}
