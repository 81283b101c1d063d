package cluster

import "sync"

// sessionEvents is an unbounded, ordered queue of session events in front of
// a channel: the producer (go-zookeeper's event callback) never blocks, and
// a slow reader loses nothing. After close the channel is closed and what
// was not read is dropped.
type sessionEvents struct {
	out  chan SessionEvent
	mu   sync.Mutex
	q    []SessionEvent
	wake chan struct{} // 1-buffered: something was queued
	done chan struct{}
	once sync.Once
}

func newSessionEvents() *sessionEvents {
	e := &sessionEvents{out: make(chan SessionEvent), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go e.pump()
	return e
}

func (e *sessionEvents) push(ev SessionEvent) {
	e.mu.Lock()
	e.q = append(e.q, ev)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *sessionEvents) close() { e.once.Do(func() { close(e.done) }) }

func (e *sessionEvents) pump() {
	defer close(e.out)
	for {
		e.mu.Lock()
		var ev SessionEvent
		have := len(e.q) > 0
		if have {
			ev = e.q[0]
			e.q = e.q[1:]
		}
		e.mu.Unlock()
		if !have {
			select {
			case <-e.wake:
				continue
			case <-e.done:
				return
			}
		}
		select {
		case e.out <- ev:
		case <-e.done:
			return
		}
	}
}
